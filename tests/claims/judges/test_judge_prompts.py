"""The judge prompt: reasoning first, a JSON verdict, the passages only, within a budget."""

from __future__ import annotations

import pytest

from runner.claims.judges.prompts import PROMPTS, build_messages, render_passages


def test_the_prompt_holds_question_passages_claim_and_the_answer_format():
    messages, truncated = build_messages(
        "Who wrote it?",
        "Ann wrote it.",
        ["Ann wrote the book.", "Bob read it."],
        "reason_then_json",
        None,
    )
    assert [m["role"] for m in messages] == ["system", "user"]
    assert "only the passages" in messages[0]["content"]
    user = messages[1]["content"]
    assert "Question: Who wrote it?" in user
    assert "[1] Ann wrote the book.\n\n[2] Bob read it." in user
    assert "Claim: Ann wrote it." in user
    assert user.index("reasoning") < user.index('{"verdict": "green"}')
    assert not truncated


def test_an_empty_question_is_left_out():
    messages, _ = build_messages("  ", "c", ["p"], "json_object", None)
    assert "Question:" not in messages[1]["content"]
    assert '"reasoning"' in messages[1]["content"]


def test_the_prompts_exist_and_an_unknown_one_fails():
    assert set(PROMPTS) == {"reason_then_json", "json_object", "verdict_then_reason"}
    with pytest.raises(ValueError, match="unknown judge prompt"):
        build_messages("", "c", ["p"], "free_text", None)


def test_passages_share_the_character_budget_and_cuts_are_reported():
    rendered = render_passages(["a" * 100, "b" * 10, "c" * 100], 120)
    parts = rendered.text.split("\n\n")
    assert rendered.truncated
    assert parts[0] == "[1] " + "a" * 40 + " [...]"
    assert parts[1] == "[2] " + "b" * 10  # short passage kept whole, its spare share passed on
    assert parts[2] == "[3] " + "c" * 70 + " [...]"
    assert not render_passages(["a" * 10], 10).truncated


def test_passage_rules():
    with pytest.raises(ValueError, match="at least one passage"):
        render_passages([], None)
    with pytest.raises(ValueError, match="no room"):
        render_passages(["a", "b", "c"], 2)


def test_the_verdict_first_prompt_asks_for_the_verdict_line_before_the_reasoning():
    messages, _ = build_messages("", "c", ["p"], "verdict_then_reason", None)
    text = messages[1]["content"]
    assert text.index('{"verdict": "green"}') < text.index("explain your reasoning")
