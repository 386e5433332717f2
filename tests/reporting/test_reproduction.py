"""The reproduction report joins ours with the paper's cell by cell, without recomputing."""

from __future__ import annotations

from pathlib import Path

import pandas as pd
import pytest

from runner.reporting.comparison import compare
from runner.reporting.logged_runs import LoggedRun
from runner.reporting.reproduction import render_report
from runner.reporting.reproduction_settings import (
    reproduction_settings,
    setting_differences,
    settings,
)

PUBLISHED = pd.DataFrame(
    {
        "table": ["t3", "t3", "t8a"],
        "row": ["QA", "Combined", "DROP"],
        "column": ["AUROC", "AUROC", "AUROC"],
        "value": [0.70, 0.80, 0.51],
        "ci_low": [None, None, 0.47],
        "ci_high": [None, None, 0.54],
    }
)
OURS = pd.DataFrame(
    {
        "table": ["t3", "t3", "t8a"],
        "row": ["QA", "Combined", "RAGTruth"],
        "column": ["AUROC", "AUROC", "AUROC"],
        "value": [0.72, 0.79, 0.6],
        "ci_low": [None, None, None],
        "ci_high": [None, None, None],
    }
)


def test_delta_is_ours_minus_paper_and_missing_cells_are_marked():
    joined = compare(OURS, PUBLISHED)
    by_row = joined.set_index("row")
    assert by_row.loc["QA", "delta"] == pytest.approx(0.02)
    assert by_row.loc["Combined", "delta"] == pytest.approx(-0.01)
    assert by_row.loc["DROP", "status"] == "not in our run"


def test_report_lists_every_published_cell_of_the_tables_we_ran(tmp_path):
    run = LoggedRun("rq2", "rq2_grouped_cv", tmp_path, OURS, {"git": {"commit": "abc"}})
    text = render_report("ragscope", [run], PUBLISHED)
    assert "| t3 | QA | AUROC | 0.720 | 0.700 | +0.020 |" in text
    assert "| t8a | DROP | AUROC | not in our run | 0.510 [0.470, 0.540] |  |" in text


def _manifest(rows: int = 2700, n_resamples: int = 1000, limit: int | None = None) -> dict:
    return {
        "git": {"commit": "abc"},
        "dataset": {
            "name": "ragtruth",
            "fingerprint": "f" * 64,
            "info": {"rows": rows, "groups": 450},
        },
        "config": {
            "seed": 13,
            "dataset": {"name": "ragtruth", "split": "test", "limit": limit},
            "split": {
                "_target_": "runner.evaluation.splits.GroupedKFold",
                "n_splits": 5,
                "seed": 13,
                "group_col": "group_id",
            },
            "bootstrap": {"n_resamples": n_resamples, "level": 0.95, "seed": 13},
            "paths": {"artifacts_dir": "/somewhere"},
        },
    }


def _reproduction(experiment: str) -> dict:
    return settings(_manifest()["config"])


def test_a_run_with_reproduction_settings_is_counted_and_its_header_says_what_it_ran_on(tmp_path):
    run = LoggedRun("rq2", "rq2_grouped_cv", tmp_path, OURS, _manifest())
    text = render_report("ragscope", [run], PUBLISHED, reproduction=_reproduction)
    assert "- counted as the reproduction: rq2" in text
    assert "## rq2\n" in text
    assert "2,700 rows, 450 groups" in text
    assert "95 % percentile of 1,000 group resamples" in text


def test_a_limited_run_names_the_limit_and_is_not_counted(tmp_path):
    manifest = _manifest(rows=600, limit=600)
    run = LoggedRun("rq2", "rq2_grouped_cv", tmp_path, OURS, manifest)
    text = render_report("ragscope", [run], PUBLISHED, reproduction=_reproduction)
    assert "## rq2: not the reproduction" in text
    assert "`dataset.limit=600` (reproduction: null)" in text
    assert "- counted as the reproduction: none" in text
    assert "600 rows" in text and "2,700" not in text


def test_fewer_resamples_are_stated_in_the_header_and_the_run_is_not_counted(tmp_path):
    run = LoggedRun("rq2", "rq2_grouped_cv", tmp_path, OURS, _manifest(n_resamples=20))
    text = render_report("ragscope", [run], PUBLISHED, reproduction=_reproduction)
    assert "`bootstrap.n_resamples=20` (reproduction: 1000)" in text
    assert "percentile of 20 group resamples" in text
    assert "1,000" not in text


def test_notes_are_filled_from_the_run_and_a_missing_fact_is_an_error(tmp_path):
    run = LoggedRun("rq2", "rq2_grouped_cv", tmp_path, OURS, _manifest(rows=600, limit=600))
    notes = {"rq2": "On {rows:,} rows and {groups:,} groups, {n_resamples:,} resamples."}
    text = render_report("ragscope", [run], PUBLISHED, notes, reproduction=_reproduction)
    assert "On 600 rows and 450 groups, 1,000 resamples." in text
    with pytest.raises(ValueError, match=r"notes\.csv, experiment 'rq2'.*'passages'"):
        render_report(
            "ragscope", [run], PUBLISHED, {"rq2": "{passages}"}, reproduction=_reproduction
        )


def test_a_row_labelled_with_the_labels_actually_used_is_not_compared():
    published = pd.DataFrame(
        {
            "table": ["t8b"],
            "row": ["target-only k=200"],
            "column": ["AUROC SE"],
            "value": [0.004],
            "ci_low": [None],
            "ci_high": [None],
        }
    )
    ours = pd.DataFrame(
        {
            "table": ["t8b"],
            "row": ["target-only k=200 (capped: A 191)"],
            "column": ["AUROC SE"],
            "value": [None],
            "ci_low": [None],
            "ci_high": [None],
        }
    )
    joined = compare(ours, published)
    assert joined["status"].iloc[0] == "not compared: ours is `target-only k=200 (capped: A 191)`"
    assert joined["delta"].iloc[0] is None


def test_reproduction_settings_are_the_experiment_config_composed_afresh():
    from hydra import compose, initialize_config_dir

    from runner.config import recorded
    from runner.paths import PROJECT_ROOT

    wanted = reproduction_settings("rq1_cheap_signals")
    assert wanted["bootstrap.n_resamples"] == 1000 and wanted["dataset.limit"] is None
    with initialize_config_dir(config_dir=str(PROJECT_ROOT / "conf"), version_base="1.3"):
        cfg = compose(
            "config",
            overrides=[
                "experiment=rq1_cheap_signals",
                "bootstrap.n_resamples=20",
                "progress=false",
            ],
        )
    manifest = {"config": recorded(cfg)}  # as the manifest records it
    run = LoggedRun("rq1_cheap_signals", "rq1_cheap_signals", Path("."), OURS, manifest)
    assert setting_differences(run) == [("bootstrap.n_resamples", 20, 1000)]
    assert reproduction_settings("no_such_experiment") is None


def test_a_setting_the_run_predates_counts_as_unset_when_the_reproduction_leaves_it_null():
    from hydra import compose, initialize_config_dir
    from omegaconf import OmegaConf

    from runner.config import register_configs
    from runner.paths import PROJECT_ROOT

    register_configs()
    with initialize_config_dir(config_dir=str(PROJECT_ROOT / "conf"), version_base="1.3"):
        cfg = compose("config", overrides=["experiment=rq1_cheap_signals"])
    config = OmegaConf.to_container(cfg, resolve=True)
    assert config["dataset"]["limit"] is None
    del config["dataset"]["limit"]
    run = LoggedRun("rq1_cheap_signals", "rq1_cheap_signals", Path("."), OURS, {"config": config})
    assert setting_differences(run) == []
    config["dataset"]["limit"] = 600
    assert setting_differences(run) == [("dataset.limit", 600, None)]
