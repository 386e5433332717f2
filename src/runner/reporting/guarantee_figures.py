"""guarantee_check's figure, drawn from long-format cells only (so `make tables` redraws it).

Why a figure: whether a bound holds is a comparison with δ across scenarios, and what it
costs is a comparison of accepted shares; both read faster as bars than as a table.
"""

from __future__ import annotations

import textwrap
from collections.abc import Callable
from typing import TYPE_CHECKING

import numpy as np
import pandas as pd

from runner.reporting.figures import pyplot

if TYPE_CHECKING:
    from matplotlib.figure import Figure


def _wrap(label: str) -> str:
    """'<scenario> / <method>' on two lines, so the long scenario names leave room for bars."""
    return "\n".join(textwrap.wrap(label.replace(" / ", " /\n", 1), 48, replace_whitespace=False))


def _goal_delta(cells: pd.DataFrame, names: Callable[[pd.Series], pd.Series]) -> float | None:
    """δ: the target of the first goal whose row `names` picks (None: no such goal)."""
    goal = cells[(cells["table"] == "goals") & (cells["column"] == "target")]
    goal = goal[names(goal["row"])]
    return float(goal["value"].iloc[0]) if len(goal) else None


def _rate_errors(rate: pd.DataFrame) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """Violation rates and their error-bar lengths below and above (0 where no interval)."""
    values = rate["value"].to_numpy(float)
    low = np.nan_to_num(values - rate["ci_low"].to_numpy(float), nan=0.0)
    high = np.nan_to_num(rate["ci_high"].to_numpy(float) - values, nan=0.0)
    return values, low, high


def guarantee_figure(cells: pd.DataFrame, delta: float | None = None) -> Figure:
    """Left: violation rate per scenario and method with its 95 % CI (δ as a line, read from
    the goals table). Right: mean accepted share of the same rows, the oracle's beside them."""
    from matplotlib.patches import Patch

    sub = cells[cells["table"] == "guarantee"]
    if delta is None:
        delta = _goal_delta(cells, lambda row: row.str.contains("violation rate <= delta"))
    rate = sub[sub["column"] == "violation rate"]
    share = sub[sub["column"] == "accepted share"]
    fig, axes = pyplot().subplots(1, 2, figsize=(12, 0.5 * max(len(share), 4) + 1.5))
    y = np.arange(len(rate))
    values, low, high = _rate_errors(rate)
    flag = sub[sub["column"] == "KS shift flag rate"].set_index("row")["value"]
    flagged = [float(flag.get(row, 0.0) or 0.0) >= 0.5 for row in rate["row"]]
    colors = ["tab:orange" if f else "tab:blue" for f in flagged]
    axes[0].barh(y, values, xerr=[low, high], capsize=3, color=colors)
    axes[0].set_yticks(y, [_wrap(r) for r in rate["row"]], fontsize=8)
    axes[0].invert_yaxis()
    handles = [Patch(color="tab:orange", label="most splits flagged as shifted (KS)")]
    if delta is not None:
        handles.append(axes[0].axvline(delta, ls="--", color="tab:red", label=f"δ = {delta:g}"))
    axes[0].legend(handles=handles, loc="center right", fontsize=8)
    axes[0].set_xlim(0, 1)
    axes[0].set_xlabel("share of splits whose realised accepted risk > α")
    y2 = np.arange(len(share))
    axes[1].barh(y2, share["value"].to_numpy(float), color="tab:green")
    axes[1].set_yticks(y2, [_wrap(r) for r in share["row"]], fontsize=8)
    axes[1].invert_yaxis()
    axes[1].set_xlabel("mean accepted share of routed rows")
    fig.tight_layout()
    return fig


def population_figure(cells: pd.DataFrame, delta: float | None = None) -> Figure | None:
    """The population check (None when it did not run). Left: the population violation rate
    per N, α and method with its exact 95 % CI, δ as a line. Right: the accepted share
    against the noise floor and the hindsight threshold of the same α."""
    from matplotlib.patches import Patch

    sub = cells[cells["table"] == "population"]
    if sub.empty:
        return None
    if delta is None:
        delta = _goal_delta(cells, lambda row: row.str.startswith("population: "))
    rate = sub[sub["column"] == "violation rate"]
    share = sub[sub["column"] == "accepted share"]
    fig, axes = pyplot().subplots(1, 2, figsize=(12, 0.42 * max(len(share), 4) + 1.5))
    y = np.arange(len(rate))
    values, low, high = _rate_errors(rate)
    axes[0].barh(y, values, xerr=[low, high], capsize=3, color="tab:blue")
    axes[0].set_yticks(y, [_wrap(r) for r in rate["row"]], fontsize=7)
    axes[0].invert_yaxis()
    if delta is not None:
        axes[0].axvline(delta, ls="--", color="tab:red", label=f"δ = {delta:g}")
        axes[0].legend(loc="lower right", fontsize=8)
    axes[0].set_xlabel("share of draws whose population accepted risk > α")
    kinds = {"hindsight": "tab:gray", "noise floor": "tab:orange"}
    colors = [next((c for k, c in kinds.items() if k in row), "tab:green") for row in share["row"]]
    y2 = np.arange(len(share))
    axes[1].barh(y2, share["value"].to_numpy(float), color=colors)
    axes[1].set_yticks(y2, [_wrap(r) for r in share["row"]], fontsize=7)
    axes[1].invert_yaxis()
    axes[1].legend(
        handles=[Patch(color="tab:green", label="calibrated rule (mean over draws)"),
                 Patch(color="tab:orange", label="noise floor: an idealised valid rule"),
                 Patch(color="tab:gray", label="best fixed threshold, hindsight")],
        loc="lower right", fontsize=8,
    )  # fmt: skip
    axes[1].set_xlabel("accepted share of the population")
    fig.tight_layout()
    return fig
