"""The sentence recipe's inputs: one input per answer sentence, its best evidence, its label."""

from __future__ import annotations

import numpy as np
import pytest
from tests.routing.detector import minilm_dir

from runner.errors import ConfigError
from runner.verifiers.detector_inputs import InputRule
from runner.verifiers.sentence_pairs import aggregate, build_pairs, example_risks

ANSWER = "Paris is the capital of France. It has two million people! The Seine flows south."
# gold: "two million" (inside sentence 2) and the last character of sentence 3's "south"
GOLD = [(ANSWER.index("two million"), ANSWER.index("two million") + 11),
        (ANSWER.index("south") + 4, ANSWER.index("south") + 5)]  # fmt: skip
FILLER = " ".join(f"Filler sentence number {k} talks about weather." for k in range(40))
CONTEXT = (
    "The Seine is a river that flows north through Paris. "
    + FILLER
    + " Paris is the capital of France and has about two million people."
)


@pytest.fixture(scope="module")
def tokenizer():
    from transformers import AutoTokenizer

    return AutoTokenizer.from_pretrained(str(minilm_dir()))


def _decode(tokenizer, ids):
    return tokenizer.decode(ids, skip_special_tokens=True)


def test_each_sentence_is_an_input_labelled_by_character_overlap_with_gold(tokenizer):
    rule = InputRule(max_length=128, include_question=False)
    pairs = build_pairs(tokenizer, rule, [""], [CONTEXT], [ANSWER], ["r1"], [GOLD])
    sentences = [ANSWER[s:e] for s, e in pairs.spans]
    assert sentences == [
        "Paris is the capital of France.",
        "It has two million people!",
        "The Seine flows south.",
    ]
    assert pairs.labels.tolist() == [0, 1, 1]  # one shared character is enough
    assert pairs.example_of.tolist() == [0, 0, 0]
    # token labels of the token recipe, on each sentence's tokens in answer coordinates
    tokens = [
        [ANSWER[s:e] for (s, e), g in zip(offs, gold, strict=True) if g]
        for offs, gold in zip(pairs.encoded.answer_offsets, pairs.token_gold, strict=True)
    ]
    assert tokens == [[], ["two", "million"], ["south"]]


def test_each_sentence_gets_the_context_sentences_sharing_its_words_in_document_order(tokenizer):
    rule = InputRule(max_length=128, include_question=False)
    pairs = build_pairs(tokenizer, rule, [""], [CONTEXT], [ANSWER], ["r1"])
    assert pairs.labels is None and pairs.stats.pairs_reduced == 3
    first = _decode(tokenizer, pairs.encoded.input_ids[0])
    # sentence 1 shares most words with the context's last sentence: it is chosen although
    # the window cannot hold the whole filler; chosen units are joined in document order
    river, capital = first.find("the seine is a river"), first.find("paris is the capital")
    assert 0 <= river < capital
    assert "filler sentence number 39" not in first
    assert first.endswith("paris is the capital of france.")  # the sentence: second sequence
    third = _decode(tokenizer, pairs.encoded.input_ids[2])
    assert "paris is the capital" not in third  # shares no content word with sentence 3
    assert third.startswith("the seine is a river")
    assert all(len(ids) <= 128 for ids in pairs.encoded.input_ids)


def test_a_short_context_is_passed_whole_and_the_question_leads_the_prompt(tokenizer):
    rule = InputRule(max_length=128)
    pairs = build_pairs(tokenizer, rule, ["Where?"], ["Paris is in France."], ["In France."],
                        ["r2"], [[]])  # fmt: skip
    assert pairs.stats.pairs_reduced == 0 and pairs.labels.tolist() == [0]
    text = _decode(tokenizer, pairs.encoded.input_ids[0])
    assert text == "where? paris is in france. in france."


def test_a_sentence_longer_than_the_window_is_scored_in_pieces_never_dropped(tokenizer):
    long = " ".join(["word"] * 150) + "."
    rule = InputRule(max_length=128, include_question=False)
    pairs = build_pairs(tokenizer, rule, [""], ["Short context."], [long], ["r3"], [[(0, 4)]])
    assert pairs.stats.sentences_split == len(pairs.spans) - 1 >= 1
    assert pairs.spans[0][0] == 0 and pairs.spans[-1][1] == len(long)
    assert all(a[1] == b[0] for a, b in zip(pairs.spans, pairs.spans[1:], strict=False))
    assert pairs.labels.tolist() == [1] + [0] * (len(pairs.spans) - 1)


def test_only_the_evidence_rule_is_accepted(tokenizer):
    with pytest.raises(ConfigError, match="rule 'evidence'"):
        build_pairs(tokenizer, InputRule(rule="windows", max_length=128), [""], ["c"], ["a"],
                    ["r"])  # fmt: skip


def test_aggregates_of_sentence_probabilities():
    assert aggregate([0.2, 0.5], "max") == 0.5
    assert aggregate([0.2, 0.5], "noisy_or") == pytest.approx(1 - 0.8 * 0.5)
    assert aggregate([0.2, 0.5, 0.9], "top2_mean") == pytest.approx(0.7)
    assert aggregate([0.3], "top2_mean") == pytest.approx(0.3)
    with pytest.raises(ConfigError, match="not in"):
        aggregate([0.3], "mean")
    risks = example_risks(np.array([0.1, 0.7, 0.4]), np.array([0, 0, 1]), 2, "max")
    assert risks.tolist() == [0.7, 0.4]


def test_subsampling_keeps_every_positive_and_a_seeded_share_of_negatives(tokenizer):
    from runner.verifiers.sentence_pairs import subsample_negatives

    rule = InputRule(max_length=128)
    questions = [f"Question {k}?" for k in range(6)]  # each example's inputs differ
    pairs = build_pairs(
        tokenizer, rule, questions, [CONTEXT] * 6, [ANSWER] * 6, [f"r{k}" for k in range(6)],
        [GOLD] * 6,
    )  # fmt: skip
    assert pairs.labels.tolist() == [0, 1, 1] * 6
    kept = subsample_negatives(pairs, 0.25, seed=3)
    assert int(kept.labels.sum()) == 12 and int((kept.labels == 0).sum()) == 3  # 0.25 x 12
    again = subsample_negatives(pairs, 0.25, seed=3)
    assert kept.encoded.input_ids == again.encoded.input_ids  # the seed decides
    # every list of the subset still lines up: pair k of the subset is a pair of the whole
    columns = (pairs.encoded.input_ids, pairs.example_of, pairs.spans, pairs.labels)
    whole = {tuple(ids): (o, s, y) for ids, o, s, y in zip(*columns, strict=True)}
    for ids, o, s, y in zip(
        kept.encoded.input_ids, kept.example_of, kept.spans, kept.labels, strict=True
    ):
        assert whole[tuple(ids)][0] == o and whole[tuple(ids)][1:] == (s, y)
    assert len(kept.token_gold) == len(kept.labels) == len(kept.encoded.answer_offsets)
    assert subsample_negatives(pairs, None, seed=3) is pairs
    assert subsample_negatives(pairs, 10.0, seed=3) is pairs  # more asked than exist: all


def test_a_record_context_gives_each_sentence_its_field_facts(tokenizer):
    record = (
        "{'name': 'Apna Kitchen', 'hours': {'Tuesday': '16:30-21:0'}, "
        + ", ".join(f"'field{k}': 'filler value number {k}'" for k in range(40))
        + ", 'attributes': {'RestaurantsReservations': True}}"
    )
    answer = "Apna Kitchen takes reservations. It opens at 16:30 on Tuesday."
    rule = InputRule(max_length=128, include_question=False, units="by_form")
    pairs = build_pairs(tokenizer, rule, [""], [record], [answer], ["r1"])
    first = _decode(tokenizer, pairs.encoded.input_ids[0])
    second = _decode(tokenizer, pairs.encoded.input_ids[1])
    assert "attributes restaurants reservations : yes" in first
    assert "hours tuesday : 16 : 30 - 21 : 0" in second
    assert "{" not in first + second
