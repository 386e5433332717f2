"""Training stops by steps, says when its time cap cut it, and refuses a broken cache.

The same command must give the same model on any machine: the default
``train.time_budget_min`` is a safety cap, far above the default run's time. When a cap
does cut a run, the console says so; a truncated file left in the training folder is one
line naming the file and the folder to delete, before any training is spent.
"""

from __future__ import annotations

import logging
from dataclasses import replace
from types import SimpleNamespace

import numpy as np
import pytest
from tests.conftest import real_data_dir
from tests.routing.detector import minilm_dir, save_tiny_detector

from runner.errors import ConfigError
from runner.training.detector_config import DEFAULT_RUN_MINUTES, TrainConf
from runner.training.detector_training import TrainSettings, label_segments, train
from runner.verifiers.detector_inputs import InputRule

pytestmark = pytest.mark.slow
RULE = InputRule(rule="evidence", max_length=128)


@pytest.fixture(scope="module")
def data():
    """16 real RAGTruth train rows to train on, 8 to validate (both labels in each)."""
    from transformers import AutoTokenizer

    from runner.data.ragtruth import load_ragtruth

    frame = load_ragtruth(split="train", data_dir=str(real_data_dir())).frame
    picked = frame.groupby("label").head(12).reset_index(drop=True)
    picked = picked.iloc[np.random.default_rng(1).permutation(len(picked))]
    tokenizer = AutoTokenizer.from_pretrained(str(minilm_dir()))
    train_rows, val_rows = picked.iloc[:16], picked.iloc[16:].reset_index(drop=True)
    return (
        tokenizer,
        label_segments(tokenizer, RULE, train_rows),
        label_segments(tokenizer, RULE, val_rows),
    )


@pytest.fixture(scope="module")
def tiny(tmp_path_factory):
    return save_tiny_detector(tmp_path_factory.mktemp("tiny"), seed=4)


def _model(folder):
    from transformers import AutoModelForTokenClassification

    return AutoModelForTokenClassification.from_pretrained(folder)


def test_the_default_run_stops_by_steps_on_a_machine_three_times_slower(
    tiny, data, tmp_path, monkeypatch
):
    tokenizer, train_data, val_data = data
    settings = replace(TrainConf().settings(), batch_size=8, checkpoint_every=100)
    steps = -(-len(train_data.labels) // settings.batch_size) * settings.epochs
    per_step = 3 * DEFAULT_RUN_MINUTES * 60 / steps  # the default run's time, three times over
    clock = iter(np.arange(0, 10_000) * per_step)
    import runner.training.detector_training as training

    monkeypatch.setattr(training, "time", SimpleNamespace(perf_counter=lambda: next(clock)))
    result = train(_model(tiny), tokenizer, train_data, val_data, settings, tmp_path, False)
    assert result.stopped_by == "completed" and result.steps_done == steps
    assert result.train_seconds >= 2.9 * DEFAULT_RUN_MINUTES * 60


def test_a_run_its_time_cap_cuts_short_says_so_on_the_console(tiny, data, tmp_path, caplog):
    tokenizer, train_data, val_data = data
    settings = TrainSettings(epochs=50, batch_size=8, time_budget_min=1e-4, seed=1)
    with caplog.at_level(logging.WARNING, logger="runner.training.detector_training"):
        result = train(_model(tiny), tokenizer, train_data, val_data, settings, tmp_path, False)
    assert result.stopped_by == "time_budget"
    warnings = [r.getMessage() for r in caplog.records if r.levelno == logging.WARNING]
    assert any(
        "train.time_budget_min=0.0001 cut training short" in m
        and f"at step {result.steps_done} of {result.steps_planned}" in m
        for m in warnings
    ), warnings


@pytest.mark.parametrize("name", ["checkpoint/state.pt", "best/model.safetensors"])
def test_a_truncated_file_of_the_training_folder_is_one_line_naming_it(tiny, data, tmp_path, name):
    tokenizer, train_data, val_data = data
    settings = TrainSettings(epochs=1, batch_size=8, checkpoint_every=100, seed=1)
    train(_model(tiny), tokenizer, train_data, val_data, settings, tmp_path, False)
    path = tmp_path / name
    path.write_bytes(path.read_bytes()[: path.stat().st_size // 2])
    with pytest.raises(ConfigError) as err:
        train(_model(tiny), tokenizer, train_data, val_data, settings, tmp_path, False)
    message = str(err.value)
    assert str(path) in message and f"delete the folder {tmp_path}" in message
    assert "\n" not in message


@pytest.mark.parametrize("value", [0, -3])
def test_row_counts_below_one_are_refused(value):
    for name in ("max_examples", "val_max_examples"):
        with pytest.raises(ConfigError, match=f"train.{name} must be >= 1 or null"):
            TrainConf(**{name: value})
    TrainConf(max_examples=None, val_max_examples=None)  # null: every row


def test_negative_share_and_frozen_layers_below_their_range_are_refused():
    from runner.training.detector_config import DetectorConf

    with pytest.raises(ConfigError, match="negatives_per_positive must be > 0"):
        TrainConf(negatives_per_positive=0)
    with pytest.raises(ConfigError, match="freeze_layers must be >= 0"):
        DetectorConf(freeze_layers=-1).check_recipe()
