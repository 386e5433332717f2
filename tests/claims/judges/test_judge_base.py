"""The fail-closed contract of every judge: one bounded repair, then an abstention (yellow).

The backend here is a scripted `LLMJudge` subclass: it returns fixed answers and records
what it was asked, so the control flow (what is re-asked, how often, what counts) is
checked exactly. The real backends are tested in test_transformers_judge.py,
test_openai_compatible_judge.py and test_smollm2_judge.py.
"""

from __future__ import annotations

import pytest

from runner.claims.judges.base import PREFILL, JudgeBackendError, LLMJudge
from runner.claims.judges.parsing import REPAIR_MESSAGE
from runner.errors import ConfigError


class Scripted(LLMJudge):
    backend = "scripted"
    supports_prefill = True

    def __init__(self, answers, continuation=None, **kw):
        super().__init__(name=kw.pop("name", "scripted"), family="test", **kw)
        self.answers = list(answers)
        self.continuation = continuation
        self.asked = []

    def generate(self, messages, max_new_tokens):
        self.asked.append(("generate", messages, max_new_tokens))
        answer = self.answers.pop(0)
        if isinstance(answer, Exception):
            raise answer
        return answer

    def continue_answer(self, messages, max_new_tokens):
        self.asked.append(("continue", messages, max_new_tokens))
        return self.continuation


ARGS = ("Q?", "The claim.", ["A passage."])


def test_a_valid_first_answer_needs_one_call():
    judge = Scripted(['Stated in [1].\n{"verdict": "green"}'])
    verdict = judge.judge(*ARGS)
    assert (verdict.label, verdict.abstained, verdict.parsed_label) == ("green", False, "green")
    assert verdict.calls == 1 and not verdict.repaired and verdict.errors == []
    assert verdict.reasoning == "Stated in [1]."
    assert judge.asked[0][2] == judge.max_new_tokens


def test_a_failed_answer_is_re_asked_once_with_the_short_follow_up():
    judge = Scripted(["I think it is fine", '{"verdict": "red"}'], repair_max_new_tokens=7)
    verdict = judge.judge(*ARGS)
    assert (verdict.label, verdict.abstained, verdict.repaired) == ("red", False, True)
    assert verdict.calls == 2 and len(verdict.errors) == 1
    assert verdict.reasoning == "I think it is fine"
    _, messages, budget = judge.asked[1]
    assert budget == 7
    assert messages[-2] == {"role": "assistant", "content": "I think it is fine"}
    assert messages[-1] == {"role": "user", "content": REPAIR_MESSAGE}


@pytest.mark.parametrize(
    "answers",
    [
        ['{"verdict": "gre', '{"verdict": "gre'],  # truncated twice
        ["prose only", "still prose"],
        ['{"verdict": "supported"}', '{"verdict": "fine"}'],  # unknown labels
    ],
)
def test_two_failures_are_an_abstention_routed_to_yellow(answers):
    judge = Scripted(answers)
    verdict = judge.judge(*ARGS)
    assert verdict.abstained and verdict.label == "yellow" and verdict.parsed_label is None
    assert verdict.calls == 2 and len(verdict.errors) == 2 and not verdict.repaired
    assert verdict.outputs == answers
    assert len(judge.asked) == 2  # bounded: never a third call


def test_without_repair_the_first_failure_abstains():
    judge = Scripted(["green, clearly"], repair="none")
    verdict = judge.judge(*ARGS)
    assert verdict.abstained and verdict.label == "yellow" and verdict.calls == 1


def test_prefill_repair_continues_the_answer_after_a_forced_verdict_start():
    judge = Scripted(
        ["Long reasoning that ran out of tokens"],
        continuation='red"}',
        repair="prefill",
        repair_max_new_tokens=5,
    )
    verdict = judge.judge(*ARGS)
    assert (verdict.label, verdict.repaired, verdict.calls) == ("red", True, 2)
    kind, messages, budget = judge.asked[1]
    assert kind == "continue" and budget == 5
    assert messages[-1] == {
        "role": "assistant",
        "content": f"Long reasoning that ran out of tokens\n{PREFILL}",
    }
    assert verdict.outputs[1] == PREFILL + 'red"}'


def test_prefill_continuation_is_parsed_as_strictly_as_any_answer():
    judge = Scripted(["reasoning"], continuation='True"}', repair="prefill")
    verdict = judge.judge(*ARGS)
    assert verdict.abstained and verdict.label == "yellow"


def test_a_backend_error_is_raised_not_abstained():
    judge = Scripted([JudgeBackendError("server down")])
    with pytest.raises(JudgeBackendError, match="server down"):
        judge.judge(*ARGS)


def test_prompt_truncation_is_recorded():
    judge = Scripted(['{"verdict": "green"}'], max_passage_chars=100)
    verdict = judge.judge("", "c", ["x" * 500])
    assert verdict.truncated


def test_judge_many_keeps_order_and_describe_names_the_settings():
    judge = Scripted(['{"verdict": "green"}', '{"verdict": "red"}'])
    labels = [v.label for v in judge.judge_many([ARGS, ARGS])]
    assert labels == ["green", "red"]
    info = judge.describe()
    assert info["decoding"] == "greedy" and info["prompt"] == "reason_then_json"
    assert info["family"] == "test" and info["repair"] == "reask"


@pytest.mark.parametrize(
    ("kwargs", "message"),
    [
        ({"prompt": "chatty"}, "unknown prompt"),
        ({"repair": "twice"}, "repair must be one of"),
        ({"max_new_tokens": 0}, "max_new_tokens must be a positive int"),
        ({"repair_max_new_tokens": -1}, "repair_max_new_tokens"),
        ({"max_passage_chars": 10}, "max_passage_chars"),
    ],
)
def test_bad_settings_fail_before_any_call(kwargs, message):
    with pytest.raises(ConfigError, match=message):
        Scripted([], **kwargs)


def test_prefill_needs_a_backend_that_can_continue_an_answer():
    class NoPrefill(Scripted):
        supports_prefill = False

    with pytest.raises(ConfigError, match="prefill"):
        NoPrefill([], repair="prefill")
