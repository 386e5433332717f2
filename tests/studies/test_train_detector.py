"""`experiment=train_detector` end to end: a registered detector every study can load.

A tiny BERT built from a config (random weights, the shipped MiniLM tokenizer) is the
backbone, trained for a few steps on real RAGTruth train rows through the same command a
user runs; the registered version is then loaded by ``models:/`` URI by the verifier, by
its pyfunc, by `route` (verify band) and by `detector_eval`.
"""

from __future__ import annotations

import json
from pathlib import Path

import mlflow
import numpy as np
import pandas as pd
import pytest
from tests.conftest import run_experiment as experiment
from tests.routing.detector import ragtruth_file, save_tiny_detector

from runner.config import register_configs
from runner.training.detector_config import backbone_folder
from runner.verifiers.lettuce_detect import LettuceDetectVerifier
from runner.verifiers.loading import use_registry

ROOT = Path(__file__).resolve().parents[2]
URI = "models:/ragtruth_detector@champion"
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


@pytest.fixture(scope="module")
def trained(tmp_path_factory):
    """The tiny model trained and registered; then pointed at by @champion by hand, as a
    user promotes a candidate: a few steps of a random BERT need not beat the length
    baseline (the promotion rule: test_train_detector_guards.py), and the studies below
    need a champion to load."""
    root = tmp_path_factory.mktemp("train_detector")
    tiny = save_tiny_detector(root / "tiny", seed=5)
    out = experiment(root, "train_detector", f"detector.backbone={tiny}", *TRAIN)
    client = mlflow.MlflowClient(tracking_uri=f"sqlite:///{root / 'mlflow.db'}")
    client.set_registered_model_alias("ragtruth_detector", "champion", "1")
    return root, tiny, out


def _run_dir(root: Path, name: str) -> Path:
    return (root / name / "latest").resolve()


def test_training_registers_a_detector_with_its_card(trained):
    root, _, out = trained
    run_dir = out.output_dir  # the first training's own folder: a rerun may be `latest`
    card = json.loads((run_dir / "detector.json").read_text())
    assert card["input_rule"]["max_length"] == 128 and card["input_rule"]["rule"] == "evidence"
    assert card["training"]["rows"] == 40 and card["training"]["stopped_by"] == "completed"
    assert len(card["backbone_sha256"]) == 64
    assert all(len(v) == 64 for v in card["training"]["data_sha256"].values())
    record = json.loads((run_dir / "registered_model.json").read_text())
    assert record["version"] == "1" and record["alias"] == card["promotion"]["alias"]
    assert record["uri"] == f"models:/ragtruth_detector@{record['alias']}"
    client = mlflow.MlflowClient(tracking_uri=f"sqlite:///{root / 'mlflow.db'}")
    version = client.get_model_version("ragtruth_detector", record["version"])
    assert version.run_id == out.mlflow_run_id
    history = client.get_metric_history(version.run_id, "series/train_loss")
    assert len(history) == card["training"]["steps_done"]
    assert [m.step for m in history] == list(range(1, len(history) + 1))
    cells = pd.read_csv(run_dir / "cells.csv")
    assert {"training", "validation", "inputs"} <= set(cells["table"])


def test_the_verifier_and_the_pyfunc_load_it_by_uri_and_agree(trained):
    root, _, _ = trained
    use_registry(f"sqlite:///{root / 'mlflow.db'}")
    try:
        verifier = LettuceDetectVerifier(model=URI, batch_size=4)
        verifier.load()
        assert verifier.rule().max_length == 128  # the trained rule, not the class default
        from runner.data.ragtruth import load_ragtruth

        rows = load_ragtruth(split="test").frame.groupby("task").head(3).reset_index(drop=True)
        risk = verifier.score(rows)
        assert risk.shape == (9,) and np.all((risk >= 0) & (risk <= 1))
        assert verifier.runtime_info()["trained_detector"] is True
        mlflow.set_tracking_uri(f"sqlite:///{root / 'mlflow.db'}")
        mlflow.set_registry_uri(f"sqlite:///{root / 'mlflow.db'}")
        pyfunc = mlflow.pyfunc.load_model(URI)  # the version the verifier loaded (a rerun moves it)
        served = pyfunc.predict(rows[["question", "context", "answer"]])
        assert np.allclose(served["risk"].to_numpy(), risk, atol=1e-6)
    finally:
        use_registry(None)


def test_a_rerun_resumes_from_the_checkpoint_instead_of_starting_over(trained):
    root, tiny, _ = trained
    rerun = experiment(root, "train_detector", f"detector.backbone={tiny}", *TRAIN)
    card = json.loads((rerun.output_dir / "detector.json").read_text())
    assert card["training"]["resumed_from_step"] == card["training"]["steps_done"]
    record = json.loads((rerun.output_dir / "registered_model.json").read_text())
    assert record["version"] == "1" and record["reused"] is True  # the same weights: no copy
    assert record["alias"] == "champion"  # the champion it reproduced stays champion


def test_route_sends_the_verify_band_to_the_registered_detector(trained):
    root, _, _ = trained
    rows = ragtruth_file(root / "rows.jsonl", per_task=18)
    experiment(root, "fit_gate", f"dataset.path={rows}", "bootstrap=fast")
    experiment(
        root, "route", f"dataset.path={rows}", "+verifier@verifiers.detector=detector",
        "routing.verifier=detector", "routing.verifier_threshold=0.5",
    )  # fmt: skip
    decisions = pd.read_parquet(_run_dir(root, "route") / "decisions.parquet")
    band = decisions["decision"] == "verify"
    assert band.any()
    assert decisions.loc[band, "detector_risk"].notna().all()
    assert decisions.loc[~band, "detector_risk"].isna().all()


def test_detector_eval_reports_the_trained_rows(trained):
    root, _, _ = trained
    experiment(
        root, "detector_eval", "dataset.limit=240", "study.params.fit_limit=240",
        "study.params.timing_sample=6", "study.params.timing_repeats=1",
        "study.params.gate_timing_rows=30", "bootstrap=fast", "split.n_splits=3",
    )  # fmt: skip
    cells = pd.read_csv(_run_dir(root, "detector_eval") / "cells.csv")
    tables = set(cells["table"])
    assert {"detector_test", "detector_deltas", "detector_examples", "detector_cost"} <= tables
    cols = set(cells.loc[cells["table"] == "detector_test", "column"])
    assert "stacked ragscope_e + detector/AP" in cols and "detector [int8]/AUROC" in cols
    assert "ragscope_e (fit on train)/AP" in cols
    assert "fused ragscope_e + detector aggregates/AUROC" in cols  # issue 43, item 4
    scores = pd.read_parquet(_run_dir(root, "detector_eval") / "scores.parquet")
    fused = scores["fused ragscope_e + detector aggregates"]
    assert fused.notna().all() and not fused.equals(scores["stacked ragscope_e + detector"])


def test_the_shipped_minilm_loads_offline_as_a_token_classifier():
    from transformers import AutoModelForTokenClassification

    model = AutoModelForTokenClassification.from_pretrained(
        backbone_folder("minilm_l6"), num_labels=2
    )
    assert model.config.model_type == "bert"
    assert model.config.num_hidden_layers == 6 and model.config.hidden_size == 384
    assert model.config.max_position_embeddings == 512
