"""`experiment=train_claim_verifier`: the sentence recipe on WiCE's non-test claims, and the
rule that keeps a claim verifier's training data apart from what a claim study evaluates.

A tiny BERT sequence classifier built from a config (random weights, the shipped MiniLM
tokenizer) is trained for a few steps on real WiCE dev rows through the command a user
runs; the claim studies then take it as S1 on WiCE test and refuse it on the data it saw.
"""

from __future__ import annotations

import json
import shutil
from pathlib import Path

import pandas as pd
import pytest
from tests.conftest import run_experiment as experiment
from tests.routing.detector import save_tiny_sentence_detector

from runner.config import register_configs
from runner.errors import ConfigError

register_configs()
pytestmark = pytest.mark.slow

TRAIN = (
    "dataset.sources=[dev_oracle,non_supported_tokens_train]",
    "train.max_examples=16",
    "train.val_max_examples=12",
    "train.batch_size=8",
    "train.eval_every=null",
    "train.checkpoint_every=2",
    "train.lr=1e-3",
    "detector.max_length=128",
)
S1_ONLY = ("~judges.smollm2_reask", "~judges.smollm2_prefill")


@pytest.fixture(scope="module")
def trained(tmp_path_factory):
    root = tmp_path_factory.mktemp("train_claim_verifier")
    tiny = save_tiny_sentence_detector(root / "tiny", seed=5)
    experiment(root, "train_claim_verifier", f"detector.backbone={tiny}", *TRAIN)
    run_dir = (root / "train_claim_verifier" / "latest").resolve()
    folder = json.loads((run_dir / "model_folder.json").read_text())["path"]
    return root, run_dir, Path(folder)


def test_the_card_says_sentence_recipe_and_which_wice_parts_it_learned_from(trained):
    _, run_dir, folder = trained
    card = json.loads((folder / "detector.json").read_text())
    assert card["recipe"] == "sentence"
    assert card["trained_on"] == ["wice:dev", "wice:non_supported_tokens/train"]
    assert card["training"]["data"] == "wice_claim_train"
    assert card["training"]["rows"] == 16 and card["training"]["validation_rows"] == 12
    assert card["threshold"] is not None  # chosen on the held-out claims
    ids = json.loads((run_dir / "validation_rows.json").read_text())["example_ids"]
    assert not any(i.split(":")[1].startswith("test") for i in ids)  # never WiCE test


def test_it_is_registered_under_its_own_name(trained):
    import mlflow

    root, _, _ = trained
    client = mlflow.MlflowClient(f"sqlite:///{root / 'mlflow.db'}")
    versions = client.search_model_versions("name='wice_claim_verifier'")
    assert [str(v.version) for v in versions] == ["1"]


def claim_study(root: Path, folder: Path, *overrides: str):
    return experiment(
        root, "claims_verification_lettucedetect", *S1_ONLY,
        "span_detector.verifier.weights=pretrained",
        f"span_detector.verifier.model={folder}",
        *overrides,
    )  # fmt: skip


def test_the_claim_study_takes_it_as_s1_on_wice_test_with_intervals(trained, tmp_path):
    _, _, folder = trained
    claim_study(tmp_path, folder, "study.params.limit=12")
    cells = pd.read_csv(tmp_path / "claims_verification_lettucedetect" / "latest" / "cells.csv")
    auc = cells[(cells["table"] == "s1_auroc") & cells["column"].str.startswith(("AUROC", "AP"))]
    assert len(auc) == 4  # AUROC and AP of the max probability and of the marked share
    assert auc["ci_low"].notna().all() and (auc["ci_low"] <= auc["ci_high"]).all()


def test_the_claim_study_refuses_it_on_the_wice_part_it_learned_from(trained, tmp_path):
    _, _, folder = trained
    with pytest.raises(
        ConfigError,
        match=r"claims_verification: S1 weights .* were trained on wice:dev, which is the "
        r"data this run evaluates \(wice:dev\)",
    ):
        claim_study(tmp_path, folder, "dataset.split=dev", "study.params.limit=4")
    runs = tmp_path / "claims_verification_lettucedetect" / "runs"
    assert not runs.exists() or not any(runs.iterdir())  # refused before any output


def test_hri_predicted_refuses_a_verifier_that_saw_factcheck_bench(trained, tmp_path):
    _, _, folder = trained
    stance = tmp_path / "stance_trained"
    shutil.copytree(folder, stance)
    card = json.loads((stance / "detector.json").read_text())
    card["trained_on"] = [*card["trained_on"], "factcheck_bench:stance"]
    (stance / "detector.json").write_text(json.dumps(card))
    with pytest.raises(ConfigError, match=r"hri_predicted: .*factcheck_bench:stance"):
        experiment(
            tmp_path, "hri_predicted_lettucedetect", *S1_ONLY,
            "span_detector.verifier.weights=pretrained",
            f"span_detector.verifier.model={stance}",
        )  # fmt: skip
