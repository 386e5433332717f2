"""`make tables`: redraw every table and figure from logged outputs; write REPRODUCTION.md.

Reads `artifacts/<experiment>/cells.csv` + `manifest.json` of each experiment run so far,
re-renders `tables/` and `figures/` there (figures are drawn from cells alone), and for
each paper folder in `experiments/` joins ours with `published.csv`. No metric is
recomputed.
"""

from __future__ import annotations

import argparse
import sys
from pathlib import Path

import pandas as pd

from runner.paths import PROJECT_ROOT, artifacts_dir
from runner.reporting.outputs import write_figures, write_tables
from runner.reporting.reproduction import read_cells, read_logged_runs, render_report
from runner.studies import load_study


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--artifacts", type=Path, default=artifacts_dir())
    parser.add_argument("--experiments", type=Path, default=PROJECT_ROOT / "experiments")
    args = parser.parse_args(argv)

    runs = read_logged_runs(args.artifacts)
    if not runs:
        print(f"no logged runs under {args.artifacts}: run a study first (make reproduce)")
        return 1
    by_paper: dict[str, list] = {}
    for run in runs:
        study = load_study(run.study)
        titles = {**getattr(study, "TITLES", {}), **run.titles()}
        write_tables(run.cells, titles, run.output_dir)
        figures = write_figures(getattr(study, "figures", None), run.cells, run.output_dir)
        paper = getattr(study, "PAPER", None)
        datasets = getattr(study, "PAPER_DATASETS", None)
        dataset = (run.manifest.get("dataset") or {}).get("name")
        if datasets is not None and dataset not in datasets:
            paper = None  # e.g. RQ5 on RAGTruth tasks: no published counterpart
        if paper:
            by_paper.setdefault(paper, []).append(run)
        print(f"{run.experiment}: tables + {len(figures)} figures re-rendered in {run.output_dir}")
    for paper, paper_runs in sorted(by_paper.items()):
        published_path = args.experiments / paper / "published.csv"
        if not published_path.exists():
            continue
        published = read_cells(published_path)
        notes = _notes(args.experiments / paper)
        report = render_report(paper, paper_runs, published, notes)
        out = args.experiments / paper / "REPRODUCTION.md"
        out.write_text(report)
        print(f"{paper}: {out}")
    return 0


def _notes(folder: Path) -> dict[str, str]:
    """Optional per-experiment notes (`notes.csv`: experiment,note) shown in the report."""
    path = folder / "notes.csv"
    if not path.exists():
        return {}
    frame = pd.read_csv(path)
    return dict(zip(frame["experiment"], frame["note"], strict=True))


if __name__ == "__main__":
    sys.exit(main())
