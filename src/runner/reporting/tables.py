"""Render long-format cells as tables people read.

Cells keep full precision in `cells.csv`; the rendered tables round for reading (3
decimals, CI in brackets) and keep the study's row and column order. A column whose every
value is a whole number without an interval (counts, ranks) prints as integers: `6`, not
`6.000`; a column holding any fraction keeps its decimals throughout, so values in one
column always read alike.
"""

from __future__ import annotations

import math

import pandas as pd

NOT_AVAILABLE = "n/a"


def format_value(
    value: float | None, low: float | None = None, high: float | None = None, digits: int = 3
) -> str:
    """`0.798 [0.771, 0.824]`, or `n/a` for a cell that is not available."""
    if value is None or (isinstance(value, float) and math.isnan(value)):
        return NOT_AVAILABLE
    text = f"{value:.{digits}f}"
    if low is not None and high is not None and not (math.isnan(low) or math.isnan(high)):
        text += f" [{low:.{digits}f}, {high:.{digits}f}]"
    return text


def pivot_table(cells: pd.DataFrame, table: str, digits: int = 3) -> pd.DataFrame:
    """One table as rows x columns of formatted strings, in first-appearance order."""
    sub = cells[cells["table"] == table]
    if sub.empty:
        raise ValueError(f"no cells for table {table!r}")
    rows = list(dict.fromkeys(sub["row"]))
    cols = list(dict.fromkeys(sub["column"]))
    out = pd.DataFrame("", index=pd.Index(rows, name="row"), columns=cols)
    whole = {c: _whole_numbers(sub[sub["column"] == c]) for c in cols}
    for rec in sub.itertuples(index=False):
        out.loc[rec.row, rec.column] = format_value(
            _num(rec.value), _num(rec.ci_low), _num(rec.ci_high), 0 if whole[rec.column] else digits
        )
    return out


def _whole_numbers(column: pd.DataFrame) -> bool:
    """True when every available value of a column is a whole number with no interval."""
    values = [_num(v) for v in column["value"]]
    present = [v for v in values if v is not None]
    has_ci = any(_num(v) is not None for v in column["ci_low"])
    return bool(present) and not has_ci and all(float(v).is_integer() for v in present)


def _num(v: object) -> float | None:
    if v is None or (isinstance(v, float) and math.isnan(v)):
        return None
    return float(v)  # type: ignore[arg-type]


def to_markdown(frame: pd.DataFrame, title: str | None = None) -> str:
    """A GitHub-flavoured Markdown table (no extra dependency)."""
    header = [frame.index.name or ""] + [str(c) for c in frame.columns]
    lines = []
    if title:
        lines += [f"**{title}**", ""]
    lines.append("| " + " | ".join(header) + " |")
    lines.append("|" + "|".join(["---"] * len(header)) + "|")
    for idx, row in frame.iterrows():
        lines.append("| " + " | ".join([str(idx)] + [str(v) for v in row.tolist()]) + " |")
    return "\n".join(lines) + "\n"


def to_latex(frame: pd.DataFrame, title: str | None = None) -> str:
    """A booktabs LaTeX tabular."""

    def esc(s: str) -> str:
        return s.replace("&", r"\&").replace("%", r"\%").replace("_", r"\_")

    cols = "l" + "r" * len(frame.columns)
    lines = [r"\begin{tabular}{" + cols + "}", r"\toprule"]
    lines.append(
        " & ".join([esc(frame.index.name or "")] + [esc(str(c)) for c in frame.columns]) + r" \\"
    )
    lines.append(r"\midrule")
    for idx, row in frame.iterrows():
        lines.append(" & ".join([esc(str(idx))] + [esc(str(v)) for v in row.tolist()]) + r" \\")
    lines += [r"\bottomrule", r"\end{tabular}"]
    body = "\n".join(lines) + "\n"
    return (f"% {title}\n" + body) if title else body
