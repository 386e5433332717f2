"""The latest complete run of each experiment on disk, read back for the reports.

`make tables` reads logged outputs only: each experiment folder's `latest` run, its
long-format `cells.csv` and its manifest. An experiment with nothing readable is listed
with the reason (`SkippedRun`), so nothing goes missing without a message.
"""

from __future__ import annotations

import json
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pandas as pd

from runner.errors import DataError
from runner.reporting.run_folders import LATEST, RUNS, latest_run_dir, why_no_latest
from runner.results import CELL_COLUMNS


@dataclass(frozen=True)
class LoggedRun:
    """One experiment's latest complete run on disk (`output_dir` is the run's folder)."""

    experiment: str
    study: str
    output_dir: Path
    cells: pd.DataFrame
    manifest: dict

    def titles(self) -> dict[str, str]:
        """Table titles the study computed for this run (`titles.json`), if it wrote any."""
        path = self.output_dir / TITLES_FILE
        return json.loads(path.read_text()) if path.exists() else {}

    def extra(self, name: str) -> Any:
        """A JSON artifact of the run (e.g. `sources.json`), or None when absent."""
        path = self.output_dir / name
        return json.loads(path.read_text()) if path.exists() else None


TITLES_FILE = "titles.json"
"""Run-specific table titles (they state what a table was computed on)."""


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


def read_cells(path: Path) -> pd.DataFrame:
    """Read a long-format cells file, checking its columns."""
    frame = pd.read_csv(path, dtype={"table": str, "row": str, "column": str})
    missing = [c for c in CELL_COLUMNS if c not in frame.columns]
    if missing:
        raise DataError(
            f"missing columns {missing}; expected {CELL_COLUMNS}", file=str(path), row="header"
        )
    return frame
