"""A verifier's score fingerprint: equal for the same computation, different when weights,
tokenizer or a setting that reaches the scores differ."""

from __future__ import annotations

import json
import shutil

import torch

from runner.verifiers import LettuceDetectVerifier
from runner.verifiers.fingerprint import tokenizer_sha256, weights_sha256


def test_two_loads_of_one_model_folder_have_one_fingerprint(tiny_modernbert):
    a = LettuceDetectVerifier(model=str(tiny_modernbert)).score_fingerprint()
    b = LettuceDetectVerifier(model=str(tiny_modernbert)).score_fingerprint()
    assert a == b
    assert json.loads(json.dumps(a)) == a  # stored beside cached scores as JSON


def test_one_changed_weight_changes_the_weights_hash(tiny_modernbert):
    model = LettuceDetectVerifier(model=str(tiny_modernbert)).loaded.model
    before = weights_sha256(model)
    with torch.no_grad():
        next(iter(model.parameters())).view(-1)[0] += 1e-6
    assert weights_sha256(model) != before


def test_the_same_weights_under_another_path_share_the_hash_not_the_settings(
    tiny_modernbert, tmp_path
):
    copy = shutil.copytree(tiny_modernbert, tmp_path / "copy")
    a = LettuceDetectVerifier(model=str(tiny_modernbert)).score_fingerprint()
    b = LettuceDetectVerifier(model=str(copy)).score_fingerprint()
    assert a["weights_sha256"] == b["weights_sha256"]
    assert a["tokenizer_sha256"] == b["tokenizer_sha256"]
    assert a != b  # the model path is a setting: conservative, never a wrong hit


def test_settings_that_reach_the_scores_change_the_fingerprint(tiny_modernbert):
    base = LettuceDetectVerifier(model=str(tiny_modernbert))
    for change in ({"max_length": 64}, {"batch_size": 3}, {"evidence": "top_k_sentences"}):
        other = LettuceDetectVerifier(model=str(tiny_modernbert), **change)
        assert other.score_fingerprint() != base.score_fingerprint(), change


def test_token_probabilities_ignore_the_flag_threshold_and_the_risk(tiny_modernbert):
    a = LettuceDetectVerifier(model=str(tiny_modernbert), threshold=0.3)
    b = LettuceDetectVerifier(model=str(tiny_modernbert), threshold=0.7, risk="flagged_share")
    assert a.token_score_fingerprint() == b.token_score_fingerprint()
    assert a.score_fingerprint() != b.score_fingerprint()  # the example risk reads both


def test_the_tokenizer_hash_covers_the_vocabulary(tiny_modernbert):
    tok = LettuceDetectVerifier(model=str(tiny_modernbert)).loaded.tokenizer
    before = tokenizer_sha256(tok)
    tok.add_tokens(["zzzunseenword"])
    assert tokenizer_sha256(tok) != before
