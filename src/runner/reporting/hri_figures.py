"""Figures of the HRI calibration studies, drawn from long-format cells alone.

Why: `make tables` redraws figures from ``cells.csv`` without recomputing, so every figure
here reads only cells: ROC and precision-recall curves per collection (one line per
aggregation), and AUROC / AP with intervals per (system x aggregation) for the
predicted-label study.
"""

from __future__ import annotations

from typing import Any

import numpy as np
import pandas as pd


def curves(
    cells: pd.DataFrame, table: str, xname: str, yname: str
) -> dict[str, tuple[np.ndarray, np.ndarray]]:
    """Curve points per row of ``table`` (columns ``<xname>@0000``, ``<yname>@0000``, ...)."""
    sub = cells[cells["table"] == table]
    out = {}
    for row, part in sub.groupby("row", sort=False):
        pts: dict[str, dict[int, float]] = {xname: {}, yname: {}}
        for rec in part.itertuples(index=False):
            name, _, index = str(rec.column).partition("@")
            if name in pts:
                pts[name][int(index)] = float(rec.value)
        order = sorted(pts[xname])
        out[str(row)] = (
            np.array([pts[xname][i] for i in order]),
            np.array([pts[yname][i] for i in order]),
        )
    return out


def roc_pr_figures(
    cells: pd.DataFrame,
    roc_table: str = "hri_roc_curve",
    pr_table: str = "hri_pr_curve",
    ranking_table: str = "hri_ranking",
    data_table: str = "hri_calibration_data",
    prefix: str = "hri_roc_pr_",
) -> dict[str, Any]:
    """One ROC + PR figure per collection (rows ``<collection>/<aggregation>``)."""
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    roc = curves(cells, roc_table, "fpr", "tpr")
    pr = curves(cells, pr_table, "recall", "precision")
    ranking = cells[cells["table"] == ranking_table]
    metric = {(r.row, r.column): r.value for r in ranking.itertuples(index=False)}
    data = cells[cells["table"] == data_table]
    pos = {r.row: r.value for r in data[data["column"] == "positives"].itertuples(index=False)}
    n_resp = {r.row: r.value for r in data[data["column"] == "responses"].itertuples(index=False)}
    rate = {row: pos[row] / float(n_resp[row]) for row in pos if row in n_resp}
    out = {}
    for coll in dict.fromkeys(k.rsplit("/", 1)[0] for k in roc):
        fig, (ax_roc, ax_pr) = plt.subplots(1, 2, figsize=(10, 4.5))
        for key, (x, yv) in roc.items():
            c, agg = key.rsplit("/", 1)
            if c != coll:
                continue
            auc = metric.get((coll, f"{agg}/AUROC"))
            ax_roc.plot(x, yv, label=agg if auc is None else f"{agg} (AUROC {auc:.3f})")
        for key, (x, yv) in pr.items():
            c, agg = key.rsplit("/", 1)
            if c != coll:
                continue
            ap = metric.get((coll, f"{agg}/AP"))
            ax_pr.step(x, yv, where="pre", label=agg if ap is None else f"{agg} (AP {ap:.3f})")
        ax_roc.plot([0, 1], [0, 1], color="grey", linestyle=":", linewidth=1)
        if coll in rate:
            ax_pr.axhline(
                rate[coll],
                color="grey",
                linestyle=":",
                linewidth=1,
                label=f"base rate {rate[coll]:.3f}",
            )
        ax_roc.set(xlabel="false positive rate", ylabel="true positive rate", title=f"ROC: {coll}")
        ax_pr.set(xlabel="recall", ylabel="precision", title=f"Precision-recall: {coll}")
        for ax in (ax_roc, ax_pr):
            ax.set(xlim=(0, 1), ylim=(0, 1.02))
        ax_roc.legend(fontsize=7, loc="lower right")
        ax_pr.legend(fontsize=7, loc="lower left")
        fig.tight_layout()
        out[f"{prefix}{coll.replace('/', '_')}"] = fig
    return out


def metric_grid_figure(cells: pd.DataFrame, table: str, metric: str, title: str) -> Any:
    """Dots with intervals: one row per table row (system), one colour per aggregation."""
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    sub = cells[(cells["table"] == table) & cells["column"].str.endswith(f"/{metric}")]
    rows = list(dict.fromkeys(sub["row"]))
    aggs = list(dict.fromkeys(c.rsplit("/", 1)[0] for c in sub["column"]))
    fig, ax = plt.subplots(figsize=(7.5, max(2.5, 0.45 * len(rows) + 1.2)))
    step = 0.8 / max(1, len(aggs))
    for j, agg in enumerate(aggs):
        part = sub[sub["column"] == f"{agg}/{metric}"].set_index("row")
        ys, xs, lo, hi = [], [], [], []
        for i, row in enumerate(rows):
            if row not in part.index or pd.isna(part.loc[row, "value"]):
                continue
            rec = part.loc[row]
            ys.append(i - 0.4 + step * (j + 0.5))
            xs.append(float(rec["value"]))
            low = rec["ci_low"] if not pd.isna(rec["ci_low"]) else rec["value"]
            high = rec["ci_high"] if not pd.isna(rec["ci_high"]) else rec["value"]
            lo.append(float(rec["value"]) - float(low))
            hi.append(float(high) - float(rec["value"]))
        ax.errorbar(xs, ys, xerr=[lo, hi], fmt="o", markersize=4, capsize=2, label=agg)
    if metric == "AUROC":
        ax.axvline(0.5, color="grey", linestyle=":", linewidth=1)
    ax.set_yticks(range(len(rows)))
    ax.set_yticklabels(rows, fontsize=7)
    ax.invert_yaxis()
    ax.set_xlim(0, 1)
    ax.set_xlabel(metric)
    ax.legend(fontsize=7, loc="lower left")
    ax.set_title(title, fontsize=9)
    fig.tight_layout()
    return fig
