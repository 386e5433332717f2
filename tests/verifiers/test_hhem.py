"""HHEM on stock T5ForTokenClassification: first-position softmax, class 1 = consistent."""

import json

import numpy as np
import pytest
import torch
from safetensors.torch import save_file
from transformers import AutoTokenizer, T5ForTokenClassification

from runner.errors import ConfigError
from runner.verifiers import HHEM_TEMPLATE, HHEMVerifier


def test_template_is_hhem_2_1_open():
    assert HHEM_TEMPLATE == (
        "<pad> Determine if the hypothesis is true given the premise?\n\n"
        "Premise: {text1}\n\nHypothesis: {text2}"
    )


def test_risk_is_one_minus_first_position_class_one(tiny_t5, frame):
    risk = HHEMVerifier(model=str(tiny_t5), max_length=4096).score(frame)
    tok = AutoTokenizer.from_pretrained(tiny_t5)
    model = T5ForTokenClassification.from_pretrained(tiny_t5).eval()
    expected = []
    for context, answer in zip(frame["context"], frame["answer"], strict=True):
        enc = tok(HHEM_TEMPLATE.format(text1=context, text2=answer), return_tensors="pt")
        with torch.no_grad():
            expected.append(1 - model(**enc).logits[0, 0].softmax(-1)[1].item())
    np.testing.assert_allclose(risk, expected, atol=1e-5)
    assert np.ptp(risk) > 0.05


def test_t5_token_classifier_runs_the_encoder_only(tiny_t5):
    model = T5ForTokenClassification.from_pretrained(tiny_t5)
    assert not any("decoder" in k for k in model.state_dict())


@pytest.mark.parametrize("batch_size", [2, 4])
def test_batched_scores_equal_one_at_a_time(tiny_t5, frame, batch_size):
    naive = HHEMVerifier(model=str(tiny_t5), batch_size=1, sort_by_length=False, max_length=120)
    batched = naive.with_settings(batch_size=batch_size)
    np.testing.assert_allclose(batched.score(frame), naive.score(frame), atol=1e-5, rtol=0)
    assert batched.last_truncation_.n_truncated > 0


def _hhem_layout(tiny_t5, folder, prefix="t5."):
    """The Hub layout of HHEM-2.1-open: custom config, weights under `t5.`, no tokenizer."""
    folder.mkdir()
    model = T5ForTokenClassification.from_pretrained(tiny_t5)
    weights = {
        prefix + k: v.contiguous()
        for k, v in model.state_dict().items()
        if k != "transformer.encoder.embed_tokens.weight"
    }
    save_file(weights, str(folder / "model.safetensors"))
    (folder / "config.json").write_text(
        json.dumps(
            {
                "model_type": "HHEMv2",
                "architectures": ["HHEMv2ForSequenceClassification"],
                "foundation": str(tiny_t5),
            }
        )
    )
    return folder


def test_hub_layout_checkpoint_scores_like_the_stock_one(tiny_t5, frame, tmp_path):
    hub = _hhem_layout(tiny_t5, tmp_path / "hhem")
    stock = HHEMVerifier(model=str(tiny_t5), max_length=200).score(frame)
    verifier = HHEMVerifier(model=str(hub), max_length=200)
    np.testing.assert_allclose(verifier.score(frame), stock, atol=1e-6)
    assert verifier.runtime_info()["tokenizer"]["foundation"] == str(tiny_t5)


def test_hub_layout_with_foreign_weights_is_refused(tiny_t5, tmp_path):
    bad = _hhem_layout(tiny_t5, tmp_path / "bad", prefix="model.")
    with pytest.raises(ConfigError, match=r"outside 't5\.'"):
        HHEMVerifier(model=str(bad)).load()


def test_top3_ablation_uses_sentence_evidence(tiny_t5, frame):
    full = HHEMVerifier(model=str(tiny_t5), max_length=4096)
    top3 = full.with_settings(evidence="top_k_sentences", top_k=3)
    full.score(frame)
    top3.score(frame)
    assert top3.last_truncation_.mean_tokens < full.last_truncation_.mean_tokens
