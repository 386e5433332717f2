"""Machinery shared by the RAGScope studies: score gates out of fold, bootstrap by scope.

Why one module: RQ1–RQ4 report the same scopes (each task, the macro average over tasks,
and the pooled "Combined" queue) with the same interval rules, so the scope logic, the
bootstrap calls and the runtime measurement are written once.

Scopes and intervals. "Combined" resamples all context groups with replacement (the
paper's pooled bootstrap); each task resamples that task's groups; "Macro" is the mean of
the per-task metrics on the same task-stratified resample. Paired deltas compare two gates
on the same resamples. Zero-shot gates are scored once on every row; gates that fit
(TF-IDF, logistic) are scored out of fold by `runner.evaluation.oof.out_of_fold`.
"""

from __future__ import annotations

import logging
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any

import numpy as np
import pandas as pd
from hydra.utils import instantiate
from omegaconf import DictConfig

from runner.evaluation.bootstrap import (
    MACRO,
    POOLED,
    BootstrapResult,
    Estimate,
    group_bootstrap,
    standard_metrics,
)
from runner.evaluation.oof import out_of_fold
from runner.evaluation.timing import measure_ms_per_example
from runner.features import lexical_features
from runner.results import StudyResult

log = logging.getLogger(__name__)

COMBINED = "Combined"
MACRO_ROW = "Macro"
METRIC_LABELS = {
    "auroc": "AUROC",
    "ap": "AP",
    "review_precision": "review precision",
    "accepted_risk": "accepted risk",
}
ID_COLUMNS = ["example_id", "group_id", "task", "source", "label"]
TASK_ORDER = ("QA", "Summary", "Data2txt")  # RAGTruth's order in the paper's tables


def with_features(frame: pd.DataFrame, cache_dir: str | None) -> pd.DataFrame:
    """The frame plus its lexical feature columns, computed once (and cached on disk)."""
    feats = lexical_features(frame, cache_dir=cache_dir)
    overlap = [c for c in feats.columns if c in frame.columns]
    base = frame.drop(columns=overlap)
    return pd.concat([base, feats], axis=1)


def score_gates(
    gates: Mapping[str, Any],
    frame: pd.DataFrame,
    splitter: Any,
    progress: bool = True,
    group_col: str = "group_id",
) -> pd.DataFrame:
    """Per-example risk of every gate: out of fold for gates that fit, direct otherwise.

    `group_col` is the unit no fold may split (checked on every fold); `example_id` makes
    every row its own unit (a row-level CV). Returns the id columns, `fold` and one column
    per gate, in the frame's row order.
    """
    scores = out_of_fold(dict(gates), frame, splitter, progress=progress, group_col=group_col)
    ids = frame[[c for c in ID_COLUMNS if c in frame.columns]].reset_index(drop=True)
    merged = ids.merge(scores, on="example_id", how="left", validate="one_to_one")
    missing = merged[list(gates)].isna().any(axis=1)
    if missing.any():
        raise ValueError(
            f"{int(missing.sum())} rows got no out-of-fold score "
            f"(first: {merged.loc[missing, 'example_id'].iloc[0]})"
        )
    return merged


@dataclass(frozen=True)
class ScopeStats:
    """Bootstrap results for Combined (all groups) and per task + Macro (task-stratified)."""

    pooled: BootstrapResult
    by_task: BootstrapResult | None
    tasks: tuple[str, ...]

    def scopes(self) -> list[str]:
        """Row labels in table order: each task, Macro, Combined."""
        return [*self.tasks, MACRO_ROW, COMBINED] if self.by_task else [COMBINED]

    def _locate(self, scope: str) -> tuple[BootstrapResult, str]:
        if scope == COMBINED:
            return self.pooled, POOLED
        if self.by_task is None:
            raise KeyError(f"scope {scope!r}: only one task, no per-task bootstrap")
        return self.by_task, MACRO if scope == MACRO_ROW else scope

    def estimate(self, gate: str, metric: str, scope: str) -> Estimate:
        """Point value and interval of a gate's metric in a scope."""
        res, key = self._locate(scope)
        return res.estimate(gate, metric, key)

    def delta(self, gate: str, baseline: str, metric: str, scope: str) -> Estimate:
        """Paired difference gate − baseline, on the same resamples."""
        res, key = self._locate(scope)
        return res.delta(gate, baseline, metric, key)


def bootstrap_scopes(
    scores: pd.DataFrame,
    gates: Sequence[str],
    boot: DictConfig,
    metrics: Mapping[str, Any] | None = None,
) -> ScopeStats:
    """Group-bootstrap every gate in every scope with one set of resamples per call."""
    metrics = dict(metrics or standard_metrics())
    y = scores["label"].to_numpy()
    s = {g: scores[g].to_numpy(dtype=float) for g in gates}
    groups = scores["group_id"].to_numpy()
    kwargs = {
        "n_resamples": int(boot.n_resamples),
        "seed": int(boot.seed),
        "level": float(boot.level),
        "order_key": scores["example_id"].to_numpy(),
    }
    pooled = group_bootstrap(y, s, groups, metrics, **kwargs)
    tasks = tuple(task_order(scores))
    by_task = None
    if len(tasks) > 1:
        by_task = group_bootstrap(y, s, groups, metrics, strata=scores["task"].to_numpy(), **kwargs)
    return ScopeStats(pooled=pooled, by_task=by_task, tasks=tasks)


def add_scope_table(
    result: StudyResult,
    table: str,
    stats: ScopeStats,
    gates: Sequence[str],
    metrics: Sequence[str] = ("auroc", "ap"),
) -> None:
    """Rows = scopes, columns = `<gate>/<metric>`, each with its 95 % interval."""
    for scope in stats.scopes():
        for gate in gates:
            for metric in metrics:
                est = stats.estimate(gate, metric, scope)
                result.add(
                    table,
                    scope,
                    f"{gate}/{METRIC_LABELS[metric]}",
                    est.point,
                    ci=(est.low, est.high),
                )


def add_bootstrap_info(result: StudyResult, stats: ScopeStats) -> None:
    """Record resample counts and redraws so a reader can judge the intervals."""
    info = {"combined": _boot_info(stats.pooled)}
    if stats.by_task is not None:
        info["by_task"] = _boot_info(stats.by_task)
    result.extra["bootstrap.json"] = info


def _boot_info(res: BootstrapResult) -> dict[str, Any]:
    return {
        "n_resamples": res.n_resamples,
        "level": res.level,
        "seed": res.seed,
        "n_groups": res.n_groups,
        "n_rows": res.n_rows,
        "n_redrawn": res.n_redrawn,
    }


def build_gates(cfg: DictConfig) -> dict[str, Any]:
    """Instantiate the experiment's gates, keeping config order."""
    return {name: instantiate(node, _convert_="all") for name, node in cfg.gates.items()}


def gate_runtime(
    gates: Mapping[str, Any], frame: pd.DataFrame, splitter: Any, timing_rows: int, repeats: int
) -> dict[str, Any]:
    """ms/example of complete inference for each gate, from raw text.

    Features are recomputed from the raw question/context/answer (no cache), so the
    figure is what a deployment pays per example. Fitted gates are fitted on the first
    training fold (not timed) and timed scoring that fold's held-out rows.
    """
    from sklearn.base import clone

    fold = next(iter(splitter.folds(frame)))
    raw_cols = [
        c
        for c in [
            "example_id",
            "group_id",
            "task",
            "source",
            "question",
            "context",
            "answer",
            "label",
        ]
        if c in frame.columns
    ]
    test_raw = frame.iloc[fold.test_idx][raw_cols].reset_index(drop=True)
    if timing_rows and len(test_raw) > timing_rows:
        test_raw = test_raw.iloc[:timing_rows]
    train = frame.iloc[fold.train_idx]
    out: dict[str, Any] = {}
    for name, gate in gates.items():
        fitted = gate
        if getattr(gate, "needs_fit", False):
            fitted = clone(gate).fit(train, train["label"].to_numpy())
        timing = measure_ms_per_example(
            lambda g=fitted: g.score(test_raw), len(test_raw), repeats=repeats, warmup=1
        )
        out[name] = {
            **timing,
            "rows": len(test_raw),
            "includes": "feature extraction from raw text + scoring",
        }
    return out


def check_binary_labels(frame: pd.DataFrame, name: str) -> None:
    """Fail before any work when the labels cannot support AUROC/AP."""
    counts = frame["label"].value_counts().to_dict()
    if set(counts) != {0, 1}:
        raise ValueError(f"data set {name}: labels {counts}; AUROC/AP need both classes")


def task_order(frame: pd.DataFrame) -> list[str]:
    """Tasks in the paper's order (QA, Summary, Data2txt), any others after, sorted."""
    present = set(frame["task"].astype(str))
    known = [t for t in TASK_ORDER if t in present]
    return known + sorted(present - set(known))


def as_float(values: Any) -> np.ndarray:
    """Scores as a float64 array (bootstrap and metrics insist on it)."""
    return np.asarray(values, dtype=np.float64)
