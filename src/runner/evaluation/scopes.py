"""Scores by scope: each task, the macro average over tasks, and the pooled "Combined" queue.

Why one module: every RAGScope-style table (RQ1–RQ4, the operating report, a fitted
gate's promises) reports the same scopes with the same interval rules, so the scope logic
and the bootstrap calls are written once.

Scopes and intervals. "Combined" resamples all context groups with replacement (the
paper's pooled bootstrap); each task resamples that task's groups; "Macro" is the mean of
the per-task metrics on the same task-stratified resample. Paired deltas compare two gates
on the same resamples (`runner.evaluation.bootstrap`).
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any

import pandas as pd

from runner.evaluation.bootstrap import (
    MACRO,
    POOLED,
    BootstrapResult,
    Estimate,
    group_bootstrap,
    standard_metrics,
)
from runner.evaluation.config import BootstrapConf
from runner.results import StudyResult

COMBINED = "Combined"
MACRO_ROW = "Macro"
METRIC_LABELS = {
    "auroc": "AUROC",
    "ap": "AP",
    "review_precision": "review precision",
    "accepted_risk": "accepted risk",
}
TASK_ORDER = ("QA", "Summary", "Data2txt")  # RAGTruth's order in the paper's tables


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
    boot: BootstrapConf,
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


def add_delta_table(
    result: StudyResult,
    table: str,
    stats: ScopeStats,
    pairs: Sequence[tuple[str, str]],
    metrics: Sequence[str] = ("auroc", "ap"),
) -> None:
    """Rows = scopes, columns = `<gate> - <baseline>/<metric>`: each pair's paired
    difference on the same resamples, with its 95 % interval."""
    for gate, base in pairs:
        for scope in stats.scopes():
            for metric in metrics:
                est = stats.delta(gate, base, metric, scope)
                column = f"{gate} - {base}/{METRIC_LABELS[metric]}"
                result.add(table, scope, column, est.point, ci=(est.low, est.high))


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


def task_order(frame: pd.DataFrame) -> list[str]:
    """Tasks in the paper's order (QA, Summary, Data2txt), any others after, sorted."""
    present = set(frame["task"].astype(str))
    known = [t for t in TASK_ORDER if t in present]
    return known + sorted(present - set(known))
