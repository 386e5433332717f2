"""Training the token detector: it learns, it resumes exactly, it stops on its budget."""

from __future__ import annotations

import numpy as np
import pytest
from tests.conftest import real_data_dir
from tests.routing.detector import minilm_dir, save_tiny_detector

from runner.errors import ConfigError
from runner.training.detector_training import (
    IGNORE,
    TrainSettings,
    choose_threshold,
    epoch_batches,
    label_segments,
    train,
)
from runner.verifiers.detector_inputs import InputRule

RULE = InputRule(rule="evidence", max_length=128)


@pytest.fixture(scope="module")
def tiny(tmp_path_factory):
    return save_tiny_detector(tmp_path_factory.mktemp("tiny"), seed=3)


@pytest.fixture(scope="module")
def data():
    """32 real RAGTruth train rows for training, 16 for validation (both labels in each)."""
    from transformers import AutoTokenizer

    from runner.data.ragtruth import load_ragtruth

    frame = load_ragtruth(split="train", data_dir=str(real_data_dir())).frame
    picked = frame.groupby("label").head(24).reset_index(drop=True)
    order = np.random.default_rng(0).permutation(len(picked))
    picked = picked.iloc[order].reset_index(drop=True)
    tokenizer = AutoTokenizer.from_pretrained(str(minilm_dir()))
    train_rows, val_rows = picked.iloc[:32], picked.iloc[32:].reset_index(drop=True)
    return (
        tokenizer,
        label_segments(tokenizer, RULE, train_rows),
        label_segments(tokenizer, RULE, val_rows),
    )


def _model(folder):
    import torch
    from transformers import AutoModelForTokenClassification

    torch.manual_seed(0)
    return AutoModelForTokenClassification.from_pretrained(folder)


def test_labels_mark_only_answer_tokens(data):
    _, train_data, _ = data
    enc = train_data.segments.encoded
    for k, labels in enumerate(train_data.labels):
        answer = np.zeros(len(labels), bool)
        answer[enc.answer_tokens[k]] = True
        assert (labels[~answer] == IGNORE).all()
        assert set(labels[answer].tolist()) <= {0, 1}
    assert sum(int((lab == 1).sum()) for lab in train_data.labels) > 0


def test_batches_depend_on_seed_and_epoch_only_and_cover_every_row_once():
    lengths = np.arange(50) % 7
    first = epoch_batches(lengths, 4, 3, seed=5, epoch=0)
    again = epoch_batches(lengths, 4, 3, seed=5, epoch=0)
    other = epoch_batches(lengths, 4, 3, seed=5, epoch=1)
    assert [b.tolist() for b in first] == [b.tolist() for b in again]
    assert [b.tolist() for b in first] != [b.tolist() for b in other]
    assert sorted(np.concatenate(first).tolist()) == list(range(50))


@pytest.mark.slow
def test_a_tiny_bert_learns_on_real_rows(tiny, data, tmp_path):
    tokenizer, train_data, val_data = data
    settings = TrainSettings(epochs=4, batch_size=8, lr=2e-3, checkpoint_every=100, seed=1)
    result = train(_model(tiny), tokenizer, train_data, val_data, settings, tmp_path, False)
    losses = [h["loss"] for h in result.history]
    per_epoch = -(-len(train_data.labels) // 8)
    assert result.steps_done == 4 * per_epoch and result.stopped_by == "completed"
    assert np.mean(losses[-4:]) < 0.7 * np.mean(losses[:2])
    assert (tmp_path / "best" / "config.json").is_file()
    assert len(result.evaluations) == 4  # one per epoch
    assert result.best["value"] == max(e["ap"] for e in result.evaluations)


@pytest.mark.slow
def test_a_resumed_run_ends_with_the_same_weights(tiny, data, tmp_path):
    import torch

    tokenizer, train_data, val_data = data
    settings = TrainSettings(epochs=2, batch_size=8, lr=1e-3, checkpoint_every=3, seed=2)
    whole = _model(tiny)
    train(whole, tokenizer, train_data, val_data, settings, tmp_path / "whole", False)
    killed = _model(tiny)
    part = train(killed, tokenizer, train_data, val_data, settings, tmp_path / "cut", False,
                 stop_after_steps=5)  # fmt: skip
    assert part.stopped_by == "interrupted" and part.steps_done == 5
    resumed = _model(tiny)  # a new process: fresh weights, then the checkpoint
    done = train(resumed, tokenizer, train_data, val_data, settings, tmp_path / "cut", False)
    assert done.resumed_from == 5 and done.steps_done == 2 * -(-len(train_data.labels) // 8)
    for (name, a), (_, b) in zip(
        whole.state_dict().items(), resumed.state_dict().items(), strict=True
    ):
        assert torch.equal(a, b), name
    other = TrainSettings(epochs=2, batch_size=4, lr=1e-3, checkpoint_every=3, seed=2)
    with pytest.raises(ConfigError, match="another training plan"):
        train(_model(tiny), tokenizer, train_data, val_data, other, tmp_path / "cut", False)


@pytest.mark.slow
def test_the_time_budget_stops_cleanly_and_keeps_the_best(tiny, data, tmp_path):
    tokenizer, train_data, val_data = data
    settings = TrainSettings(epochs=50, batch_size=8, lr=1e-3, time_budget_min=1e-4, seed=1)
    result = train(_model(tiny), tokenizer, train_data, val_data, settings, tmp_path, False)
    assert result.stopped_by == "time_budget"
    assert result.steps_done < result.steps_planned
    assert result.evaluations[-1]["reason"] == "time_budget"
    assert (tmp_path / "best" / "model.safetensors").is_file()


def test_the_threshold_maximises_validation_f1():
    y = np.array([0, 0, 1, 1, 0, 1])
    risk = np.array([0.1, 0.4, 0.35, 0.8, 0.2, 0.9])
    chosen = choose_threshold(y, risk)
    assert chosen["threshold"] == pytest.approx(0.35) and chosen["f1"] == pytest.approx(6 / 7)
    assert choose_threshold(np.zeros(3), risk[:3])["chosen_on_validation"] is False


def test_bad_settings_fail_before_any_work():
    with pytest.raises(ConfigError, match="device"):
        TrainSettings(device="tpu")
    with pytest.raises(ConfigError, match="select_by"):
        TrainSettings(select_by="loss")
    with pytest.raises(ConfigError, match="time_budget_min"):
        TrainSettings(time_budget_min=0)
