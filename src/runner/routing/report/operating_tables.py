"""The operating report's tables: what a gate does at the contract's budgets, with intervals.

Why one module: `operating_report` shows it for every configured gate and `fit_gate` stores
the chosen gate's part of it in the registered model's metadata, so the promise a model
carries is computed by the same code as the report a team reads. Scores are out of fold
under grouped CV; intervals resample context groups (`runner.evaluation.scopes`); with two
or more sources, leave-source-out rows (train on the others) and target-label rows (k
labelled rows of the source only, RQ5's sampler) show whether the ranking transfers,
computed by the source-shift engine RQ5 uses (`runner.evaluation.source_shift`). This
module lays those numbers out as the report's tables (cells); the documents are drawn in
`runner.reporting.operating_report_doc`.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from functools import partial
from typing import Any

import pandas as pd

from runner.evaluation import (
    BootstrapConf,
    LeaveSourceOut,
    TargetAdaptation,
    accepted_risk,
    accepted_risk_batched,
    accepted_risk_grid,
    auroc,
    auroc_batched,
    average_precision,
    average_precision_batched,
    review_precision,
    review_precision_batched,
    review_precision_grid,
    scopes,
    score_gates,
    source_shift,
)
from runner.results import StudyResult

COMBINED = scopes.COMBINED
TITLES = {
    "operating": "Operating points out of fold (grouped CV), 95 % context-group bootstrap CI",
    "base_rate": "Rows and hallucinated share per scope",
    "leave_source_out": "Leave one source out: gate fitted on the other sources, 95 % CI",
    "target_labels": "Target labels only: fitted on k rows of the source (mean over seeds)",
}


REVIEW_GRID = [i / 100 for i in range(5, 51, 5)]
ACCEPT_GRID = [i / 100 for i in range(10, 95, 5)]


def add_curves(result: StudyResult, scores: pd.DataFrame, names: Sequence[str]) -> None:
    """Each scorer's review precision by reviewed share and accepted risk by accepted share,
    on `REVIEW_GRID` and `ACCEPT_GRID` (the report's curve figure)."""
    y = scores["label"].to_numpy()
    for gate in names:
        s = scores[gate].to_numpy(float)
        for r, v in zip(REVIEW_GRID, review_precision_grid(y, s, REVIEW_GRID), strict=True):
            result.add("curve_review", gate, pct(r), float(v))
        for a, v in zip(ACCEPT_GRID, accepted_risk_grid(y, s, ACCEPT_GRID), strict=True):
            result.add("curve_accept", gate, pct(a), float(v))


def pct(x: float) -> str:
    """A budget as a percent label (0.1 -> "10")."""
    return f"{100 * x:g}"


def review_col(rho: float) -> str:
    """The column name of review precision at budget `rho`."""
    return f"review precision@{pct(rho)}%"


def accept_col(alpha: float) -> str:
    """The column name of accepted risk at budget `alpha`."""
    return f"accepted risk@{pct(alpha)}%"


def metric_set(review_budgets: Sequence[float], accept_budgets: Sequence[float]) -> dict:
    """Batched metrics keyed by their column name: AUROC, AP, every budget."""
    metrics: dict[str, Any] = {"AUROC": auroc_batched, "AP": average_precision_batched}
    for r in review_budgets:
        metrics[review_col(r)] = partial(review_precision_batched, rho=r)
    for a in accept_budgets:
        if a > 0:
            metrics[accept_col(a)] = partial(accepted_risk_batched, alpha=a)
    return metrics


def add_operating_table(
    result: StudyResult,
    scores: pd.DataFrame,
    gates: Sequence[str],
    boot: BootstrapConf,
    review_budgets: Sequence[float],
    accept_budgets: Sequence[float],
) -> scopes.ScopeStats:
    """Rows ``<scope> / <gate>`` (Combined, then each task and Macro when tasks differ)."""
    metrics = metric_set(review_budgets, accept_budgets)
    stats = scopes.bootstrap_scopes(scores, list(gates), boot, metrics=metrics)
    rows = [COMBINED, *stats.tasks, scopes.MACRO_ROW] if stats.by_task else [COMBINED]
    for scope in rows:
        for gate in gates:
            for column in metrics:
                est = stats.estimate(gate, column, scope)
                result.add("operating", f"{scope} / {gate}", column, est.point, (est.low, est.high))
    for scope in [COMBINED, *stats.tasks] if stats.by_task else [COMBINED]:
        sub = scores if scope == COMBINED else scores[scores["task"] == scope]
        result.add("base_rate", scope, "rows", len(sub))
        result.add("base_rate", scope, "groups", sub["group_id"].nunique())
        result.add("base_rate", scope, "hallucinated share", float(sub["label"].mean()))
    return stats


def promise(
    stats: scopes.ScopeStats, gate: str, review_budget: float, accept_budget: float
) -> dict:
    """The chosen gate's Combined OOF numbers at the contract's budgets (model metadata)."""
    out = {}
    columns = ["AUROC", "AP", review_col(review_budget)]
    if accept_budget > 0:
        columns.append(accept_col(accept_budget))
    for column in columns:
        est = stats.estimate(gate, column, COMBINED)
        out[column] = {"value": est.point, "ci_low": est.low, "ci_high": est.high}
    return out


def add_source_shift(
    result: StudyResult,
    frame: pd.DataFrame,
    gates: Mapping[str, Any],
    boot: BootstrapConf,
    review_budget: float,
    accept_budget: float,
    ks: Sequence[int],
    n_seeds: int,
    seed: int,
    progress: bool,
) -> dict[str, str]:
    """Leave-source-out rows for every gate, target-label rows for gates that fit.

    A source whose rows cannot give a number (one context group, one class, a pool too
    small for a stratified test set) does not stop the report: its rows are marked
    "not computable: <why>" and every other source is reported. Returns ``{source: why}``
    for the marked sources.
    """
    blocked = {s: "one context group" for s in source_shift.one_group_sources(frame)}
    loso = score_gates(gates, frame, LeaveSourceOut(column="source"), progress=progress)
    metrics = metric_set([review_budget], [accept_budget])
    sources = sorted(loso["source"].astype(str).unique())
    for source in sources:
        sub = loso[loso["source"].astype(str) == source]
        if source not in blocked and sub["label"].nunique() < 2:
            blocked[source] = "one class"
    computable = [s for s in sources if s not in blocked]
    by_source = source_shift.bootstrap_by_source(loso, list(gates), computable, metrics, boot)
    for source in sources:
        if source in blocked:
            for gate in gates:
                row = f"{source} / {gate} ({source_shift.NOT_COMPUTABLE}: {blocked[source]})"
                result.add("leave_source_out", row, "AUROC", None)
            continue
        for gate in gates:
            for column in metrics:
                est = by_source[source].estimate(gate, column)
                result.add(
                    "leave_source_out", f"{source} / {gate}", column, est.point, (est.low, est.high)
                )
    learned = {n: g for n, g in gates.items() if getattr(g, "needs_fit", False)}
    if not learned or not ks:
        return blocked
    sampler = TargetAdaptation(
        test_fraction=0.2,
        ks=list(ks),
        n_seeds=n_seeds,
        seed=seed,
        column="source",
        group_col="group_id",
    )
    samples, refused = source_shift.samples_by_source(sampler, frame, skip=blocked)
    blocked.update(refused)
    point = {"AUROC": auroc, "AP": average_precision}
    point[review_col(review_budget)] = partial(review_precision, rho=review_budget)
    if accept_budget > 0:
        point[accept_col(accept_budget)] = partial(accepted_risk, alpha=accept_budget)
    runs, _ = source_shift.fit_target_samples(learned, samples, point, skip_single_class=True)
    if len(runs):
        value_cols = list(point)
        means = runs.groupby(["source", "gate", "k"], sort=True)[[*value_cols, "k_used"]].mean()
        for (source, gate, k), row in means.iterrows():
            label = f"{source} / {gate} / k={k}"
            for column in value_cols:
                result.add("target_labels", label, column, float(row[column]))
            result.add("target_labels", label, "labels used", float(row["k_used"]))
    for source in sorted(blocked):
        for name in learned:
            row = f"{source} / {name} ({source_shift.NOT_COMPUTABLE}: {blocked[source]})"
            result.add("target_labels", row, "AUROC", None)
    return blocked
