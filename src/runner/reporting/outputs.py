"""Write one run's outputs into its own folder (`artifacts/<experiment>/runs/<id>/`).

Layout of a run folder (the same for every study, so `make tables` and tests can rely on
it): `scores.parquet`, `cells.csv`, `tables/<id>.csv|md|tex`, `runtime.json`,
`figures/<id>.png|pdf`, any JSON extras, `config.yaml`, and `manifest.json` written last
(it marks the folder complete). Where run folders live and how `latest` points at the
newest complete one: `runner.reporting.run_folders`; readers call `latest_run_dir`.
`cells.csv` and `scores.parquet` depend only on config, code and data, so the same config
and seed give byte-identical files; timing and provenance live in `runtime.json` and
`manifest.json`.
"""

from __future__ import annotations

import json
import logging
from collections.abc import Callable, Mapping
from pathlib import Path
from typing import Any

import pandas as pd

from runner.reporting.manifest import RunInfo, build_manifest
from runner.reporting.run_folders import latest_run_dir
from runner.reporting.tables import pivot_table, to_latex, to_markdown
from runner.results import StudyResult
from runner.run_record import RunRecord

log = logging.getLogger(__name__)

FigureFn = Callable[[pd.DataFrame], dict[str, Any]]

__all__ = ["latest_run_dir", "write_figures", "write_json", "write_outputs", "write_tables"]


def write_parquet(frame: pd.DataFrame, path: Path) -> None:
    """A frame as Parquet without its pandas ``attrs``.

    Why: a loader labels its frame (``attrs["dataset"]``, for error messages) and pandas
    carries the label into derived frames and into Parquet metadata; a run's files hold the
    data alone, so they stay byte-identical whatever a frame was labelled in memory.
    """
    bare = frame.copy(deep=False)
    bare.attrs = {}
    bare.to_parquet(path, index=False)


def write_json(path: Path, obj: Any) -> None:
    """Stable JSON: sorted keys, 2-space indent, trailing newline."""
    path.write_text(json.dumps(obj, indent=2, sort_keys=True, default=str) + "\n")


def is_figure_data(table: str) -> bool:
    """Curve tables (`curve_*`, `*_curve`) hold figure points, not tables to read."""
    return table.startswith("curve_") or table.endswith("_curve")


def write_tables(cells: pd.DataFrame, titles: dict[str, str], out_dir: Path) -> list[str]:
    """Write every table of `cells` as CSV, Markdown and LaTeX; return the table ids."""
    tables_dir = out_dir / "tables"
    tables_dir.mkdir(parents=True, exist_ok=True)
    ids = [t for t in dict.fromkeys(cells["table"]) if not is_figure_data(t)]
    for table in ids:
        frame = pivot_table(cells, table)
        title = titles.get(table, table)
        frame.to_csv(tables_dir / f"{table}.csv")
        (tables_dir / f"{table}.md").write_text(to_markdown(frame, title))
        (tables_dir / f"{table}.tex").write_text(to_latex(frame, title))
    return ids


def write_figures(figures: FigureFn | None, cells: pd.DataFrame, out_dir: Path) -> list[str]:
    """Draw the study's figures from cells and save PNG + PDF; return the figure ids."""
    if figures is None:
        return []
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    fig_dir = out_dir / "figures"
    fig_dir.mkdir(parents=True, exist_ok=True)
    drawn = figures(cells)
    for name, fig in drawn.items():
        fig.savefig(
            fig_dir / f"{name}.png", dpi=150, bbox_inches="tight", metadata={"Software": None}
        )
        fig.savefig(
            fig_dir / f"{name}.pdf",
            bbox_inches="tight",
            metadata={"Creator": None, "Producer": None, "CreationDate": None},
        )
        plt.close(fig)
    return sorted(drawn)


def write_outputs(
    record: RunRecord,
    result: StudyResult,
    data: Any,
    out_dir: Path,
    figures: FigureFn | None = None,
    run_info: RunInfo | None = None,
    parts: Mapping[str, Any] | None = None,
) -> dict[str, Any]:
    """Write all outputs of one run into `out_dir` (a new, empty folder), manifest last.

    `run_info` (run id, start time, overrides, git state; see `build_manifest`) goes into
    the manifest; its wall time is measured here, just before the manifest is written.
    `parts` are the built parts whose model files the manifest records.
    """
    out_dir.mkdir(parents=True, exist_ok=True)
    if any(out_dir.iterdir()):
        raise FileExistsError(f"{out_dir} is not empty: a run writes into a new folder only")
    cells = result.cells_frame()
    cells.to_csv(out_dir / "cells.csv", index=False)
    if result.scores is not None:
        write_parquet(result.scores, out_dir / "scores.parquet")
    table_ids = write_tables(cells, result.titles, out_dir) if not cells.empty else []
    figure_ids = write_figures(figures, cells, out_dir) if not cells.empty else []
    write_json(out_dir / "runtime.json", result.runtime)
    for name, obj in result.extra.items():
        write_json(out_dir / name, obj)
    (out_dir / "config.yaml").write_text(record.config_yaml)
    manifest = build_manifest(
        record, result, data, tables=table_ids, figures=figure_ids, run_info=run_info, parts=parts
    )
    write_json(out_dir / "manifest.json", manifest)
    log.info(
        "wrote %d cells, %d tables, %d figures to %s",
        len(cells),
        len(table_ids),
        len(figure_ids),
        out_dir,
    )
    return manifest


def write_files_and_documents(
    result: StudyResult,
    documents: Callable[[StudyResult, Path], dict[str, str]],
    out_dir: Path,
) -> list[str]:
    """Write the result's extra files and the study's documents; return their names.

    Documents are drawn last, after tables and figures exist, so a report can link them.
    """
    written = []
    for name, obj in (result.files or {}).items():
        path = Path(out_dir) / name
        path.parent.mkdir(parents=True, exist_ok=True)
        if isinstance(obj, pd.DataFrame):
            write_parquet(obj, path)
        elif callable(getattr(obj, "write_to", None)):  # a file too big to hold (route)
            obj.write_to(path)
        elif isinstance(obj, bytes):
            path.write_bytes(obj)
        else:
            path.write_text(str(obj))
        written.append(name)
    for name, text in documents(result, Path(out_dir)).items():
        (Path(out_dir) / name).write_text(text)
        written.append(name)
    return written
