"""A trained detector written down: its card (``detector.json``) and the cells and curves
`train_detector` reports.

Why apart from the study: the card is what every verifier loading the model reads (its
input rule, threshold, training summary), so what it holds is the detector's knowledge,
not the study's recipe.
"""

from __future__ import annotations

from dataclasses import asdict
from typing import Any

import numpy as np
import pandas as pd

from runner.data import sha256_file, trained_parts
from runner.results import StudyResult
from runner.training.training_rows import by_task


def detector_card(
    trained: Any,
    detector: Any,
    source: str,
    backbone_sha: str,
    rule: Any,
    threshold: dict[str, float],
    data: Any,
    rows: tuple[pd.DataFrame, pd.DataFrame, pd.DataFrame],
    settings: Any,
    key: str,
) -> dict[str, Any]:
    """``detector.json``: the recipe's card, the backbone and its hash, the input rule, the
    example threshold, what the kept weights scored on validation, and the training run
    (``rows`` = the training rows, the validation rows and the validation part they were
    sampled from)."""
    train_rows, val_rows, val_part = rows
    done = trained.done
    return {
        **{k: v for k, v in trained.card.items() if k != "input_stats"},
        "backbone": detector.backbone,
        "backbone_source": source,
        "backbone_sha256": backbone_sha,
        "input_rule": rule.to_dict(),
        "threshold": threshold["threshold"],
        "trained_on": trained_parts(data.name, data.info),
        "validation": {
            **done.best,
            "threshold": threshold,
            "by_task": by_task(val_rows, trained.risk),
        },
        "training": {
            "data": data.name,
            "data_fingerprint": data.fingerprint,
            "data_sha256": {f: sha256_file(f) for f in data.files},
            "rows": len(train_rows),
            "validation_rows": len(val_rows),
            "validation_groups": int(val_part["group_id"].nunique()),
            "steps_done": done.steps_done,
            "steps_planned": done.steps_planned,
            "stopped_by": done.stopped_by,
            "cut_by_time_budget": done.stopped_by == "time_budget",
            "time_budget_min": settings.time_budget_min,
            "train_seconds": done.train_seconds,
            "resumed_from_step": done.resumed_from,
            "freeze_embeddings": detector.freeze_embeddings,
            "freeze_layers": detector.freeze_layers,
            "settings": asdict(settings),
            "plan_key": key,
        },
        "input_stats": trained.card["input_stats"],
    }


def _finite(value: Any) -> Any:
    return value if value is not None and np.isfinite(value) else None


def add_training_cells(
    result: StudyResult,
    row: str,
    card: dict[str, Any],
    done: Any,
    threshold: dict[str, float],
    promotion: Any,
) -> None:
    """The training, validation and inputs tables, and the loss and validation curves."""
    training = card["training"]
    for label in ("rows", "validation_rows", "validation_groups", "steps_done",
                  "steps_planned", "train_seconds"):  # fmt: skip
        result.add("training", row, label, training[label])
    result.add("training", row, "examples_seen", done.examples_seen)
    result.add("training", row, "stopped_by_time_budget", float(done.stopped_by == "time_budget"))
    for label in ("auroc", "ap", "token_precision", "token_recall", "token_f1", "step"):
        result.add("validation", "kept weights", label, _finite(done.best.get(label)))
    for label in ("threshold", "f1", "precision", "recall"):
        value = threshold[label]
        result.add("validation", "example threshold", label,
                   value if np.isfinite(value) else None)  # fmt: skip
    for task, values in card["validation"]["by_task"].items():
        for label, value in values.items():
            result.add("validation", f"task {task}", label, value)
    for part, stats in card["input_stats"].items():
        for label, value in stats.items():
            result.add("inputs", part, label, value)
    result.series["train_loss"] = [(h["step"], h["loss"]) for h in done.history]
    for name in ("auroc", "ap", "token_f1"):
        result.series[f"validation_{name}"] = [
            (e["step"], e[name]) for e in done.evaluations if np.isfinite(e[name])
        ]
    champion_ap = promotion.champion.ap if promotion.champion else None
    for label, value in (("ap", promotion.validation_ap),
                         ("answer_length_ap", promotion.baseline_ap),
                         ("champion_ap", champion_ap)):  # fmt: skip
        result.add("validation", "promotion", label, _finite(value))
