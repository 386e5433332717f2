"""Which rows train and validate a detector, and the key of a training plan.

Why its own module: every recipe (`runner.training.recipes`), the learning-curve script and
the similarity-gate measurement hold out the same context groups for the same seed, so the
split, the row samples and the plan key are defined once here, as is the check that the
loaded data can train a detector at all.
"""

from __future__ import annotations

import hashlib
import json
from dataclasses import asdict
from typing import Any

import numpy as np
import pandas as pd

from runner.errors import ConfigError


def grouped_split(
    frame: pd.DataFrame, share: float, seed: int
) -> tuple[pd.DataFrame, pd.DataFrame]:
    """(train, validation): whole context groups go to validation, about `share` of rows."""
    if not 0.0 < share < 1.0:
        raise ConfigError(f"train.val_share must be in (0, 1), got {share}")
    groups = np.array(sorted(frame["group_id"].astype(str).unique()))
    rng = np.random.default_rng([seed, 1])
    held = set(groups[rng.permutation(len(groups))[: max(1, round(share * len(groups)))]])
    mask = frame["group_id"].astype(str).isin(held).to_numpy()
    return frame[~mask].reset_index(drop=True), frame[mask].reset_index(drop=True)


def sample_rows(frame: pd.DataFrame, n: int | None, seed: int, salt: int) -> pd.DataFrame:
    """`n` rows drawn without replacement, in their original order (all rows when None)."""
    if n is None or n >= len(frame):
        return frame
    rows = np.sort(np.random.default_rng([seed, salt]).choice(len(frame), n, replace=False))
    return frame.iloc[rows].reset_index(drop=True)


def by_task(rows: pd.DataFrame, risk: np.ndarray) -> dict[str, dict[str, float | None]]:
    """Validation AUROC / AP of the kept weights within each task (None: one class)."""
    from sklearn.metrics import average_precision_score, roc_auc_score

    out = {}
    for task in sorted(rows["task"].astype(str).unique()):
        mask = (rows["task"].astype(str) == task).to_numpy()
        y = rows["label"].to_numpy(int)[mask]
        two = len(set(y.tolist())) == 2
        out[task] = {
            "rows": int(mask.sum()),
            "auroc": float(roc_auc_score(y, risk[mask])) if two else None,
            "ap": float(average_precision_score(y, risk[mask])) if two else None,
        }
    return out


def plan_key(parts: dict) -> str:
    """A short hash of everything that decides the trained weights."""
    text = json.dumps(parts, sort_keys=True, default=str)
    return hashlib.sha256(text.encode()).hexdigest()[:16]


def check_training_data(data: Any) -> None:
    """The loaded data can train a token detector: it has answer spans and is not a test
    split. Checked first thing after the load, before a tokenizer or weights are read."""
    if "spans" not in data.frame.columns:
        raise ConfigError(
            f"experiment=train_detector needs span labels (which characters of an answer are "
            f"unsupported); data set {data.name!r} has only a response label: train on "
            f"RAGTruth (the default, or dataset=ragtruth_jsonl dataset.path=DIR "
            f"dataset.split=train)"
        )
    if str((data.info or {}).get("split")) == "test":
        raise ConfigError(
            f"experiment=train_detector never trains on a test split: data set {data.name!r} "
            f"was loaded with split=test; set dataset.split=train"
        )


def plan_settings(detector: Any) -> dict[str, Any]:
    """The detector settings that decide the weights; the token recipe's key leaves out
    the sentence recipe's fields, so its checkpoints and numbers stay those of before."""
    settings = asdict(detector)
    if detector.recipe == "token":
        settings = {k: v for k, v in settings.items() if k not in ("recipe", "aggregate")}
    return settings
