"""`experiment=train_detector` never promotes a worse model, never registers a rerun twice,
says when its time cap cut it, and refuses bad input with one line before any work.

A tiny BERT built from a config is the backbone (as in test_train_detector.py), trained
for a few steps on real RAGTruth train rows through the command a user runs, against a
real SQLite MLflow store. Champions are registered with the registry code the study uses.
"""

from __future__ import annotations

import json
import logging
import shutil
from pathlib import Path

import mlflow
import pandas as pd
import pytest
from tests.conftest import real_data_dir
from tests.conftest import run_experiment as experiment
from tests.routing.detector import minilm_dir, save_tiny_detector

from runner.config import register_configs
from runner.errors import ConfigError
from runner.training import choose_alias, rows_fingerprint, verifier_ap
from runner.verifiers import use_registry

ROOT = Path(__file__).resolve().parents[2]
NAME = "ragtruth_detector"
register_configs()
pytestmark = pytest.mark.slow

TRAIN = (
    "dataset.limit=300",
    "train.max_examples=40",
    "train.val_max_examples=30",
    "train.val_share=0.3",
    "train.batch_size=8",
    "train.checkpoint_every=2",
    "train.lr=1e-3",
    "detector.max_length=128",
    "detector.freeze_layers=1",  # the tiny backbone has 2 layers: the lower one stays as saved
    "detector.recipe=token",  # the token recipe; the sentence one: test_train_detector_sentence.py
    "train.negatives_per_positive=null",  # a sentence-recipe setting
)


def _store(root: Path) -> str:
    return f"sqlite:///{root / 'mlflow.db'}"


def _client(root: Path):
    return mlflow.MlflowClient(tracking_uri=_store(root), registry_uri=_store(root))


def _latest(root: Path) -> Path:
    return (root / "train_detector" / "latest").resolve()


def _read(root: Path, name: str) -> dict:
    return json.loads((_latest(root) / name).read_text())


def _validation_rows(ids: list[str]) -> pd.DataFrame:
    """The rows a run measured every AP of its decision on (its ``validation_rows.json``)."""
    from runner.data.ragtruth import load_ragtruth

    frame = load_ragtruth(split="train", limit=300, data_dir=str(real_data_dir())).frame
    return frame.set_index("example_id").loc[ids].reset_index()


@pytest.fixture(scope="module")
def trained(tmp_path_factory):
    """A first training run in its own store: (root, backbone, what the run wrote). Only the
    rerun test trains again in `root` (tests run in random order)."""
    root = tmp_path_factory.mktemp("guards")
    tiny = save_tiny_detector(root / "tiny", seed=5)
    experiment(root, "train_detector", f"detector.backbone={tiny}", *TRAIN)
    names = ("detector.json", "registered_model.json", "validation_rows.json", "model_folder.json")
    return root, tiny, {name: _read(root, name) for name in names}


def _register_champion(root: Path, folder: Path, promotion: dict) -> str:
    """`folder` (weights + card, the card's ``promotion`` block replaced) as @champion."""
    from runner.results import ModelSpec
    from runner.tracking import register_model
    from runner.verifiers.detector_model import ARTIFACT, DetectorModel, detector_signature

    card = json.loads((folder / "detector.json").read_text())
    card["promotion"] = promotion
    (folder / "detector.json").write_text(json.dumps(card))
    client = mlflow.MlflowClient(_store(root))
    experiment = client.get_experiment_by_name("hand_registered")
    experiment_id = (
        experiment.experiment_id
        if experiment
        else client.create_experiment(
            "hand_registered", artifact_location=(root / "hand_registered").as_uri()
        )
    )
    mlflow.set_tracking_uri(_store(root))
    with mlflow.start_run(experiment_id=experiment_id) as run:
        run_id = run.info.run_id
    spec = ModelSpec(DetectorModel(), NAME, "champion", {}, None,
                     artifacts={ARTIFACT: str(folder)}, signature=detector_signature())  # fmt: skip
    return register_model(_store(root), spec, run_id, root)["version"]


def _trained_folder(first: dict, into: Path) -> Path:
    return Path(shutil.copytree(first["model_folder.json"]["path"], into))


def test_the_first_model_gets_the_alias_the_rule_gives_and_says_why(trained):
    root, _, first = trained
    card, record = first["detector.json"], first["registered_model.json"]
    promotion = card["promotion"]
    assert promotion["champion"] is None and promotion["validation_rows"] == 30
    alias, reason = choose_alias(promotion["validation_ap"], promotion["baseline_ap"], None, 30)
    assert record["alias"] == alias == promotion["alias"] and promotion["reason"] == reason
    rows = _validation_rows(first["validation_rows.json"]["example_ids"])
    assert rows_fingerprint(rows) == promotion["validation_rows_sha256"]
    run = _client(root).get_run(record["run_id"])
    assert run.data.tags["promotion_alias"] == alias and run.data.tags["promotion"] == reason
    version = _client(root).get_model_version(NAME, record["version"])
    assert len(version.tags["weights_sha256"]) == 64
    assert version.tags["plan_key"] == card["training"]["plan_key"]


def test_a_rerun_of_a_finished_training_reuses_its_version(trained, caplog):
    root, tiny, written = trained
    first = written["registered_model.json"]
    with caplog.at_level(logging.INFO, logger="runner.training.promotion"):
        experiment(root, "train_detector", f"detector.backbone={tiny}", *TRAIN)
    again = _read(root, "registered_model.json")
    assert again["version"] == first["version"] and again["reused"] is True
    assert again["alias"] == first["alias"]
    assert len(_client(root).search_model_versions(f"name='{NAME}'")) == 1
    assert any(
        f"rerun of a finished training: version {first['version']} of {NAME}" in r.getMessage()
        and "no new version registered" in r.getMessage()
        for r in caplog.records
    )


def test_a_champion_recorded_better_on_the_same_rows_keeps_its_alias(trained, tmp_path):
    _, tiny, first = trained
    promotion = dict(first["detector.json"]["promotion"], validation_ap=1.0)
    champion = _register_champion(tmp_path, _trained_folder(first, tmp_path / "champ"), promotion)
    experiment(tmp_path, "train_detector", f"detector.backbone={tiny}", *TRAIN,
               "train.lr=5e-4")  # fmt: skip
    record, card = _read(tmp_path, "registered_model.json"), _read(tmp_path, "detector.json")
    assert record["alias"] == "candidate" and record["version"] != champion
    assert str(_client(tmp_path).get_model_version_by_alias(NAME, "champion").version) == champion
    assert card["promotion"]["champion"] == {"version": champion, "ap": 1.0, "how": "recorded"}
    reason = card["promotion"]["reason"]  # the line the run logs, also the run's tag
    assert f"@champion (version {champion}, recorded) 1.0000" in reason
    assert reason.startswith("not promoted to @champion") and "\n" not in reason


def test_a_champion_validated_on_other_rows_is_scored_on_this_runs_rows(trained, tmp_path):
    _, tiny, written = trained
    first = written["detector.json"]["promotion"]
    other_rows = dict(first, validation_rows_sha256="0" * 64, validation_ap=1.0)
    champion = _register_champion(
        tmp_path, _trained_folder(written, tmp_path / "champ"), other_rows
    )
    experiment(tmp_path, "train_detector", f"detector.backbone={tiny}", *TRAIN, "train.lr=2e-3")
    promotion = _read(tmp_path, "detector.json")["promotion"]
    assert promotion["champion"]["how"] == "scored" and promotion["champion"]["version"] == champion
    use_registry(_store(tmp_path))
    try:  # what a user's study gets from the champion's URI, on the same rows
        ids = _read(tmp_path, "validation_rows.json")["example_ids"]
        by_uri = verifier_ap(f"models:/{NAME}/{champion}", _validation_rows(ids))
    finally:
        use_registry(None)
    assert promotion["champion"]["ap"] == pytest.approx(by_uri, abs=1e-12)
    assert promotion["champion"]["ap"] == pytest.approx(first["validation_ap"], abs=1e-12)
    alias, _ = choose_alias(promotion["validation_ap"], promotion["baseline_ap"],
                      _champion(promotion["champion"]), 30)  # fmt: skip
    assert _read(tmp_path, "registered_model.json")["alias"] == alias


def _champion(record: dict):
    from runner.training.promotion import Champion

    return Champion(**record)


CAPPED = (*TRAIN, "train.epochs=30", "train.time_budget_min=0.0001")
"""A run its time cap cuts after its first step."""


def test_a_run_its_time_cap_cuts_short_says_so_in_mlflow_and_the_card(trained, tmp_path, caplog):
    _, tiny, _ = trained
    root = tmp_path
    with caplog.at_level(logging.WARNING, logger="runner.training.detector_training"):
        experiment(root, "train_detector", f"detector.backbone={tiny}", *CAPPED)
    training = _read(root, "detector.json")["training"]
    assert training["stopped_by"] == "time_budget" and training["cut_by_time_budget"] is True
    assert training["steps_done"] < training["steps_planned"]
    run = _client(root).get_run(_read(root, "registered_model.json")["run_id"])
    assert run.data.tags["stopped_by"] == "time_budget"
    assert run.data.tags["cut_by_time_budget"] == "true"
    cut = [v for k, v in run.data.metrics.items() if k.endswith("/stopped_by_time_budget")]
    assert cut == [1.0]
    assert any("cut training short" in r.getMessage() for r in caplog.records)


def test_a_truncated_checkpoint_is_one_line_and_registers_nothing(trained, tmp_path):
    _, tiny, _ = trained
    root = tmp_path
    experiment(root, "train_detector", f"detector.backbone={tiny}", *CAPPED)
    key = _read(root, "detector.json")["training"]["plan_key"]
    folder = root / "cache" / "detector_training" / key
    state = folder / "checkpoint" / "state.pt"
    state.write_bytes(state.read_bytes()[: state.stat().st_size // 3])
    versions = len(_client(root).search_model_versions(f"name='{NAME}'"))
    with pytest.raises(ConfigError) as err:
        experiment(root, "train_detector", f"detector.backbone={tiny}", *CAPPED)
    assert f"{state} cannot be read" in str(err.value)
    assert f"delete the folder {folder}" in str(err.value)
    assert len(_client(root).search_model_versions(f"name='{NAME}'")) == versions


def _check(tmp_path: Path, *overrides: str) -> None:
    """Compose the user's command and run the checks that precede any data load."""
    from hydra import compose, initialize_config_dir

    from runner.pipeline import check_config

    with initialize_config_dir(config_dir=str(ROOT / "conf"), version_base="1.3"):
        cfg = compose(
            "config",
            overrides=["experiment=train_detector", f"paths.artifacts_dir={tmp_path}",
                       *overrides],
        )  # fmt: skip
    check_config(cfg)


def test_bad_settings_fail_before_any_data_is_read(tmp_path, monkeypatch):
    only_config = tmp_path / "only_config"
    only_config.mkdir()
    shutil.copy(minilm_dir() / "config.json", only_config)
    with pytest.raises(ConfigError, match=r"detector.backbone=.*holds no model weights"):
        _check(tmp_path, f"detector.backbone={only_config}")
    with pytest.raises(ConfigError, match=r"train.negatives_per_positive shapes the sentence"):
        _check(tmp_path, "detector.recipe=token")  # the experiment keeps 2 negatives per positive
    with pytest.raises(ConfigError, match=r"detector.freeze_layers=6 leaves no layer to train"):
        _check(tmp_path, f"detector.backbone={minilm_dir()}", "detector.freeze_layers=6")
    for value in (0, -1):
        with pytest.raises(ConfigError, match=r"train\.max_examples must be >= 1"):
            _check(tmp_path, f"train.max_examples={value}")
    import torch

    monkeypatch.setattr(torch.cuda, "is_available", lambda: False)
    with pytest.raises(ConfigError, match=r"train\.device=cuda but torch sees no CUDA device"):
        _check(tmp_path, "train.device=cuda")


def test_a_test_split_is_refused(tmp_path):
    with pytest.raises(ConfigError, match="never trains on a test split"):
        experiment(tmp_path, "train_detector", "dataset=ragtruth", *TRAIN)


def test_data_without_span_labels_is_one_line_from_the_cli(tmp_path, warm_runner):
    env = {"PYTHONPATH": str(ROOT / "src"), "RUNNER_DATA_DIR": str(real_data_dir())}
    import os

    proc = warm_runner.run(
        ["experiment=train_detector", "dataset=halubench", f"paths.artifacts_dir={tmp_path}",
         "progress=false"],
        env={**os.environ, **env}, timeout=300,
    )  # fmt: skip
    assert proc.returncode == 2, proc.stderr
    errors = [ln for ln in proc.stderr.splitlines() if ln.startswith("error:")]
    assert errors == [
        "error: experiment=train_detector needs span labels (which characters of an answer "
        "are unsupported); data set 'halubench' has only a response label: train on RAGTruth "
        "(the default, or dataset=ragtruth_jsonl dataset.path=DIR dataset.split=train)"
    ]
    assert "Traceback" not in proc.stderr
    assert _client(tmp_path).search_registered_models() == []
