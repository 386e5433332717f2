"""DeBERTa-NLI: risk = 1 - P(entailment), the entailment class read from id2label."""

import json
import shutil

import numpy as np
import pytest
import torch
from transformers import AutoModelForSequenceClassification, AutoTokenizer

from runner.errors import ConfigError
from runner.verifiers import DebertaNLIVerifier, top_k_sentences


def manual_risk(folder, frame, entail: int, max_length: int = 512) -> np.ndarray:
    """The risk computed directly with transformers, one example at a time."""
    tok = AutoTokenizer.from_pretrained(folder)
    model = AutoModelForSequenceClassification.from_pretrained(folder).eval()
    out = []
    for context, answer in zip(frame["context"], frame["answer"], strict=True):
        enc = tok(
            top_k_sentences(context, answer, 3),
            answer,
            truncation="only_first",
            max_length=max_length,
            return_tensors="pt",
        )
        with torch.no_grad():
            probs = model(**enc).logits.softmax(-1)[0]
        out.append(1.0 - probs[entail].item())
    return np.array(out)


def test_scores_from_a_local_path_equal_a_plain_transformers_forward(tiny_deberta, frame):
    risk = DebertaNLIVerifier(model=str(tiny_deberta)).score(frame)
    assert risk.shape == (len(frame),)
    np.testing.assert_allclose(risk, manual_risk(tiny_deberta, frame, entail=1), atol=1e-5)
    assert np.ptp(risk) > 0.05  # the toy model separates examples: comparisons are not vacuous


@pytest.mark.parametrize("batch_size", [2, 3, 8])
def test_batched_scores_equal_one_at_a_time(tiny_deberta, frame, batch_size):
    naive = DebertaNLIVerifier(
        model=str(tiny_deberta), batch_size=1, sort_by_length=False, max_length=48
    )
    batched = naive.with_settings(batch_size=batch_size, sort_by_length=True)
    np.testing.assert_allclose(batched.score(frame), naive.score(frame), atol=1e-5, rtol=0)
    assert batched.last_truncation_.n_truncated > 0  # padding and truncation both exercised


def _with_labels(src, dst, id2label):
    shutil.copytree(src, dst)
    config = json.loads((dst / "config.json").read_text())
    config["id2label"] = {str(k): v for k, v in id2label.items()}
    config["label2id"] = {v: k for k, v in id2label.items()}
    (dst / "config.json").write_text(json.dumps(config))
    return dst


def test_the_entailment_class_is_found_by_name_not_by_index(tiny_deberta, frame, tmp_path):
    permuted = _with_labels(
        tiny_deberta, tmp_path / "perm", {0: "ENTAILMENT", 1: "contradiction", 2: "neutral"}
    )
    original = DebertaNLIVerifier(model=str(tiny_deberta)).score(frame)
    risk = DebertaNLIVerifier(model=str(permuted)).score(frame)
    np.testing.assert_allclose(risk, manual_risk(tiny_deberta, frame, entail=0), atol=1e-5)
    assert np.max(np.abs(risk - original)) > 0.05


def test_a_model_without_the_entailment_label_is_a_config_error(tiny_deberta, frame, tmp_path):
    generic = _with_labels(
        tiny_deberta, tmp_path / "generic", {0: "LABEL_0", 1: "LABEL_1", 2: "LABEL_2"}
    )
    verifier = DebertaNLIVerifier(model=str(generic))
    with pytest.raises(ConfigError, match="entailment_label"):
        verifier.score(frame)
    assert DebertaNLIVerifier(model=str(generic), entailment_label="label_1").score(
        frame
    ).shape == (len(frame),)


def test_behaves_as_a_gate(tiny_deberta, frame):
    verifier = DebertaNLIVerifier(model=str(tiny_deberta))
    assert verifier.needs_fit is False
    assert verifier.fit(frame, frame["label"]) is verifier
    assert verifier.get_params()["model"] == str(tiny_deberta)
