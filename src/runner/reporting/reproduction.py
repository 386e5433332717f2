"""Ours beside the paper's: the reproduction report that `make tables` writes.

Published numbers live only in `experiments/<paper>/published.csv` (the same long format
as `cells.csv`). This module joins the two on (table, row, column) and writes
`experiments/<paper>/REPRODUCTION.md` with ours | paper | Δ per cell. Nothing here
computes a metric: it reads logged outputs only.
"""

from __future__ import annotations

import json
import math
from dataclasses import dataclass
from pathlib import Path

import pandas as pd

from runner.reporting.run_folders import LATEST, RUNS, latest_run_dir, why_no_latest
from runner.reporting.tables import format_value
from runner.results import CELL_COLUMNS


@dataclass(frozen=True)
class LoggedRun:
    """One experiment's latest complete run on disk (`output_dir` is the run's folder)."""

    experiment: str
    study: str
    output_dir: Path
    cells: pd.DataFrame
    manifest: dict


@dataclass(frozen=True)
class SkippedRun:
    """An experiment folder (or an expected experiment) with nothing readable, and why."""

    experiment: str
    reason: str


def _looks_like_experiment(folder: Path) -> bool:
    return (
        (folder / LATEST).is_symlink()
        or (folder / RUNS).is_dir()
        or (folder / "cells.csv").exists()
        or (folder / "manifest.json").exists()
    )


def scan_logged_runs(
    artifacts_dir: Path, expected: tuple[str, ...] | list[str] = ()
) -> tuple[list[LoggedRun], list[SkippedRun]]:
    """The latest complete run of every experiment folder, and every one skipped with why.

    `expected` names experiments that should be there (e.g. every `conf/experiment/`
    file); one without a folder is reported as skipped too, so nothing goes missing
    without a message.
    """
    artifacts_dir = Path(artifacts_dir)
    found = set()
    if artifacts_dir.is_dir():
        found = {
            p.name for p in artifacts_dir.iterdir() if p.is_dir() and _looks_like_experiment(p)
        }
    runs: list[LoggedRun] = []
    skipped: list[SkippedRun] = []
    for name in sorted(found | set(expected)):
        exp_dir = artifacts_dir / name
        run_dir = latest_run_dir(exp_dir)
        if run_dir is None:
            skipped.append(SkippedRun(name, why_no_latest(exp_dir)))
            continue
        cells_path = run_dir / "cells.csv"
        if not cells_path.exists():
            skipped.append(SkippedRun(name, f"latest run {run_dir} has no cells.csv"))
            continue
        try:
            manifest = json.loads((run_dir / "manifest.json").read_text())
            cells = read_cells(cells_path)
            runs.append(
                LoggedRun(manifest["experiment"], manifest["study"], run_dir, cells, manifest)
            )
        except (ValueError, KeyError) as exc:  # JSONDecodeError is a ValueError
            skipped.append(SkippedRun(name, f"latest run {run_dir} is unreadable: {exc}"))
    return runs, skipped


def read_logged_runs(artifacts_dir: Path) -> list[LoggedRun]:
    """The latest complete run of every experiment under `artifacts_dir`."""
    return scan_logged_runs(artifacts_dir)[0]


def read_cells(path: Path) -> pd.DataFrame:
    """Read a long-format cells file, checking its columns."""
    frame = pd.read_csv(path, dtype={"table": str, "row": str, "column": str})
    missing = [c for c in CELL_COLUMNS if c not in frame.columns]
    if missing:
        raise ValueError(f"{path}: missing columns {missing}; expected {CELL_COLUMNS}")
    return frame


def _num(v: object) -> float | None:
    if v is None or (isinstance(v, float) and math.isnan(v)):
        return None
    return float(v)  # type: ignore[arg-type]


def _relative(path: Path) -> str:
    """A path relative to the project when it lies inside it (reports move with the repo)."""
    from runner.paths import PROJECT_ROOT

    try:
        return str(Path(path).resolve().relative_to(PROJECT_ROOT))
    except ValueError:
        return str(path)


def compare(ours: pd.DataFrame, published: pd.DataFrame) -> pd.DataFrame:
    """Published cells joined with ours: value/CI of each, Δ = ours − paper.

    Every published cell appears; where we have no such cell (e.g. a source our data
    lacks) `ours` is empty and `status` says so.
    """
    keys = ["table", "row", "column"]
    merged = published.merge(ours, on=keys, how="left", suffixes=("_paper", "_ours"))
    status, delta = [], []
    for rec in merged.itertuples(index=False):
        o, p = _num(rec.value_ours), _num(rec.value_paper)
        if o is None:
            status.append("not in our run")
            delta.append(None)
        else:
            status.append("")
            delta.append(None if p is None else o - p)
    merged["delta"] = delta
    merged["status"] = status
    return merged


def render_report(
    paper: str, runs: list[LoggedRun], published: pd.DataFrame, notes: dict[str, str] | None = None
) -> str:
    """The Markdown body of `REPRODUCTION.md` for one paper."""
    lines = [
        f"# Reproduction report: {paper}",
        "",
        "Written by `make tables` from logged outputs; nothing is recomputed. "
        "Δ = ours − paper. Intervals are 95 % group-bootstrap percentiles.",
        "",
    ]
    for run in runs:
        ours = run.cells
        tables = [t for t in dict.fromkeys(published["table"]) if t in set(ours["table"])]
        if not tables:
            continue
        commit = (run.manifest.get("git") or {}).get("commit")
        data = run.manifest.get("dataset") or {}
        lines += [
            f"## {run.experiment}",
            "",
            f"- outputs: `{_relative(run.output_dir)}`; commit `{commit}`; data "
            f"`{data.get('name')}` fingerprint `{str(data.get('fingerprint'))[:16]}`",
            "",
        ]
        if notes and run.experiment in notes:
            lines += [notes[run.experiment], ""]
        joined = compare(ours, published[published["table"].isin(tables)])
        lines += ["| table | row | column | ours | paper | Δ |", "|---|---|---|---|---|---|"]
        for rec in joined.itertuples(index=False):
            o = format_value(_num(rec.value_ours), _num(rec.ci_low_ours), _num(rec.ci_high_ours))
            p = format_value(_num(rec.value_paper), _num(rec.ci_low_paper), _num(rec.ci_high_paper))
            d = "" if rec.delta is None or pd.isna(rec.delta) else f"{rec.delta:+.3f}"
            if rec.status:
                o = rec.status
            lines.append(f"| {rec.table} | {rec.row} | {rec.column} | {o} | {p} | {d} |")
        lines.append("")
    return "\n".join(lines) + "\n"
