"""The detector's input rule: no context cut silently, no answer token dropped."""

from __future__ import annotations

import itertools

import pytest
from tests.conftest import real_data_dir
from tests.routing.detector import minilm_dir

from runner.errors import ConfigError
from runner.verifiers.detector_inputs import (
    MIN_ANSWER_TOKENS,
    MIN_EVIDENCE_TOKENS,
    InputRule,
    build_segments,
    context_windows,
    fit_questions,
    format_prompt,
)


@pytest.fixture(scope="module")
def tokenizer():
    from transformers import AutoTokenizer

    return AutoTokenizer.from_pretrained(str(minilm_dir()))


@pytest.fixture(scope="module")
def rows():
    from runner.data.ragtruth import load_ragtruth

    frame = load_ragtruth(split="test", data_dir=str(real_data_dir())).frame
    return frame.groupby("task").head(6).reset_index(drop=True)


def _answer_tokens(segments, i):
    enc = segments.encoded
    return sorted(
        {o for k in range(len(enc.input_ids)) if segments.example_of[k] == i
         for o in enc.answer_offsets[k]}
    )  # fmt: skip


def _build(tokenizer, rows, rule):
    return build_segments(
        tokenizer, rule, rows["question"], rows["context"], rows["answer"], rows["example_id"]
    )


@pytest.mark.parametrize("rule", ["evidence", "windows"])
def test_every_answer_token_is_scored_and_inputs_fit(tokenizer, rows, rule):
    segments = _build(tokenizer, rows, InputRule(rule=rule, max_length=160))
    assert segments.encoded.lengths().max() <= 160
    assert segments.encoded.stats.n_truncated == 0  # the budget leaves room: nothing cut
    for i, answer in enumerate(rows["answer"]):
        alone = tokenizer(answer, add_special_tokens=False, return_offsets_mapping=True)
        covered = "".join(answer[s:e] for s, e in _answer_tokens(segments, i))
        assert covered.replace(" ", "") == "".join(
            answer[s:e] for s, e in alone["offset_mapping"]
        ).replace(" ", "")
    assert segments.stats.answers_split > 0  # 160 tokens: some answers need pieces
    assert segments.stats.n_segments == len(segments.encoded.input_ids)


def test_windows_cover_every_context_token(tokenizer, rows):
    """Every token of every context lies inside some window, neighbours overlap, and the
    rule says it saw the whole context."""
    for context in rows["context"]:
        offsets = tokenizer(context, add_special_tokens=False, return_offsets_mapping=True)[
            "offset_mapping"
        ]
        windows = context_windows(tokenizer, context, 100, 16)
        for s, e in offsets:
            assert any(a <= s and e <= b for a, b in windows), (s, e)
        for (_a1, b1), (a2, _) in itertools.pairwise(windows):
            assert a2 < b1  # overlapping neighbours
        inside = [sum(1 for s, e in offsets if a <= s and e <= b) for a, b in windows]
        assert max(inside) <= 100
    rule = InputRule(rule="windows", max_length=160)
    segments = _build(tokenizer, rows, rule)
    assert segments.stats.context_tokens_seen == segments.stats.context_tokens
    assert segments.stats.contexts_reduced == 0


def test_evidence_selection_says_what_it_left_out(tokenizer, rows):
    segments = _build(tokenizer, rows, InputRule(rule="evidence", max_length=160))
    stats = segments.stats.to_dict()
    assert stats["contexts_reduced"] > 0
    assert 0 < stats["context_seen_share"] < 1
    long_ctx = _build(tokenizer, rows, InputRule(rule="evidence", max_length=512))
    assert long_ctx.stats.context_tokens_seen > segments.stats.context_tokens_seen


def test_a_context_that_fits_is_passed_unchanged(tokenizer):
    rule = InputRule(rule="evidence", max_length=256)
    segments = build_segments(tokenizer, rule, ["Who?"], ["Ann wrote it."], ["Ann."], ["a"])
    text = tokenizer.decode(segments.encoded.input_ids[0], skip_special_tokens=True)
    assert "ann wrote it." in text
    assert segments.stats.contexts_reduced == 0


def test_templates_and_bad_settings():
    assert format_prompt("Q?", "C", template="plain") == "Q?\nC"
    assert format_prompt("", "C", template="plain") == "C"
    assert format_prompt("Q?", "C").startswith("Briefly answer")
    with pytest.raises(ConfigError, match="rule"):
        InputRule(rule="chunks")
    with pytest.raises(ConfigError, match="max_length"):
        InputRule(rule="evidence", max_length=64)


def test_a_long_answer_leaves_the_window_share_for_evidence(tokenizer, rows):
    """With answer_share=0.5 no piece takes more than half the window, so every input keeps
    at least the other half for its evidence; with 1.0 a long answer crowds it out."""
    summaries = rows[rows["task"] == "Summary"].reset_index(drop=True)
    capped = _build(tokenizer, summaries, InputRule(max_length=256, answer_share=0.5))
    greedy = _build(tokenizer, summaries, InputRule(max_length=256, answer_share=1.0))
    assert max(len(t) for t in capped.encoded.answer_tokens) <= 128
    assert max(len(t) for t in greedy.encoded.answer_tokens) > 128
    assert capped.stats.n_segments > greedy.stats.n_segments
    assert capped.stats.context_tokens_seen > greedy.stats.context_tokens_seen
    with pytest.raises(ConfigError, match="answer_share"):
        InputRule(answer_share=0.05)


LONG_QUESTION = "Which of the following statements about the river are supported? " + " ".join(
    f"Option {k}: the river floods in month {k} of the year." for k in range(40)
)


@pytest.mark.parametrize("template", ["plain", "lettucedetect"])
def test_a_question_too_long_for_the_window_is_cut_to_its_head_never_a_stop(tokenizer, template):
    rule = InputRule(max_length=128, template=template)
    questions, costs, cut = fit_questions(tokenizer, rule, [LONG_QUESTION, "Where is it?"])
    assert cut == 1
    assert LONG_QUESTION.startswith(questions[0]) and len(questions[0]) < len(LONG_QUESTION)
    assert questions[1] == "Where is it?"  # a question that fits is left as it is
    special = tokenizer.num_special_tokens_to_add(pair=True)
    limit = 128 - special - MIN_EVIDENCE_TOKENS - MIN_ANSWER_TOKENS
    assert costs[0] <= limit
    # the longest head that fits: one more token of the question would not
    ids = tokenizer(LONG_QUESTION, add_special_tokens=False, return_offsets_mapping=True)
    starts = [s for s, _ in ids["offset_mapping"]]
    longer = LONG_QUESTION[: starts[starts.index(len(questions[0]) + 1) + 1]].rstrip()
    prompt = format_prompt(longer, "", True, template)
    assert len(tokenizer(prompt, add_special_tokens=False)["input_ids"]) > limit

    segments = build_segments(
        tokenizer, rule, [LONG_QUESTION], ["The river floods in spring."],
        ["It floods in month 3."], ["q1"],
    )  # fmt: skip
    assert segments.stats.questions_cut == 1
    assert segments.encoded.lengths().max() <= 128
    assert set(segments.example_of.tolist()) == {0}


@pytest.mark.slow
def test_every_halubench_row_gets_inputs_at_the_default_window(tokenizer):
    """HaluBench has questions longer than a 128-token window (the sentence recipe's
    default): each is cut, and every row is scored (`detector_eval dataset=halubench`
    stopped at the first one)."""
    from runner.data.halubench import load_halubench
    from runner.verifiers.sentence_pairs import build_pairs

    frame = load_halubench(data_dir=str(real_data_dir())).frame
    rule = InputRule(max_length=128)
    pairs = build_pairs(
        tokenizer, rule, frame["question"], frame["context"], frame["answer"], frame["example_id"]
    )
    assert sorted(set(pairs.example_of.tolist())) == list(range(len(frame)))
    assert pairs.stats.questions_cut > 0
    assert pairs.encoded.lengths().max() <= 128


def test_question_tokens_caps_the_prompt_so_the_window_goes_to_evidence(tokenizer):
    instruction = "Instruction: write an objective overview of the business " + "in detail " * 20
    free = InputRule(max_length=128)
    capped = InputRule(max_length=128, question_tokens=12)
    _, free_costs, free_cut = fit_questions(tokenizer, free, [instruction, "Where is it?"])
    questions, costs, cut = fit_questions(tokenizer, capped, [instruction, "Where is it?"])
    assert free_cut == 0 and cut == 1  # the cap, not the window, cut it
    assert costs[0] <= 12 < free_costs[0]
    assert instruction.startswith(questions[0]) and questions[1] == "Where is it?"
    with pytest.raises(ConfigError, match="question_tokens"):
        InputRule(question_tokens=0)
