"""The two ways `experiment=train_detector` trains a detector, behind one call each.

Why one module: the study (`runner.studies.train_detector`) owns what both recipes share —
the grouped split, the row samples, the plan key and checkpoint folder, the threshold, the
card's training summary, the promotion decision and the registry — and asks a recipe only
to train on its rows and say how the kept weights score the validation rows. So a new
recipe is one function here returning `Trained`, and every guard (span labels, corrupt
cache files, the time cap, never promoting a worse model) applies to it unchanged.

- ``token``: LettuceDetect's token classification over the whole answer
  (`runner.training.detector_training`); example risk = the largest token probability.
- ``sentence``: each answer sentence with the context sentences most relevant to it
  (`runner.verifiers.sentence_pairs`), a 2-label sequence classifier
  (`runner.training.sentence_training`); example risk = ``detector.aggregate`` of the
  sentences' probabilities.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import numpy as np
import pandas as pd

from runner.errors import ConfigError
from runner.training.detector_config import RECIPES
from runner.training.detector_training import (
    TrainResult,
    TrainSettings,
    label_segments,
    predict_token_probs,
    train,
)
from runner.training.sentence_training import pair_metrics, predict_pair_probs, train_sentences
from runner.training.synthetic_rows import positive_sentences, synthetic_rows
from runner.verifiers import (
    AGGREGATES,
    InputRule,
    build_pairs,
    example_risks,
    gold_spans,
    subsample_negatives,
)


@dataclass
class Trained:
    """What a recipe hands back: the loop's result, the kept weights' validation risk per
    row, the card entries only this recipe has, and the extra validation cells
    ``(row, column, value)``."""

    done: TrainResult
    risk: np.ndarray
    card: dict[str, Any]
    cells: list[tuple[str, str, float | None]] = field(default_factory=list)


@dataclass(frozen=True)
class RecipeJob:
    """What every recipe trains from: the backbone folder and its tokenizer, the input rule,
    the optimisation settings, the detector settings, (train rows, validation rows), the
    checkpoint folder and whether to show progress."""

    source: str
    tokenizer: Any
    rule: InputRule
    settings: TrainSettings
    detector: Any
    rows: tuple[pd.DataFrame, pd.DataFrame]
    out_dir: Path
    progress: bool
    negatives_per_positive: float | None = None
    synthetic_per_positive: float | None = None

    def model(self, model_class: Any) -> Any:
        """The backbone with a fresh 2-label head (seeded), embeddings and the lower
        ``detector.freeze_layers`` encoder layers frozen if asked."""
        import torch

        torch.manual_seed(self.settings.seed)
        model = model_class.from_pretrained(self.source, num_labels=2)
        frozen = int(getattr(self.detector, "freeze_layers", 0) or 0)
        if self.detector.freeze_embeddings or frozen:
            for p in model.base_model.embeddings.parameters():
                p.requires_grad_(False)
        if frozen:
            layers = model.base_model.encoder.layer
            if frozen >= len(layers):
                raise ConfigError(
                    f"detector.freeze_layers={frozen} leaves no layer to train: the backbone "
                    f"has {len(layers)}"
                )
            for layer in layers[:frozen]:
                for p in layer.parameters():
                    p.requires_grad_(False)
        return model


def _finite(value: Any) -> float | None:
    return float(value) if value is not None and np.isfinite(value) else None


def train_token_recipe(job: RecipeJob) -> Trained:
    """Token classification over ``[CLS] prompt [SEP] answer [SEP]`` (LettuceDetect's)."""
    from transformers import AutoModelForTokenClassification

    (train_rows, val_rows), tokenizer, settings = job.rows, job.tokenizer, job.settings
    model = job.model(AutoModelForTokenClassification)
    train_data = label_segments(tokenizer, job.rule, train_rows)
    val_data = label_segments(tokenizer, job.rule, val_rows)
    done = train(model, tokenizer, train_data, val_data, settings, job.out_dir, job.progress)
    best = AutoModelForTokenClassification.from_pretrained(done.best_dir)
    probs = predict_token_probs(
        best, val_data, tokenizer.pad_token_id, "cpu", settings.eval_batch_size
    )
    risk = np.zeros(len(val_rows))
    for k, p in enumerate(probs):
        owner = val_data.segments.example_of[k]
        risk[owner] = max(risk[owner], float(p.max()) if len(p) else 0.0)
    card = {
        "recipe": "lettucedetect token classification",
        "input_stats": {
            "train": train_data.segments.stats.to_dict(),
            "validation": val_data.segments.stats.to_dict(),
        },
    }
    return Trained(done, risk, card)


def labelled_pairs(tokenizer: Any, rule: InputRule, rows: pd.DataFrame) -> Any:
    """Every answer sentence of `rows` paired with its evidence, labelled from gold spans."""
    gold = [
        gold_spans(list(s), a, str(i))
        for s, a, i in zip(rows["spans"], rows["answer"], rows["example_id"], strict=True)
    ]
    return build_pairs(
        tokenizer,
        rule,
        rows["question"].tolist(),
        rows["context"].tolist(),
        rows["answer"].tolist(),
        rows["example_id"].tolist(),
        gold,
    )


def train_sentence_recipe(job: RecipeJob) -> Trained:
    """Sequence classification of (evidence, answer sentence) pairs; risk = an aggregate."""
    from transformers import AutoModelForSequenceClassification

    (train_rows, val_rows), tokenizer, settings = job.rows, job.tokenizer, job.settings
    detector = job.detector
    model = job.model(AutoModelForSequenceClassification)
    synthetic = None
    if job.synthetic_per_positive:
        wanted = round(job.synthetic_per_positive * positive_sentences(train_rows))
        made, synthetic = synthetic_rows(train_rows, wanted, settings.seed)
        train_rows = pd.concat([train_rows, made], ignore_index=True)
    built = labelled_pairs(tokenizer, job.rule, train_rows)
    train_data = subsample_negatives(built, job.negatives_per_positive, settings.seed)
    val_data = labelled_pairs(tokenizer, job.rule, val_rows)
    memo: dict = {}
    done = train_sentences(
        model, tokenizer, train_data, val_data, settings, job.out_dir, detector.aggregate,
        job.progress, memo=memo,
    )  # fmt: skip
    if "probs" in memo and done.evaluations[-1]["step"] == done.best.get("step"):
        probs = memo["probs"]  # the kept weights are the last evaluated (in this call)
    else:
        best = AutoModelForSequenceClassification.from_pretrained(done.best_dir)
        probs = predict_pair_probs(
            best, val_data, tokenizer.pad_token_id, "cpu", settings.eval_batch_size
        )
    risk = example_risks(probs, val_data.example_of, len(val_rows), detector.aggregate)
    measures = pair_metrics(probs, val_data, detector.aggregate)
    aggregates = {
        how: {"auroc": _finite(measures[f"auroc_{how}"]), "ap": _finite(measures[f"ap_{how}"])}
        for how in AGGREGATES
    }
    card = {
        "recipe": "sentence",
        "recipe_description": "sentence pairs: answer sentence + best evidence, sequence "
        "classification; example risk = aggregate of sentence probabilities",
        "aggregate": detector.aggregate,
        "aggregates": aggregates,
        "synthetic": synthetic,
        "pairs": {
            "built": len(built.labels),
            "negatives_per_positive": job.negatives_per_positive,
            "train": len(train_data.labels),
            "positive_share": float(train_data.labels.mean()) if len(train_data.labels) else 0.0,
            "validation": len(val_data.labels),
        },
        "input_stats": {
            "train": train_data.stats.to_dict(),
            "validation": val_data.stats.to_dict(),
        },
    }
    cells = [
        (f"aggregate {how}", k, v) for how, vals in aggregates.items() for k, v in vals.items()
    ]
    cells += [
        ("kept weights", label, _finite(done.best.get(label)))
        for label in ("sentence_auroc", "sentence_ap", "sentence_f1")
    ]
    return Trained(done, risk, card, cells)


def train_recipe(name: str, job: RecipeJob) -> Trained:
    """Train with the recipe `name` (``detector.recipe``)."""
    if name == "token":
        return train_token_recipe(job)
    if name == "sentence":
        return train_sentence_recipe(job)
    raise ConfigError(f"detector.recipe {name!r} not in {RECIPES}")
