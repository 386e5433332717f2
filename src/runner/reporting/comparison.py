"""Our cells joined with the published ones, cell by cell: value, interval and Δ."""

from __future__ import annotations

import math

import pandas as pd


def cell_number(v: object) -> float | None:
    """A cell value as a float, None when empty (None or NaN)."""
    if v is None or (isinstance(v, float) and math.isnan(v)):
        return None
    return float(v)  # type: ignore[arg-type]


def compare(ours: pd.DataFrame, published: pd.DataFrame) -> pd.DataFrame:
    """Published cells joined with ours: value/CI of each, Δ = ours − paper.

    Every published cell appears; where we have no such cell (e.g. a source our data
    lacks) `ours` is empty and `status` says so. A row our study labelled with a
    qualifier (`target-only k=200 (capped: ...)`: the labels actually used differ from the
    paper's) is named in `status` and not compared.
    """
    keys = ["table", "row", "column"]
    merged = published.merge(ours, on=keys, how="left", suffixes=("_paper", "_ours"))
    status, delta = [], []
    for rec in merged.itertuples(index=False):
        o, p = cell_number(rec.value_ours), cell_number(rec.value_paper)
        if o is None:
            status.append(_absent(ours, rec.table, rec.row, rec.column))
            delta.append(None)
        else:
            status.append("")
            delta.append(None if p is None else o - p)
    merged["delta"] = delta
    merged["status"] = status
    return merged


def _absent(ours: pd.DataFrame, table: str, row: str, column: str) -> str:
    same = ours[(ours["table"] == table) & (ours["column"] == column)]
    if (same["row"] == row).any():
        return "not available in our run"
    qualified = [r for r in dict.fromkeys(same["row"]) if str(r).startswith(f"{row} (")]
    if qualified:
        return f"not compared: ours is `{qualified[0]}`"
    return "not in our run"
