"""Training the sentence recipe: repeatable, resumable, best-by-validation like the token one."""

from __future__ import annotations

import numpy as np
import pytest
from tests.conftest import real_data_dir
from tests.routing.detector import minilm_dir, save_tiny_sentence_detector

from runner.training.detector_training import TrainSettings
from runner.training.sentence_training import (
    example_labels,
    pair_metrics,
    pair_tensors,
    train_sentences,
)
from runner.verifiers.detector_inputs import InputRule
from runner.verifiers.sentence_pairs import build_pairs
from runner.verifiers.token_labels import gold_spans

RULE = InputRule(rule="evidence", max_length=128)


@pytest.fixture(scope="module")
def tiny(tmp_path_factory):
    return save_tiny_sentence_detector(tmp_path_factory.mktemp("tiny_sentence"), seed=3)


def _pairs(tokenizer, rows):
    gold = [
        gold_spans(list(s), a, i)
        for s, a, i in zip(rows.spans, rows.answer, rows.example_id, strict=True)
    ]
    return build_pairs(tokenizer, RULE, rows.question, rows.context, rows.answer,
                       rows.example_id, gold)  # fmt: skip


@pytest.fixture(scope="module")
def data():
    """12 real RAGTruth train rows for training, 8 for validation (both labels in each)."""
    from transformers import AutoTokenizer

    from runner.data.ragtruth import load_ragtruth

    frame = load_ragtruth(split="train", data_dir=str(real_data_dir())).frame
    picked = frame.groupby("label").head(10).reset_index(drop=True)
    picked = picked.iloc[np.random.default_rng(0).permutation(len(picked))]
    picked = picked.reset_index(drop=True)
    tokenizer = AutoTokenizer.from_pretrained(str(minilm_dir()))
    train_rows, val_rows = picked.iloc[:12], picked.iloc[12:].reset_index(drop=True)
    return tokenizer, _pairs(tokenizer, train_rows), _pairs(tokenizer, val_rows), val_rows


def _model(folder):
    import torch
    from transformers import AutoModelForSequenceClassification

    torch.manual_seed(0)
    return AutoModelForSequenceClassification.from_pretrained(folder)


def test_example_labels_are_the_response_labels_and_batches_carry_one_label_per_pair(data):
    tokenizer, train_data, val_data, val_rows = data
    assert example_labels(val_data).tolist() == val_rows["label"].astype(int).tolist()
    batch = pair_tensors(train_data, np.array([0, 1, 2]), tokenizer.pad_token_id, "cpu", True)
    assert batch["labels"].tolist() == train_data.labels[:3].tolist()
    assert batch["input_ids"].shape[0] == 3 and "token_type_ids" in batch


def test_validation_measures_every_aggregate_and_token_f1_of_sentence_spans(data):
    _, _, val_data, _ = data
    perfect = val_data.labels.astype(float)  # a model right on every sentence
    measures = pair_metrics(perfect, val_data, "noisy_or")
    assert measures["auroc"] == measures["auroc_noisy_or"] == 1.0
    assert measures["ap_max"] == measures["ap_top2_mean"] == 1.0
    assert measures["sentence_f1"] == 1.0 and measures["token_recall"] == 1.0
    # a whole flagged sentence also flags its supported tokens: token precision < 1
    assert 0.0 < measures["token_precision"] < 1.0


@pytest.mark.slow
def test_same_seed_same_weights_and_a_resumed_run_ends_with_the_same_weights(tiny, data, tmp_path):
    import torch

    tokenizer, train_data, val_data, _ = data
    settings = TrainSettings(epochs=2, batch_size=8, lr=1e-3, checkpoint_every=3, seed=2)
    whole = _model(tiny)
    first = train_sentences(whole, tokenizer, train_data, val_data, settings,
                            tmp_path / "whole", progress=False)  # fmt: skip
    again = _model(tiny)
    train_sentences(again, tokenizer, train_data, val_data, settings, tmp_path / "again",
                    progress=False)  # fmt: skip
    killed = _model(tiny)
    part = train_sentences(killed, tokenizer, train_data, val_data, settings, tmp_path / "cut",
                           progress=False, stop_after_steps=5)  # fmt: skip
    assert part.stopped_by == "interrupted" and part.steps_done == 5
    resumed = _model(tiny)  # a new process: fresh weights, then the checkpoint
    done = train_sentences(resumed, tokenizer, train_data, val_data, settings, tmp_path / "cut",
                           progress=False)  # fmt: skip
    per_epoch = -(-len(train_data.labels) // 8)
    assert done.resumed_from == 5 and done.steps_done == first.steps_done == 2 * per_epoch
    for (name, a), (_, b), (_, c) in zip(
        whole.state_dict().items(),
        again.state_dict().items(),
        resumed.state_dict().items(),
        strict=True,
    ):
        assert torch.equal(a, b) and torch.equal(a, c), name
    assert (tmp_path / "whole" / "best" / "model.safetensors").read_bytes() == (
        tmp_path / "cut" / "best" / "model.safetensors"
    ).read_bytes()
    assert first.best["value"] == max(e["ap"] for e in first.evaluations)
    assert {"auroc_noisy_or", "ap_top2_mean", "sentence_f1"} <= set(first.evaluations[0])
