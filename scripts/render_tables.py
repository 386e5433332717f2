"""`make tables`: redraw every table and figure from logged outputs; write REPRODUCTION.md.

Reads `cells.csv` + `manifest.json` of each experiment's latest complete run
(`artifacts/<experiment>/latest`), re-renders `tables/` and `figures/` there (figures are
drawn from cells alone), and for each paper folder in `experiments/` joins ours with
`published.csv`. No metric is recomputed. Every experiment of `conf/experiment/` that has
no readable run is named with the reason, on the console and in its paper's report.
"""

from __future__ import annotations

import argparse
import sys
from pathlib import Path

import pandas as pd
from omegaconf import DictConfig, OmegaConf

from runner.paths import PROJECT_ROOT, artifacts_dir
from runner.reporting import (
    SkippedRun,
    read_cells,
    render_report,
    scan_logged_runs,
    write_figures,
    write_tables,
)
from runner.settings import import_path
from runner.studies import load_study


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--artifacts", type=Path, default=artifacts_dir())
    parser.add_argument("--experiments", type=Path, default=PROJECT_ROOT / "experiments")
    parser.add_argument("--conf", type=Path, default=PROJECT_ROOT / "conf")
    args = parser.parse_args(argv)

    studies = _configured_studies(args.conf)
    runs, skipped = scan_logged_runs(args.artifacts, expected=sorted(studies))
    for skip in skipped:
        print(f"skipped {skip.experiment}: {skip.reason}")
    if not runs:
        print(f"no logged runs under {args.artifacts}: run a study first (make reproduce)")
        return 1
    by_paper: dict[str, list] = {}
    for run in runs:
        study = load_study(run.study)
        titles = {**study.titles, **run.titles()}
        write_tables(run.cells, titles, run.output_dir)
        figures = write_figures(study.figures, run.cells, run.output_dir)
        paper = study.paper
        datasets = study.paper_datasets
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
        report += _skipped_section(paper, skipped, studies)
        out = args.experiments / paper / "REPRODUCTION.md"
        out.write_text(report)
        print(f"{paper}: {out}")
    return 0


def _configured_studies(conf: Path) -> dict[str, str | None]:
    """Experiment name -> study name of every `conf/experiment/*.yaml`."""
    out: dict[str, str | None] = {}
    for path in sorted((conf / "experiment").glob("*.yaml")):
        node = OmegaConf.load(path)
        out[str(node.get("experiment", path.stem))] = _study_name(path)
    return out


def _study_name(path: Path) -> str | None:
    """The name of the study an experiment YAML builds (its ``/study@study: <class>`` entry),
    or of the experiment it extends (`defaults`)."""
    node = OmegaConf.load(path)
    for entry in node.get("defaults") or []:
        if isinstance(entry, DictConfig) and "/study@study" in entry:
            return str(import_path(str(entry["/study@study"])).name)
        base = path.parent / f"{entry}.yaml" if isinstance(entry, str) else None
        if base is not None and base.exists():
            return _study_name(base)
    return None


def _skipped_section(paper: str, skipped: list[SkippedRun], studies: dict[str, str | None]) -> str:
    """Markdown naming this paper's experiments that have no readable run, and why."""
    lines = []
    for skip in skipped:
        study_name = studies.get(skip.experiment)
        if study_name is None or load_study(study_name).paper != paper:
            continue
        lines.append(f"- `{skip.experiment}`: {skip.reason}")
    if not lines:
        return ""
    return "\n## Not in this report\n\n" + "\n".join(lines) + "\n"


def _notes(folder: Path) -> dict[str, str]:
    """Optional per-experiment notes (`notes.csv`: experiment,note) shown in the report."""
    path = folder / "notes.csv"
    if not path.exists():
        return {}
    frame = pd.read_csv(path)
    return dict(zip(frame["experiment"], frame["note"], strict=True))


if __name__ == "__main__":
    sys.exit(main())
