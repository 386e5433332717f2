"""The operating report: what a gate does at the contract's budgets, with intervals.

Why one module: `operating_report` shows it for every configured gate and `fit_gate` stores
the chosen gate's part of it in the registered model's metadata, so the promise a model
carries is computed by the same code as the report a team reads. Scores are out of fold
under grouped CV; intervals resample context groups (`runner.evaluation.scopes`); with two
or more sources, leave-source-out rows (train on the others) and target-label rows (k
labelled rows of the source only, RQ5's sampler) show whether the ranking transfers.
"""

from __future__ import annotations

import base64
import re
from collections.abc import Mapping, Sequence
from functools import partial
from pathlib import Path
from typing import Any

import numpy as np
import pandas as pd
from sklearn.base import clone

from runner.errors import ConfigError, DataError
from runner.evaluation import scopes as rs
from runner.evaluation.bootstrap import group_bootstrap
from runner.evaluation.config import BootstrapConf
from runner.evaluation.metrics import (
    auroc,
    auroc_batched,
    average_precision,
    average_precision_batched,
)
from runner.evaluation.oof import score_gates
from runner.evaluation.operating import (
    accepted_risk,
    accepted_risk_batched,
    review_precision,
    review_precision_batched,
)
from runner.evaluation.splits import LeaveSourceOut, TargetAdaptation
from runner.frames import check_labels
from runner.results import StudyResult

COMBINED = rs.COMBINED
TITLES = {
    "operating": "Operating points out of fold (grouped CV), 95 % context-group bootstrap CI",
    "base_rate": "Rows and hallucinated share per scope",
    "leave_source_out": "Leave one source out: gate fitted on the other sources, 95 % CI",
    "target_labels": "Target labels only: fitted on k rows of the source (mean over seeds)",
}


NOT_COMPUTABLE = "not computable"
"""How a source's row is marked when its rows cannot give the number (the reason follows)."""


def pct(x: float) -> str:
    """A budget as a percent label (0.1 -> "10")."""
    return f"{100 * x:g}"


def review_col(rho: float) -> str:
    """The column name of review precision at budget `rho`."""
    return f"review precision@{pct(rho)}%"


def accept_col(alpha: float) -> str:
    """The column name of accepted risk at budget `alpha`."""
    return f"accepted risk@{pct(alpha)}%"


def require_labels(data: Any, what: str) -> None:
    """Fail before any scoring when the file has no labels or a single class."""
    if not data.info.get("labelled", True):
        raise DataError(
            f"{what} needs labelled rows: add a 'label' column (1/0, true/false, "
            "hallucinated/faithful or FAIL/PASS)",
            file=data.files[0] if data.files else None,
            row="header",
            field="label",
        )
    check_labels(
        data.frame["label"], name=f"data set {data.name}", need_all="AUROC/AP", error=DataError
    )


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
) -> rs.ScopeStats:
    """Rows ``<scope> / <gate>`` (Combined, then each task and Macro when tasks differ)."""
    metrics = metric_set(review_budgets, accept_budgets)
    stats = rs.bootstrap_scopes(scores, list(gates), boot, metrics=metrics)
    scopes = [COMBINED, *stats.tasks, rs.MACRO_ROW] if stats.by_task else [COMBINED]
    for scope in scopes:
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


def promise(stats: rs.ScopeStats, gate: str, review_budget: float, accept_budget: float) -> dict:
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
    blocked = {s: "one context group" for s in one_group_sources(frame)}
    loso = score_gates(gates, frame, LeaveSourceOut(column="source"), progress=progress)
    metrics = metric_set([review_budget], [accept_budget])
    for source in sorted(loso["source"].astype(str).unique()):
        sub = loso[loso["source"].astype(str) == source]
        if source not in blocked and sub["label"].nunique() < 2:
            blocked[source] = "one class"
        if source in blocked:
            for gate in gates:
                row = f"{source} / {gate} ({NOT_COMPUTABLE}: {blocked[source]})"
                result.add("leave_source_out", row, "AUROC", None)
            continue
        res = group_bootstrap(
            sub["label"].to_numpy(),
            {g: sub[g].to_numpy(float) for g in gates},
            sub["group_id"].to_numpy(),
            metrics,
            n_resamples=int(boot.n_resamples),
            seed=int(boot.seed),
            level=float(boot.level),
        )
        for gate in gates:
            for column in metrics:
                est = res.estimate(gate, column)
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
    rows = []
    for sub, rec in _target_records(sampler, frame, blocked):
        train, test = sub.iloc[rec.train_idx], sub.iloc[rec.test_idx]
        if train["label"].nunique() < 2 or test["label"].nunique() < 2:
            continue
        for name, gate in learned.items():
            s = clone(gate).fit(train, train["label"].to_numpy()).score(test)
            y = test["label"].to_numpy()
            rows.append(
                {
                    "source": rec.source,
                    "k": rec.k,
                    "k_used": rec.k_used,
                    "gate": name,
                    "AUROC": auroc(y, s),
                    "AP": average_precision(y, s),
                    review_col(review_budget): review_precision(y, s, review_budget),
                    **(
                        {accept_col(accept_budget): accepted_risk(y, s, accept_budget)}
                        if accept_budget > 0
                        else {}
                    ),
                }
            )
    if rows:
        table = pd.DataFrame(rows)
        value_cols = [c for c in table.columns if c not in ("source", "k", "k_used", "gate")]
        means = table.groupby(["source", "gate", "k"], sort=True)[[*value_cols, "k_used"]].mean()
        for (source, gate, k), row in means.iterrows():
            label = f"{source} / {gate} / k={k}"
            for column in value_cols:
                result.add("target_labels", label, column, float(row[column]))
            result.add("target_labels", label, "labels used", float(row["k_used"]))
    for source in sorted(blocked):
        for name in learned:
            row = f"{source} / {name} ({NOT_COMPUTABLE}: {blocked[source]})"
            result.add("target_labels", row, "AUROC", None)
    return blocked


def one_group_sources(frame: pd.DataFrame) -> list[str]:
    """Sources whose rows all share one context group.

    Why: a source-level number needs its groups resampled and split; with a single group
    there is no interval and no test set that leaves a pool, so such a source is marked
    rather than allowed to fail the whole report.
    """
    groups = frame.groupby(frame["source"].astype(str), sort=True)["group_id"].nunique()
    return [str(s) for s in groups[groups < 2].index]


def _target_records(
    sampler: TargetAdaptation, frame: pd.DataFrame, blocked: dict[str, str]
) -> list[tuple[pd.DataFrame, Any]]:
    """(the source's rows, record) for every target-label run of each computable source.

    Each source is sampled on its own rows: the test sets and samples depend only on the
    seed, the source and its rows in order, so they are the rows the whole-frame sampler
    would draw. A source the sampler refuses is added to `blocked` with the reason.
    """
    out = []
    values = frame["source"].astype(str)
    for source in sorted(values.unique()):
        if source in blocked:
            continue
        sub = frame[values == source]
        try:
            records = sampler.records(sub)
        except ConfigError:
            blocked[source] = "too few rows of each class for a test set and a labelled pool"
            continue
        out += [(sub, rec) for rec in records]
    return out


def render_markdown(result: StudyResult, out_dir: Path, header: Sequence[str]) -> str:
    """``report.md``: the header lines, every table, runtime and the figures (relative)."""
    from runner.reporting.tables import pivot_table, to_markdown

    cells = result.cells_frame()
    parts = [*header, ""]
    for table in dict.fromkeys(cells["table"]):
        if table.startswith("curve_"):
            continue
        parts += [to_markdown(pivot_table(cells, table), result.titles.get(table, table)), ""]
    timing = result.runtime.get("gates") or {}
    if timing:
        parts += ["**Cost: ms per example from raw text (median of timed runs)**", ""]
        parts += ["| gate | ms/example | rows timed |", "|---|---|---|"]
        for gate, t in timing.items():
            parts.append(f"| {gate} | {t['median_ms_per_example']:.3f} | {t['rows']} |")
        parts.append("")
    for png in sorted((out_dir / "figures").glob("*.png")):
        parts += [f"![{png.stem}](figures/{png.name})", ""]
    return "\n".join(parts)


def render_html(markdown: str, out_dir: Path, title: str) -> str:
    """``report.html``: the Markdown rendered, figures embedded inline as data URIs."""
    from markdown_it import MarkdownIt

    def inline(match: re.Match) -> str:
        data = base64.b64encode((out_dir / match["path"]).read_bytes()).decode()
        return f"![{match['alt']}](data:image/png;base64,{data})"

    text = re.sub(r"!\[(?P<alt>[^\]]*)\]\((?P<path>figures/[^)]+\.png)\)", inline, markdown)
    body = MarkdownIt("commonmark").enable("table").render(text)
    style = (
        "body{font-family:sans-serif;max-width:60em;margin:2em auto}"
        "table{border-collapse:collapse}td,th{border:1px solid #ccc;padding:2px 6px}"
        "img{max-width:100%}"
    )
    return (
        f"<!doctype html>\n<html><head><meta charset='utf-8'><title>{title}</title>"
        f"<style>{style}</style></head><body>\n{body}</body></html>\n"
    )


def as_array(values: Any) -> np.ndarray:
    return np.asarray(values, dtype=np.float64)
