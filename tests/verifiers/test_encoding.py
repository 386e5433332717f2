"""Tokenisation cuts only the evidence, counts every cut, and batches by length."""

import numpy as np
import pytest
from tests.verifiers.conftest import SPECS, corpus

from runner.errors import DataError
from runner.verifiers.encoding import (
    TruncationStats,
    encode_pairs,
    encode_template,
    length_sorted_batches,
    pad,
)
from runner.verifiers.hhem import HHEM_TEMPLATE
from runner.verifiers.tokenizer_training import train_tokenizer


@pytest.fixture(scope="module")
def pair_tok():
    return train_tokenizer(corpus(), SPECS["unigram_pair"])


@pytest.fixture(scope="module")
def t5_tok():
    return train_tokenizer(corpus(), SPECS["t5"])


PREMISES = [" ".join(corpus()[:k]) for k in (1, 6, 12)]
ANSWERS = ["the mayor approved a budget.", "taxes would not rise this year.", "roads and parks."]
IDS = ["a", "b", "c"]


def test_pairs_cut_the_premise_only_and_count_the_cut(pair_tok):
    full = [len(pair_tok(p, h)["input_ids"]) for p, h in zip(PREMISES, ANSWERS, strict=True)]
    enc = encode_pairs(pair_tok, PREMISES, ANSWERS, 40, IDS, offsets=True)
    assert max(enc.lengths()) <= 40
    for ids, positions, answer in zip(enc.input_ids, enc.answer_tokens, ANSWERS, strict=True):
        own = pair_tok(answer, add_special_tokens=False)["input_ids"]
        assert [ids[p] for p in positions] == own  # every answer token survives, in order
    kept = enc.lengths()
    assert enc.stats.n_truncated == sum(f > 40 for f in full) == 2
    assert enc.stats.tokens_cut == sum(full) - int(kept.sum())
    assert enc.stats.max_tokens_cut == max(f - k for f, k in zip(full, kept, strict=True))
    assert enc.stats.mean_tokens_untruncated == pytest.approx(np.mean(full))


def test_answer_offsets_index_the_answer(pair_tok):
    enc = encode_pairs(pair_tok, PREMISES, ANSWERS, 40, IDS, offsets=True)
    for offsets, answer in zip(enc.answer_offsets, ANSWERS, strict=True):
        pieces = "".join(answer[s:e] for s, e in offsets).replace(" ", "")
        assert pieces == answer.replace(" ", "")


def test_nothing_is_cut_when_everything_fits(pair_tok):
    enc = encode_pairs(pair_tok, PREMISES, ANSWERS, 4096, IDS)
    assert (enc.stats.n_truncated, enc.stats.tokens_cut) == (0, 0)


def test_an_answer_that_cannot_fit_is_an_error_naming_the_example(pair_tok):
    with pytest.raises(DataError, match=r"row b, field 'answer'.*max_length"):
        encode_pairs(pair_tok, PREMISES, ["x", " ".join(corpus()[:10]), "y"], 30, IDS)


def test_template_keeps_the_whole_hypothesis_and_cuts_the_premise(t5_tok):
    full = [
        len(t5_tok(HHEM_TEMPLATE.format(text1=p, text2=h))["input_ids"])
        for p, h in zip(PREMISES, ANSWERS, strict=True)
    ]
    enc = encode_template(t5_tok, HHEM_TEMPLATE, PREMISES, ANSWERS, 100, IDS)
    assert max(enc.lengths()) <= 100
    for ids, premise, answer in zip(enc.input_ids, PREMISES, ANSWERS, strict=True):
        untruncated = t5_tok(HHEM_TEMPLATE.format(text1=premise, text2=answer))["input_ids"]
        tail = len(t5_tok(answer)["input_ids"])  # the answer's tokens + </s>
        assert ids[-tail:] == untruncated[-tail:]
        assert ids[-1] == t5_tok.eos_token_id
        assert ids[0] == t5_tok.pad_token_id  # the template's leading <pad>
    assert enc.stats.n_truncated == sum(f > 100 for f in full) == 2
    assert enc.stats.tokens_cut == sum(full) - int(enc.lengths().sum())


def test_template_error_when_prompt_without_evidence_is_too_long(t5_tok):
    with pytest.raises(DataError, match=r"row a, field 'answer'.*template \+ answer"):
        encode_template(t5_tok, HHEM_TEMPLATE, PREMISES[:1], [" ".join(corpus()[:8])], 40, IDS[:1])


def test_batches_are_longest_first_stable_and_cover_every_row():
    batches = length_sorted_batches([3, 9, 3, 7, 9], 2)
    assert [b.tolist() for b in batches] == [[1, 4], [3, 0], [2]]
    assert [b.tolist() for b in length_sorted_batches([3, 9, 3], 2, sort=False)] == [[0, 1], [2]]
    with pytest.raises(ValueError):
        length_sorted_batches([1], 0)


def test_pad_right_pads_to_the_longest_with_a_mask():
    ids, mask = pad([[5, 6, 7], [8]], 0)
    assert ids.tolist() == [[5, 6, 7], [8, 0, 0]]
    assert mask.tolist() == [[1, 1, 1], [1, 0, 0]]


def test_truncation_stats_merge_as_if_counted_in_one_call():
    full, kept = [10, 30, 50, 20, 70], [10, 30, 40, 20, 40]
    whole = TruncationStats.from_lengths(full, kept, 40)
    parts = [TruncationStats.from_lengths(full[a:b], kept[a:b], 40) for a, b in ((0, 2), (2, 5))]
    merged = TruncationStats.merged(parts)
    assert (merged.n_examples, merged.n_truncated, merged.tokens_cut) == (5, 2, 40)
    assert merged.max_tokens_cut == 30 and merged.max_length == 40
    assert merged.mean_tokens == pytest.approx(whole.mean_tokens)
    assert merged.mean_tokens_untruncated == pytest.approx(whole.mean_tokens_untruncated)
    with pytest.raises(ValueError, match="max_length"):
        TruncationStats.merged([parts[0], TruncationStats.from_lengths([5], [5], 80)])
    with pytest.raises(ValueError, match="no stats"):
        TruncationStats.merged([])
