"""LettuceDetect: per-answer-token probabilities, spans, and the example risks."""

import numpy as np
import pytest
import torch
from transformers import AutoModelForTokenClassification, AutoTokenizer

from runner.errors import ConfigError
from runner.verifiers import LettuceDetectVerifier, TokenScores
from runner.verifiers.lettuce_detect import format_prompt


def _non_blank_tokens(tok, answer):
    offsets = tok(answer, add_special_tokens=False, return_offsets_mapping=True)["offset_mapping"]
    return sum(1 for i, j in offsets if answer[i:j].strip())


def _lists(frame):
    return frame["question"].tolist(), frame["context"].tolist(), frame["answer"].tolist()


def test_token_scores_cover_exactly_the_answer_tokens(tiny_modernbert, frame):
    verifier = LettuceDetectVerifier(model=str(tiny_modernbert))
    scores = verifier.token_scores(*_lists(frame))
    tok = AutoTokenizer.from_pretrained(tiny_modernbert)
    model = AutoModelForTokenClassification.from_pretrained(tiny_modernbert).eval()
    for s, (q, c, a) in zip(scores, zip(*_lists(frame), strict=True), strict=True):
        assert isinstance(s, TokenScores)
        assert len(s.offsets) == len(s.probs) == _non_blank_tokens(tok, a)
        assert "".join(a[i:j] for i, j in s.offsets) == a.replace(" ", "")
        assert all(not a[i].isspace() for i, _ in s.offsets)
        enc = tok(format_prompt(q, c), a, return_tensors="pt", return_offsets_mapping=True)
        with torch.no_grad():
            probs = (
                model(input_ids=enc["input_ids"], attention_mask=enc["attention_mask"])
                .logits[0]
                .softmax(-1)[:, 1]
                .numpy()
            )
        answer_positions = [
            i
            for i, sid in enumerate(enc.sequence_ids(0))
            if sid == 1 and a[slice(*enc["offset_mapping"][0][i].tolist())].strip()
        ]
        np.testing.assert_allclose(s.probs, probs[answer_positions], atol=1e-5)


def test_spans_merge_consecutive_flagged_tokens_into_answer_offsets():
    s = TokenScores([(0, 3), (4, 9), (10, 12), (13, 18)], np.array([0.9, 0.6, 0.1, 0.7]))
    assert s.spans(0.5) == [(0, 9), (13, 18)]
    assert s.spans(0.95) == []
    assert s.flagged_share(0.5) == pytest.approx(0.75)
    assert s.flagged_share(0.7) == pytest.approx(0.25)  # strictly above the threshold
    assert s.max_prob() == pytest.approx(0.9)


def test_example_risk_is_max_prob_or_flagged_share(tiny_modernbert, frame):
    base = LettuceDetectVerifier(model=str(tiny_modernbert), threshold=0.8)
    scores = base.token_scores(*_lists(frame))
    both = base.risk_components(frame)
    np.testing.assert_allclose(base.score(frame), [s.max_prob() for s in scores])
    share = base.with_settings().set_params(risk="flagged_share")
    np.testing.assert_allclose(share.score(frame), both["flagged_share"])
    np.testing.assert_allclose(both["flagged_share"], [s.flagged_share(0.8) for s in scores])
    assert np.ptp(both["max_prob"]) > 0.01


def test_batched_token_probabilities_equal_one_at_a_time(tiny_modernbert, frame):
    naive = LettuceDetectVerifier(
        model=str(tiny_modernbert), batch_size=1, sort_by_length=False, max_length=96
    )
    batched = naive.with_settings(batch_size=4)
    for a, b in zip(
        naive.token_scores(*_lists(frame)), batched.token_scores(*_lists(frame)), strict=True
    ):
        assert a.offsets == b.offsets
        np.testing.assert_allclose(a.probs, b.probs, atol=1e-5, rtol=0)
    assert batched.last_truncation_.n_truncated > 0


def test_long_context_is_cut_but_every_answer_token_is_scored(tiny_modernbert, frame):
    short = LettuceDetectVerifier(model=str(tiny_modernbert), max_length=80)
    tok = AutoTokenizer.from_pretrained(tiny_modernbert)
    for s, a in zip(short.token_scores(*_lists(frame)), frame["answer"], strict=True):
        assert len(s.probs) == _non_blank_tokens(tok, a)
    assert short.last_truncation_.n_truncated == len(frame)


def test_prompt_follows_lettucedetect_templates():
    assert format_prompt("Who?", "ctx").startswith("Briefly answer the following question:\nWho?")
    assert "passage 1: ctx" in format_prompt("Who?", "ctx")
    assert format_prompt("", "ctx") == "Summarize the following text:\npassage 1: ctx\noutput:"
    assert format_prompt("Who?", "ctx", include_question=False) == format_prompt("", "ctx")


def test_unknown_risk_is_a_config_error(tiny_modernbert):
    with pytest.raises(ConfigError, match="risk"):
        LettuceDetectVerifier(model=str(tiny_modernbert), risk="mean")
