"""Judge answers are shared and cached only for exactly the same request.

An answer depends on the model's weights, the exact prompt text and the decoding settings;
the key holds all three, so two judge setups share a first answer only when all three
match, and a cached answer is never returned for a changed prompt. A scripted backend
counts the model calls actually made.
"""

from __future__ import annotations

import json

import pytest

from runner.claims.judges.base import LLMJudge
from runner.claims.judges.cache import AnswerCache, CacheError, answer_fields, answer_key

CLAIMS = [
    ("Q1?", "Claim one.", ["Passage one."]),
    ("Q2?", "Claim two.", ["Passage two."]),
]


class Counting(LLMJudge):
    """Answers from the claim text: a valid verdict for "one", prose otherwise."""

    backend = "counting"
    supports_prefill = True

    def __init__(self, fingerprint="model-a", **kw):
        super().__init__(name=kw.pop("name", "counting"), family="test", **kw)
        self.fingerprint = fingerprint
        self.calls = []

    def model_fingerprint(self):
        return self.fingerprint

    def generate(self, messages, max_new_tokens):
        self.calls.append(("generate", messages[-1]["content"]))
        if messages[-1]["role"] == "user" and "Claim one." in messages[-1]["content"]:
            return 'Stated.\n{"verdict": "green"}'
        if messages[-1]["role"] == "user" and messages[-1]["content"].startswith("Answer only"):
            return '{"verdict": "red"}'
        return "I am not sure"

    def continue_answer(self, messages, max_new_tokens):
        self.calls.append(("continue", messages[-1]["content"]))
        return 'yellow"}'


def test_the_key_changes_with_model_prompt_and_decoding():
    base = answer_key("sha-a", "prompt", {"max_new_tokens": 48})
    assert base == answer_key("sha-a", "prompt", {"max_new_tokens": 48})
    assert base != answer_key("sha-b", "prompt", {"max_new_tokens": 48})
    assert base != answer_key("sha-a", "prompt.", {"max_new_tokens": 48})
    assert base != answer_key("sha-a", "prompt", {"max_new_tokens": 49})


def test_two_setups_of_one_model_and_prompt_share_their_first_answers():
    cache = AnswerCache()
    reask = Counting(name="reask", repair="reask")
    prefill = Counting(name="prefill", repair="prefill")
    a = reask.judge_many(CLAIMS, cache=cache)
    b = prefill.judge_many(CLAIMS, cache=cache)
    assert [kind for kind, _ in reask.calls] == ["generate", "generate", "generate"]
    assert [kind for kind, _ in prefill.calls] == ["continue"]  # only its own repair
    assert prefill.stats.cache.memory_hits == 2 and prefill.stats.model_calls == 1
    assert a[0].outputs == b[0].outputs and a[1].outputs[0] == b[1].outputs[0]
    assert (a[1].label, b[1].label) == ("red", "yellow")  # each applied its own repair


@pytest.mark.parametrize(
    "other",
    [
        {"fingerprint": "model-b"},  # another model file
        {"prompt": "json_object"},  # another prompt
        {"max_new_tokens": 64},  # other decoding settings
    ],
)
def test_a_different_model_prompt_or_decoding_does_not_share(other):
    cache = AnswerCache()
    Counting(name="first").judge_many(CLAIMS, cache=cache)
    second = Counting(name="second", **other)
    second.judge_many(CLAIMS, cache=cache)
    first_answers = [c for kind, c in second.calls if kind == "generate" and "Claim" in c]
    assert len(first_answers) == 2  # each first answer computed again


def test_a_judge_without_a_fingerprint_never_shares():
    cache = AnswerCache()
    Counting(fingerprint=None).judge_many(CLAIMS, cache=cache)
    again = Counting(fingerprint=None)
    again.judge_many(CLAIMS, cache=cache)
    assert again.stats.model_calls == 3 and again.stats.cache.memory_hits == 0


def test_the_disk_cache_serves_a_new_run_and_never_a_changed_prompt(tmp_path):
    Counting().judge_many(CLAIMS, cache=AnswerCache(tmp_path))
    rerun = Counting()
    same = rerun.judge_many(CLAIMS, cache=AnswerCache(tmp_path))
    assert rerun.calls == [] and rerun.stats.cache.disk_hits == 3
    assert [v.label for v in same] == ["green", "red"]
    changed = Counting()
    edited = [("Q1?", "Claim one.", ["Passage one, edited."])]
    changed.judge_many(edited, cache=AnswerCache(tmp_path))
    assert changed.stats.cache.disk_hits == 0
    assert changed.calls and "Passage one, edited." in changed.calls[0][1]


def test_batched_stages_give_the_verdicts_of_one_claim_at_a_time():
    many = Counting().judge_many(CLAIMS)
    single = [Counting().judge(*c) for c in CLAIMS]
    assert [v.to_dict() | {"seconds": 0} for v in many] == [
        v.to_dict() | {"seconds": 0} for v in single
    ]


def test_a_cache_file_that_does_not_match_its_request_is_an_error(tmp_path):
    cache = AnswerCache(tmp_path)
    fields = answer_fields("sha", "prompt", {"max_new_tokens": 8})
    key = answer_key("sha", "prompt", {"max_new_tokens": 8})
    cache.put(key, fields, "answer", 1)
    assert AnswerCache(tmp_path).get(key, fields)["text"] == "answer"
    path = cache.path(key)
    record = json.loads(path.read_text())
    record["key_fields"]["prompt_sha256"] = "0" * 64
    path.write_text(json.dumps(record))
    with pytest.raises(CacheError, match=str(path)):
        AnswerCache(tmp_path).get(key, fields)
    path.write_text("{not json")
    with pytest.raises(CacheError, match="unreadable"):
        AnswerCache(tmp_path).get(key, fields)
