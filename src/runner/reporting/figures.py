"""Figures drawn from long-format cells only, so `make tables` redraws them unchanged.

Each function takes the cells frame (columns table,row,column,value,ci_low,ci_high) and
returns a matplotlib Figure. Nothing here computes a metric.
"""

from __future__ import annotations

from types import ModuleType
from typing import TYPE_CHECKING

import numpy as np
import pandas as pd

if TYPE_CHECKING:
    from matplotlib.figure import Figure


def pyplot() -> ModuleType:
    """matplotlib's pyplot on the file-only Agg backend, imported when a figure is drawn: a
    run that draws none (route, audit, a config error) starts without it (about 0.4 s)."""
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    return plt


def _table(cells: pd.DataFrame, table: str) -> pd.DataFrame:
    sub = cells[cells["table"] == table]
    if sub.empty:
        raise ValueError(f"figure needs table {table!r}, which has no cells")
    return sub


def _errs(sub: pd.DataFrame) -> np.ndarray | None:
    if sub["ci_low"].isna().any() or sub["ci_high"].isna().any():
        return None
    v = sub["value"].to_numpy(float)
    return np.vstack([v - sub["ci_low"].to_numpy(float), sub["ci_high"].to_numpy(float) - v])


def scope_bars(
    cells: pd.DataFrame, table: str, gates: list[str] | None = None, scopes: list[str] | None = None
) -> Figure:
    """Grouped bars: AUROC and AP per scope, one bar per gate, with CIs (Figure 2)."""
    sub = _table(cells, table)
    split = sub["column"].str.rsplit("/", n=1, expand=True)
    sub = sub.assign(gate=split[0], metric=split[1])
    gates = gates or list(dict.fromkeys(sub["gate"]))
    scopes = scopes or [s for s in dict.fromkeys(sub["row"]) if s != "Macro"]
    fig, axes = pyplot().subplots(1, 2, figsize=(10, 3.8))
    width = 0.8 / len(gates)
    x = np.arange(len(scopes))
    for ax, metric in zip(axes, ["AP", "AUROC"], strict=True):
        for i, gate in enumerate(gates):
            g = sub[(sub["gate"] == gate) & (sub["metric"] == metric)].set_index("row")
            g = g.reindex(scopes)
            ax.bar(
                x + i * width - 0.4 + width / 2,
                g["value"],
                width,
                label=gate,
                yerr=_errs(g),
                capsize=2,
            )
        ax.set_xticks(x, scopes)
        ax.set_ylabel(metric)
        ax.set_title("Average precision" if metric == "AP" else "AUROC")
        ax.grid(axis="y", alpha=0.3)
    axes[0].legend(fontsize=8)
    fig.tight_layout()
    return fig


def delta_bars(cells: pd.DataFrame, table: str, column: str, title: str) -> Figure:
    """Horizontal bars of paired deltas with their CIs and a zero line (Figure 3)."""
    sub = _table(cells, table)
    sub = sub[sub["column"] == column]
    fig, ax = pyplot().subplots(figsize=(6, 0.5 + 0.5 * len(sub)))
    y = np.arange(len(sub))
    ax.barh(y, sub["value"], xerr=_errs(sub), capsize=3, color="tab:blue", alpha=0.8)
    ax.axvline(0.0, color="black", lw=0.8)
    ax.set_yticks(y, sub["row"])
    ax.invert_yaxis()
    ax.set_xlabel(column)
    ax.set_title(title)
    ax.grid(axis="x", alpha=0.3)
    fig.tight_layout()
    return fig


def operating_curves(
    cells: pd.DataFrame, review_table: str, accept_table: str, base_rate: float | None
) -> Figure:
    """Review precision vs reviewed fraction and accepted risk vs accepted fraction (Fig. 4).

    Curve tables hold rows = gate, columns = the fraction in percent (e.g. "10").
    """
    fig, axes = pyplot().subplots(1, 2, figsize=(10, 3.8))
    for ax, table, xlabel, ylabel, title in (
        (axes[0], review_table, "Reviewed fraction (%)", "Precision", "Review high-risk outputs"),
        (
            axes[1],
            accept_table,
            "Accepted fraction (%)",
            "Accepted risk",
            "Accept low-risk outputs",
        ),
    ):
        sub = _table(cells, table)
        for gate in dict.fromkeys(sub["row"]):
            g = sub[sub["row"] == gate]
            x = g["column"].astype(float).to_numpy()
            ax.plot(x, g["value"], marker="o", ms=3, label=gate)
            if not g["ci_low"].isna().any():
                ax.fill_between(
                    x, g["ci_low"].astype(float), g["ci_high"].astype(float), alpha=0.15
                )
        if base_rate is not None:
            ax.axhline(base_rate, ls="--", color="gray", label="Base rate")
        ax.set_xlabel(xlabel)
        ax.set_ylabel(ylabel)
        ax.set_title(title)
        ax.grid(alpha=0.3)
    axes[0].legend(fontsize=8)
    fig.tight_layout()
    return fig


def cost_frontier(
    cells: pd.DataFrame, table: str, x_column: str = "ms/example", y_column: str = "AP"
) -> Figure:
    """AP vs ms/example on a log axis, one labelled point per row (Figure 5).

    Rows whose AP is not available (random-weight verifiers) are drawn on the x axis as
    cost-only markers, never as a made-up AP.
    """
    sub = _table(cells, table)
    wide = sub.pivot(index="row", columns="column", values="value")
    wide = wide.reindex(list(dict.fromkeys(sub["row"])))
    fig, ax = pyplot().subplots(figsize=(6, 4))
    known = wide[wide[y_column].notna()] if y_column in wide else wide.iloc[0:0]
    unknown = wide[wide[y_column].isna()] if y_column in wide else wide
    ax.scatter(known[x_column], known[y_column], s=40)
    for name, rec in known.iterrows():
        ax.annotate(
            name,
            (rec[x_column], rec[y_column]),
            fontsize=8,
            xytext=(4, 4),
            textcoords="offset points",
        )
    if len(unknown):
        ymin = ax.get_ylim()[0]
        ax.scatter(unknown[x_column], [ymin] * len(unknown), marker="x", color="gray")
        for name, rec in unknown.iterrows():
            ax.annotate(
                f"{name} (AP n/a)",
                (rec[x_column], ymin),
                fontsize=7,
                rotation=30,
                xytext=(2, 6),
                textcoords="offset points",
                color="gray",
            )
    ax.set_xscale("log")
    ax.set_xlabel("CPU runtime (ms/example, log)")
    ax.set_ylabel(f"Combined {y_column}")
    ax.set_title("Cost-quality frontier")
    ax.grid(alpha=0.3, which="both")
    fig.tight_layout()
    return fig
