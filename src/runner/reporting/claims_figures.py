"""Figures of the claim-verification study, drawn from long-format cells alone.

Why: `make tables` redraws figures from ``cells.csv`` without recomputing, so every figure
here reads only cells: Venn diagrams of the judges' catches and false alarms, F1 bars of
the combinations, and the span detector's threshold sweep. Titles and the "mostly
abstained" marking come from the study (this layer knows no claim-verification parts).
"""

from __future__ import annotations

from typing import Any

import numpy as np
import pandas as pd

VENN_META_ROWS = ("total: ", "abstentions: ", "on decided claims: ", "decided share: ")
"""Row prefixes of a Venn table that are not regions."""


def claims_figures(
    cells: pd.DataFrame, titles: dict[str, str], mark_column: str, mostly_abstained: float
) -> dict[str, Any]:
    """Venn diagrams of catches and false alarms, combination F1 bars, the S1 sweep.

    Parameters
    ----------
    cells : DataFrame
        The study's long-format cells.
    titles : dict
        Table id -> title (the study's titles; a figure is titled like its table).
    mark_column : str
        The column holding 1 for a system that abstained on most claims.
    mostly_abstained : float
        The abstained share above which a judge is marked in a Venn figure.
    """
    import matplotlib

    matplotlib.use("Agg")
    out: dict[str, Any] = {}
    tables = set(cells["table"])
    for table in ("venn_catches", "venn_false_alarms"):
        if table in tables:
            out[table] = venn_figure(cells, table, titles.get(table, table), mostly_abstained)
    if "combinations" in tables:
        out["combinations_f1"] = combination_bars(
            cells, "combinations", titles.get("combinations", "combinations"), mark_column
        )
    if "s1_sweep" in tables:
        out["s1_sweep"] = sweep_figure(cells, "s1_sweep", titles.get("s1_sweep", "s1_sweep"))
    return out


def _rows(cells: pd.DataFrame, table: str, column: str) -> dict[str, float | None]:
    sub = cells[(cells["table"] == table) & (cells["column"] == column)]
    return {
        r: (None if pd.isna(v) else float(v)) for r, v in zip(sub["row"], sub["value"], strict=True)
    }


def venn_figure(cells: pd.DataFrame, table: str, title: str, mostly_abstained: float) -> Any:
    """Circles with per-region counts for 2 or 3 judges; bars per region otherwise."""
    import matplotlib.pyplot as plt
    from matplotlib.patches import Circle

    values = _rows(cells, table, "claims")
    judges = [r[len("total: ") :] for r in values if r.startswith("total: ")]
    regions = {
        r: v
        for r, v in values.items()
        if not r.startswith(VENN_META_ROWS) and r != "claims in scope"
    }
    labels = {j: _judge_label(values, j, mostly_abstained) for j in judges}
    fig, ax = plt.subplots(figsize=(5.5, 4.5))
    if len(judges) in (2, 3):
        centres = (
            [(-0.5, 0.0), (0.5, 0.0)]
            if len(judges) == 2
            else [(-0.5, 0.3), (0.5, 0.3), (0.0, -0.5)]
        )
        colours = ["#4477aa", "#ee6677", "#228833"]
        for (x, y), colour, judge in zip(centres, colours, judges, strict=False):
            ax.add_patch(Circle((x, y), 0.9, alpha=0.25, color=colour))
            total = values.get(f"total: {judge}") or 0
            name_y = y + 1.0 if y >= 0 else y - 1.05  # above a top circle, below a bottom one
            ax.text(x, name_y, f"{labels[judge]} · {total:g}", ha="center", va="center", fontsize=7)
        for region, count in regions.items():
            if region == "none":
                continue
            members = region.split(" & ")
            idx = [judges.index(m) for m in members]
            x = float(np.mean([centres[i][0] for i in idx]))
            y = float(np.mean([centres[i][1] for i in idx]))
            if len(idx) == 1 and len(judges) > 1:
                x, y = x * 1.25, y * 1.25
            ax.text(x, y, f"{count:g}", ha="center", va="center", fontsize=11)
        ax.text(0.0, -1.85, f"in no judge: {regions.get('none', 0):g}", ha="center", fontsize=9)
        ax.set_xlim(-2.0, 2.0)
        ax.set_ylim(-2.0, 1.5)
        ax.set_aspect("equal")
        ax.axis("off")
    else:
        names = list(regions)
        ax.barh(names, [regions[n] or 0 for n in names], color="#4477aa")
        ax.invert_yaxis()
        ax.set_xlabel("claims")
        ax.text(
            1.0, -0.12, "; ".join(labels.values()), transform=ax.transAxes, ha="right", fontsize=7
        )
    ax.set_title(title, fontsize=9)
    fig.tight_layout()
    return fig


def _judge_label(values: dict[str, float | None], judge: str, mostly_abstained: float) -> str:
    """``name (decided 40 %, mostly abstained)`` for a judge in a Venn figure."""
    share = values.get(f"decided share: {judge}")
    if share is None:
        return judge
    mark = ", MOSTLY ABSTAINED" if 1.0 - share > mostly_abstained else ""
    decided = values.get(f"on decided claims: {judge}")
    on_decided = f", {decided:g} on decided" if decided is not None else ""
    return f"{judge} (decided {share:.0%}{on_decided}{mark})"


def combination_bars(cells: pd.DataFrame, table: str, title: str, mark_column: str) -> Any:
    """F1 of each combination, best first (grey: the combination mostly abstained)."""
    import matplotlib.pyplot as plt

    f1 = _rows(cells, table, "f1")
    decided = _rows(cells, table, "f1 (decided)")
    marked = _rows(cells, table, mark_column)
    names = list(f1)
    shown = [f"{n}  [MOSTLY ABSTAINED]" if marked.get(n) else n for n in names]
    fig, ax = plt.subplots(figsize=(7.0, max(2.5, 0.32 * len(names) + 1)))
    y = np.arange(len(names))
    ax.barh(
        y - 0.2,
        [f1[n] or 0.0 for n in names],
        height=0.4,
        color=["#bbbbbb" if marked.get(n) else "#4477aa" for n in names],
        label="F1, abstentions as yellow flags",
    )
    if decided:
        ax.barh(
            y + 0.2,
            [decided.get(n) or 0.0 for n in names],
            height=0.4,
            color="#ee6677",
            label="F1 on decided claims",
        )
        ax.legend(fontsize=7, loc="lower right")
    ax.set_yticks(y, shown)
    ax.invert_yaxis()
    ax.set_xlabel("F1 (flag task); grey = more than half of the claims abstained")
    ax.set_xlim(0, 1)
    ax.tick_params(axis="y", labelsize=7)
    ax.set_title(title, fontsize=9)
    fig.tight_layout()
    return fig


def sweep_figure(cells: pd.DataFrame, table: str, title: str) -> Any:
    """Claims flagged and true alarms of S1 against its token threshold."""
    import matplotlib.pyplot as plt

    flags = _rows(cells, table, "flags")
    hits = _rows(cells, table, "true_alarms")
    rows = list(flags)
    xs = [float(r.split(" ")[0]) for r in rows]
    fig, ax = plt.subplots(figsize=(5.5, 3.5))
    ax.plot(xs, [flags[r] for r in rows], marker="o", label="claims flagged")
    ax.plot(xs, [hits[r] for r in rows], marker="s", label="true alarms")
    ax.set_xscale("log")
    ax.set_xlabel("token threshold")
    ax.set_ylabel("claims")
    ax.legend(fontsize=8)
    ax.set_title(title, fontsize=9)
    fig.tight_layout()
    return fig
