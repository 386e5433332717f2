"""Ours beside the paper's: the reproduction report that `make tables` writes.

Published numbers live only in `experiments/<paper>/published.csv` (the same long format
as `cells.csv`). This module joins the two on (table, row, column) and writes
`experiments/<paper>/REPRODUCTION.md` with ours | paper | Δ per cell. Nothing here
computes a metric: it reads logged outputs only.

Every section says what its run was computed on (rows, groups, split, resamples,
seeds), read from the run's manifest. A run whose settings differ from its experiment's
reproduction settings (the experiment's config as it stands, composed afresh) is shown
with the differing settings in its header and is not counted as the reproduction. Notes
(`notes.csv`) are templates filled from the run (`{rows:,}`, `{n_resamples:,}`, ...), so
they cannot state a figure the run did not have.
"""

from __future__ import annotations

import json
import math
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pandas as pd

from runner.errors import DataError
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

NOT_SETTINGS = ("experiment", "paths", "progress", "tracking", "hydra")
"""Top-level config keys that do not change a number (where outputs go, logging, bars)."""

IGNORED_SETTINGS = frozenset(
    {
        "dataset.data_dir",
        "dataset.hub_id",
        "study.params.time_gates",
        "study.params.timing_rows",
        "study.params.timing_repeats",
    }
)
"""Settings that change where data comes from or what is timed, not the table cells."""

SettingsFn = Callable[[str], "dict[str, Any] | None"]


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
        raise DataError(
            f"missing columns {missing}; expected {CELL_COLUMNS}", file=str(path), row="header"
        )
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
    lacks) `ours` is empty and `status` says so. A row our study labelled with a
    qualifier (`target-only k=200 (capped: ...)`: the labels actually used differ from the
    paper's) is named in `status` and not compared.
    """
    keys = ["table", "row", "column"]
    merged = published.merge(ours, on=keys, how="left", suffixes=("_paper", "_ours"))
    status, delta = [], []
    for rec in merged.itertuples(index=False):
        o, p = _num(rec.value_ours), _num(rec.value_paper)
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


def flatten(node: Any, prefix: str = "") -> dict[str, Any]:
    """Nested config as dotted keys (lists stay values)."""
    if not isinstance(node, Mapping):
        return {prefix: node}
    out: dict[str, Any] = {}
    for key, value in node.items():
        out.update(flatten(value, f"{prefix}.{key}" if prefix else str(key)))
    return out


def settings(config: Mapping[str, Any]) -> dict[str, Any]:
    """The settings that shape a run's cells: every config key but outputs and logging."""
    kept = {k: v for k, v in config.items() if k not in NOT_SETTINGS}
    return {k: v for k, v in flatten(kept).items() if k not in IGNORED_SETTINGS}


def reproduction_settings(experiment: str) -> dict[str, Any] | None:
    """The experiment's reproduction settings: its config composed afresh, no overrides.

    None when the experiment has no config file (then no run of it counts as the
    reproduction).
    """
    from hydra import compose, initialize_config_dir
    from hydra.core.global_hydra import GlobalHydra
    from omegaconf import OmegaConf

    from runner.config import register_configs
    from runner.paths import PROJECT_ROOT

    conf = PROJECT_ROOT / "conf"
    if not (conf / "experiment" / f"{experiment}.yaml").exists():
        return None
    register_configs()
    GlobalHydra.instance().clear()
    with initialize_config_dir(config_dir=str(conf), version_base="1.3"):
        cfg = compose("config", overrides=[f"experiment={experiment}"])
    kept = {k: cfg[k] for k in cfg if k not in NOT_SETTINGS}
    return settings(OmegaConf.to_container(OmegaConf.create(kept), resolve=True))


def setting_differences(
    run: LoggedRun, reproduction: SettingsFn = reproduction_settings
) -> list[tuple[str, Any, Any]] | None:
    """(key, this run's value, the reproduction's value) for every setting that differs.

    None when the experiment has no reproduction settings.
    """
    wanted = reproduction(run.experiment)
    if wanted is None:
        return None
    have = settings(run.manifest.get("config") or {})
    out = []
    # A null setting means "not set": a run logged before a key existed equals one that
    # leaves it null.
    for key in sorted(set(have) | set(wanted)):
        a, b = have.get(key), wanted.get(key)
        if a != b:
            out.append((key, a, b))
    return out


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
            o = format_value(_num(rec.value_ours), _num(rec.ci_low_ours), _num(rec.ci_high_ours))
            p = format_value(_num(rec.value_paper), _num(rec.ci_low_paper), _num(rec.ci_high_paper))
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
