"""Ours beside the paper's: the reproduction report that `make tables` writes.

Published numbers live only in `experiments/<paper>/published.csv` (the same long format
as `cells.csv`). The report joins the two on (table, row, column)
(`runner.reporting.comparison`) and writes `experiments/<paper>/REPRODUCTION.md` with
ours | paper | Δ per cell. Nothing here computes a metric: it renders logged outputs
(`runner.reporting.logged_runs`) only.

Every section says what its run was computed on (rows, groups, split, resamples,
seeds), read from the run's manifest. A run whose settings differ from its experiment's
reproduction settings (`runner.reporting.reproduction_settings`) is shown with the
differing settings in its header and is not counted as the reproduction. Notes
(`notes.csv`) are templates filled from the run (`{rows:,}`, `{n_resamples:,}`, ...), so
they cannot state a figure the run did not have.
"""

from __future__ import annotations

import json
from collections.abc import Mapping
from pathlib import Path
from typing import Any

import pandas as pd

from runner.errors import DataError
from runner.reporting.comparison import cell_number, compare
from runner.reporting.logged_runs import LoggedRun
from runner.reporting.reproduction_settings import (
    SettingsFn,
    reproduction_settings,
    setting_differences,
)
from runner.reporting.tables import format_value


def _relative(path: Path) -> str:
    """A path relative to the project when it lies inside it (reports move with the repo)."""
    from runner.paths import PROJECT_ROOT

    try:
        return str(Path(path).resolve().relative_to(PROJECT_ROOT))
    except ValueError:
        return str(path)


def run_facts(run: LoggedRun, published: pd.DataFrame | None = None) -> dict[str, Any]:
    """What a run was computed on, from its manifest and artifacts (fills notes/headers)."""
    config = run.manifest.get("config") or {}
    info = (run.manifest.get("dataset") or {}).get("info") or {}
    facts: dict[str, Any] = {"seed": config.get("seed")}
    dataset = config.get("dataset") or {}
    if dataset.get("split") is not None:
        facts["data_split"] = dataset["split"]
    if "rows" in info:
        facts["rows"] = int(info["rows"])
    if "groups" in info:
        facts["groups"] = int(info["groups"])
    split = config.get("split") or {}
    if split:
        facts["split"] = str(split.get("_target_", "?")).rsplit(".", 1)[-1]
        facts["n_splits"] = split.get("n_splits")
        facts["split_seed"] = split.get("seed")
        facts["split_group"] = split.get("group_col") or "row"
    boot = config.get("bootstrap") or {}
    if boot:
        facts["n_resamples"] = int(boot["n_resamples"])
        facts["level"] = f"{float(boot['level']):.0%}".replace("%", " %")
        facts["bootstrap_seed"] = boot.get("seed")
    sources = run.extra("sources.json")
    if sources:
        names = list(sources["sources"])
        facts["sources"] = ", ".join(names)
        facts["n_sources"] = len(names)
        facts["source_counts"] = _source_counts(sources)
        if published is not None and "table8a" in set(published["table"]):
            rows = dict.fromkeys(published.loc[published["table"] == "table8a", "row"])
            absent = [r for r in rows if r not in names]
            facts["missing_sources"] = " and ".join(absent) if absent else "none"
    return facts


def _source_counts(sources: Mapping[str, Any]) -> str:
    rows, pos = sources["rows_per_source"], sources["positives_per_source"]
    pairs = {(rows[s] - pos[s], pos[s]) for s in sources["sources"]}
    if len(pairs) == 1:
        neg, p = pairs.pop()
        return f"{neg} faithful + {p} unfaithful each"
    return "; ".join(f"{s}: {rows[s] - pos[s]} + {pos[s]}" for s in sources["sources"])


def fill_note(template: str, facts: Mapping[str, Any], experiment: str) -> str:
    """A note template with the run's facts; a fact the run lacks is an error, not a guess."""
    try:
        return template.format_map(dict(facts))
    except (KeyError, ValueError, IndexError) as exc:
        raise DataError(
            f"notes.csv, experiment {experiment!r}: cannot fill {exc} from the run "
            f"(facts: {sorted(facts)})"
        ) from exc


def _header(facts: Mapping[str, Any]) -> str:
    parts = []
    if "rows" in facts:
        groups = f", {facts['groups']:,} groups" if "groups" in facts else ""
        parts.append(f"{facts['rows']:,} rows{groups}")
    if "split" in facts:
        parts.append(
            f"split {facts['split']} ({facts['n_splits']} folds, seed {facts['split_seed']}, "
            f"unit {facts['split_group']})"
        )
    if "n_resamples" in facts:
        parts.append(
            f"intervals: {facts['level']} percentile of {facts['n_resamples']:,} group "
            f"resamples (seed {facts['bootstrap_seed']})"
        )
    parts.append(f"seed {facts['seed']}")
    return "- computed on: " + "; ".join(parts)


def _show(value: Any) -> str:
    return "null" if value is None else json.dumps(value) if isinstance(value, list) else str(value)


def render_report(
    paper: str,
    runs: list[LoggedRun],
    published: pd.DataFrame,
    notes: dict[str, str] | None = None,
    reproduction: SettingsFn = reproduction_settings,
) -> str:
    """The Markdown body of `REPRODUCTION.md` for one paper."""
    sections: list[list[str]] = []
    counted, not_counted = [], []
    for run in runs:
        ours = run.cells
        tables = [t for t in dict.fromkeys(published["table"]) if t in set(ours["table"])]
        if not tables:
            continue
        commit = (run.manifest.get("git") or {}).get("commit")
        data = run.manifest.get("dataset") or {}
        paper_cells = published[published["table"].isin(tables)]
        facts = run_facts(run, paper_cells)
        diffs = setting_differences(run, reproduction)
        lines = []
        if diffs == []:
            counted.append(run.experiment)
            lines += [f"## {run.experiment}", ""]
        else:
            not_counted.append(run.experiment)
            lines += [f"## {run.experiment}: not the reproduction", ""]
            if diffs is None:
                lines += [
                    f"- no reproduction settings (no `conf/experiment/{run.experiment}.yaml`); "
                    "shown for reference, not counted as the reproduction",
                ]
            else:
                shown = "; ".join(
                    f"`{k}={_show(a)}` (reproduction: {_show(b)})" for k, a, b in diffs
                )
                lines += [
                    f"- settings differ from the reproduction settings: {shown}. Shown for "
                    "reference; not counted as the reproduction",
                ]
        lines += [
            f"- outputs: `{_relative(run.output_dir)}`; commit `{commit}`; data "
            f"`{data.get('name')}` fingerprint `{str(data.get('fingerprint'))[:16]}`",
            _header(facts),
            "",
        ]
        if notes and run.experiment in notes:
            lines += [fill_note(notes[run.experiment], facts, run.experiment), ""]
        joined = compare(ours, paper_cells)
        lines += ["| table | row | column | ours | paper | Δ |", "|---|---|---|---|---|---|"]
        for rec in joined.itertuples(index=False):
            o = format_value(
                cell_number(rec.value_ours),
                cell_number(rec.ci_low_ours),
                cell_number(rec.ci_high_ours),
            )
            p = format_value(
                cell_number(rec.value_paper),
                cell_number(rec.ci_low_paper),
                cell_number(rec.ci_high_paper),
            )
            d = "" if rec.delta is None or pd.isna(rec.delta) else f"{rec.delta:+.3f}"
            if rec.status:
                o = rec.status
            lines.append(f"| {rec.table} | {rec.row} | {rec.column} | {o} | {p} | {d} |")
        lines.append("")
        sections.append(lines)
    head = [
        f"# Reproduction report: {paper}",
        "",
        "Written by `make tables` from logged outputs; nothing is recomputed. "
        "Δ = ours − paper. Each section states what its run was computed on; a run whose "
        "settings differ from its experiment's reproduction settings is marked and not "
        "counted as the reproduction.",
        "",
        f"- counted as the reproduction: {', '.join(counted) or 'none'}",
        f"- not counted (settings differ): {', '.join(not_counted) or 'none'}",
        "",
    ]
    return "\n".join(head + [line for sec in sections for line in sec]) + "\n"
