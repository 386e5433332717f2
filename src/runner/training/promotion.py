"""Whether a newly trained detector becomes ``@champion``: never promote a worse model.

Why: every study that names ``models:/ragtruth_detector@champion`` picks up whatever the
alias points at, so a training run that came out worse (a smaller sample, an unlucky seed,
a run a time budget cut short) must not move it. A new model is promoted only when its
validation AP beats both

- the answer-length baseline (AP of the answer's word count on the same validation rows:
  on RAGTruth a detector that learned little ranks answers by length, docs/detector.md), and
- the current champion, scored on THIS run's validation rows through the same code path a
  user's study takes (`LettuceDetectVerifier` loading its ``models:/`` URI), unless the
  champion's card (``detector.json``) records the identical validation rows (same
  `rows_fingerprint`): then its recorded AP is the like-for-like number.

Otherwise the version is registered under `CANDIDATE_ALIAS` and the reason is one line. A
rerun of a finished training (same plan key, same weights sha256) reuses the registered
version instead of adding a duplicate (`existing_version`).
"""

from __future__ import annotations

import hashlib
import json
import logging
import math
from dataclasses import asdict, dataclass
from pathlib import Path
from typing import Any

import numpy as np
import pandas as pd

log = logging.getLogger(__name__)

CANDIDATE_ALIAS = "candidate"
"""Alias of a registered version that did not beat the champion or the baseline."""


def rows_fingerprint(rows: pd.DataFrame) -> str:
    """sha256 of the validation rows: ids, labels and the texts scored (order included)."""
    h = hashlib.sha256()
    for row in rows[["example_id", "question", "context", "answer", "label"]].itertuples(
        index=False
    ):
        h.update(json.dumps([str(v) if not isinstance(v, int) else v for v in row]).encode())
        h.update(b"\n")
    return h.hexdigest()


def ap_or_nan(y: np.ndarray, score: np.ndarray) -> float:
    """AP of `score` for labels `y`; NaN when the rows hold one class (AP undefined)."""
    from sklearn.metrics import average_precision_score

    y = np.asarray(y, dtype=int)
    if len(set(y.tolist())) < 2:
        return float("nan")
    return float(average_precision_score(y, np.asarray(score, dtype=float)))


def answer_length_ap(rows: pd.DataFrame) -> float:
    """AP of the answer's word count on `rows`: the baseline a detector must beat."""
    words = rows["answer"].astype(str).str.split().str.len().to_numpy(float)
    return ap_or_nan(rows["label"].to_numpy(int), words)


def verifier_ap(model: str, rows: pd.DataFrame, threads: int | None = None) -> float:
    """AP of a detector on `rows`, scored as a user's study scores it: `LettuceDetectVerifier`
    over `model` (a folder or a ``models:/`` URI; its ``detector.json`` sets the input rule),
    float32, the settings of the registered pyfunc."""
    from runner.verifiers import LettuceDetectVerifier

    verifier = LettuceDetectVerifier(
        model=model, batch_size=16, evidence="full_context", threads=threads
    )
    verifier.check_sources()
    risk = verifier.score(rows.reset_index(drop=True))
    verifier.release()
    return ap_or_nan(rows["label"].to_numpy(int), risk)


@dataclass
class Champion:
    """The version an alias points at and its AP on this run's validation rows."""

    version: str
    ap: float
    how: str  # "recorded": its card has the same rows; "scored": scored on them here


@dataclass
class Promotion:
    """The decision for a new version: the alias it gets and the one-line reason."""

    alias: str
    reason: str
    validation_ap: float
    baseline_ap: float
    validation_rows: int
    validation_rows_sha256: str
    champion: Champion | None = None
    reused_version: str | None = None

    def to_dict(self) -> dict[str, Any]:
        """JSON-ready (the card's ``promotion`` block; NaN as None)."""
        out = asdict(self)
        for key in ("validation_ap", "baseline_ap"):
            if not math.isfinite(out[key]):
                out[key] = None
        return out


def _client(tracking_uri: str) -> Any:
    import mlflow

    return mlflow.MlflowClient(tracking_uri=tracking_uri, registry_uri=tracking_uri)


def alias_version(tracking_uri: str, name: str, alias: str) -> str | None:
    """The version `alias` points at (None: no such model or alias)."""
    from mlflow.exceptions import MlflowException

    try:
        return str(_client(tracking_uri).get_model_version_by_alias(name, alias).version)
    except MlflowException:
        return None


def existing_version(
    tracking_uri: str, name: str, plan_key: str, weights_sha256: str
) -> str | None:
    """A registered version of `name` with the same plan key and weights (a finished
    training run again): the newest such version, or None."""
    from mlflow.exceptions import MlflowException

    try:
        versions = _client(tracking_uri).search_model_versions(f"name='{name}'")
    except MlflowException:
        return None
    same = [
        int(v.version)
        for v in versions
        if v.tags.get("plan_key") == plan_key and v.tags.get("weights_sha256") == weights_sha256
    ]
    return str(max(same)) if same else None


def champion_on(
    tracking_uri: str,
    name: str,
    alias: str,
    rows: pd.DataFrame,
    rows_sha256: str,
    threads: int | None = None,
) -> Champion | None:
    """The current `alias` version's AP on `rows` (None when the alias points nowhere).

    Its recorded AP when its card holds the same validation rows; else scored here by the
    verifier loading ``models:/<name>/<version>`` (the version the alias points at now).
    """
    from runner.verifiers import read_detector_card, registered_folder

    version = alias_version(tracking_uri, name, alias)
    if version is None:
        return None
    uri = f"models:/{name}/{version}"
    card = read_detector_card(registered_folder(uri)) or {}
    recorded = card.get("promotion") or {}
    if (
        recorded.get("validation_rows_sha256") == rows_sha256
        and recorded.get("validation_ap") is not None
    ):
        return Champion(version, float(recorded["validation_ap"]), "recorded")
    log.info("scoring @%s (version %s) on this run's %d validation rows", alias, version, len(rows))
    return Champion(version, verifier_ap(uri, rows, threads), "scored")


def choose_alias(
    ap: float,
    baseline_ap: float,
    champion: Champion | None,
    rows: int,
    alias: str = "champion",
) -> tuple[str, str]:
    """(alias, one-line reason): `alias` only when `ap` beats the baseline and the champion."""
    where = f"on the same {rows} validation rows"
    if not math.isfinite(ap):
        return CANDIDATE_ALIAS, (
            f"not promoted to @{alias}: validation AP is undefined (the {rows} validation rows "
            f"hold one class); registered as @{CANDIDATE_ALIAS}"
        )
    beaten_by = []
    if not ap > baseline_ap:
        beaten_by.append(f"the answer-length baseline's {baseline_ap:.4f}")
    if champion is not None and not ap > champion.ap:
        beaten_by.append(f"@{alias} (version {champion.version}, {champion.how}) {champion.ap:.4f}")
    if beaten_by:
        return CANDIDATE_ALIAS, (
            f"not promoted to @{alias}: validation AP {ap:.4f} does not beat "
            f"{' nor '.join(beaten_by)} {where}; registered as @{CANDIDATE_ALIAS}"
        )
    than = f" and @{alias} (version {champion.version}) {champion.ap:.4f}" if champion else ""
    return alias, (
        f"promoted to @{alias}: validation AP {ap:.4f} beats the answer-length baseline's "
        f"{baseline_ap:.4f}{than} {where}"
    )


def promote(
    store: Any,
    detector: Any,
    threads: int | None,
    val_rows: pd.DataFrame,
    best_dir: str | Path,
    plan: str,
) -> Promotion:
    """Which alias newly trained weights get, and why: `choose_alias` against the answer-length
    baseline and the current champion on the same validation rows; a rerun that reproduced
    a registered version reuses it (``store``: the run's tracking settings, or None)."""
    from runner.data import sha256_file

    rows_sha = rows_fingerprint(val_rows)
    ap = verifier_ap(str(best_dir), val_rows, threads)
    baseline = answer_length_ap(val_rows)
    champion, reused = None, None
    if store is not None and store.enabled and store.uri:
        weights = sha256_file(Path(best_dir) / "model.safetensors")
        reused = existing_version(store.uri, detector.model_name, plan, weights)
        current = alias_version(store.uri, detector.model_name, detector.alias)
        if reused is not None:
            log.info(
                "rerun of a finished training: version %s of %s has the same plan_key %s "
                "and weights sha256; reused, no new version registered",
                reused, detector.model_name, plan,
            )  # fmt: skip
        if reused is not None and reused == current:
            alias = detector.alias
            reason = f"@{alias} stays version {reused}: this run reproduced it"
        else:
            champion = champion_on(
                store.uri, detector.model_name, detector.alias, val_rows, rows_sha, threads
            )
            alias, reason = choose_alias(ap, baseline, champion, len(val_rows), detector.alias)
    else:
        alias, reason = choose_alias(ap, baseline, None, len(val_rows), detector.alias)
    (log.info if alias == detector.alias else log.warning)("%s", reason)
    return Promotion(alias, reason, ap, baseline, len(val_rows), rows_sha, champion, reused)
