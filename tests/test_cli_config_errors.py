"""A user's config mistake on the command line: one `error:` line, exit 2, and no data read.

Each case runs the real CLI (`python -m runner ...`) in a fresh process (forked from a warm
one, `tests.warm_cli`) whose data loader is replaced by one that exits with status 99, so a
check that happens only after the data load shows up as exit 99, not as a slow success of
the check. Mistakes only the data can reveal (a splitter meeting too few groups) run with
the real loader and end the same way.
"""

from __future__ import annotations

import os
import subprocess
from pathlib import Path

import pytest

pytestmark = pytest.mark.slow  # every test runs `python -m runner` in a process of its own

ROOT = Path(__file__).resolve().parents[1]


@pytest.fixture
def cli(warm_runner, env):
    def cli(
        *overrides: str,
        env: dict[str, str] = env,
        patch: bool = True,
        experiment: str = "rq1_cheap_signals",
        tracking: str | None = "off",
    ) -> subprocess.CompletedProcess:
        """The real CLI; with `patch`, its data loader exits 99 instead of reading data."""
        head = [f"experiment={experiment}", "progress=false"]
        if tracking is not None:
            head.append(f"tracking={tracking}")
        return warm_runner.run([*head, *overrides], env=env, no_data=patch)

    return cli


def one_error_line(done: subprocess.CompletedProcess) -> str:
    assert done.returncode == 2, done.stderr[-2000:]
    (line,) = done.stderr.strip().splitlines()
    assert line.startswith("error: ")
    return line


@pytest.fixture
def env(tmp_path):
    return {
        **os.environ,
        "PYTHONPATH": str(ROOT / "src"),
        "RUNNER_ARTIFACTS_DIR": str(tmp_path / "artifacts"),
    }


@pytest.mark.parametrize(
    ("overrides", "message"),
    [
        (["bootstrap.n_resamples=-5"], "bootstrap.n_resamples must be a positive integer"),
        (["split.n_splits=1"], "split.n_splits must be an integer ≥ 2"),
        (["+bootstrap.n_resamplez=5"], "bootstrap.n_resamplez: unknown key"),
        (["dataset.split=nonexistent"], "valid splits: train, test"),
        (
            ["split.n_splits=abc"],
            "split.n_splits: Value 'abc' of type 'str' could not be converted to Integer "
            "(runner.evaluation.splits.GroupedKFold)",
        ),
        (
            ["bootstrap.n_resamplez=5"],
            "bootstrap.n_resamplez: unknown key (runner.evaluation.config.BootstrapConf has no "
            "'n_resamplez'); did you mean 'n_resamples'?",
        ),
        (["split=nosuch"], "Available options in 'split': grouped_kfold, kfold, leave"),
        (
            ["dataset.split=train", "dataset.path=/nowhere/ragtruth/test.parquet"],
            "set dataset.split=test",
        ),
    ],
)
def test_a_config_mistake_is_one_error_line_and_exit_2_before_any_data(cli, overrides, message):
    done = cli(*overrides)
    assert "the data was loaded" not in done.stderr
    assert message in one_error_line(done)


def test_more_folds_than_the_data_allows_is_one_error_line_naming_the_fix(cli, env, data_dir):
    # Needs the data to know: fails after the load, still as a config error.
    env = {**env, "RUNNER_DATA_DIR": str(data_dir)}
    done = cli("split.n_splits=100000", "dataset.limit=60", "study.params.time_gates=false",
               env=env, patch=False)  # fmt: skip
    line = one_error_line(done)
    assert "fewer than n_splits=100000" in line and "set split.n_splits ≤" in line


# --------------------------------------------------------------------------- splitters
# Splitters check what they can without data when they are built (before any load) and the
# rest when they meet the data; either way the error is a `RunnerError`: one line, exit 2.


def test_a_named_splitter_setting_is_refused_before_any_data_naming_its_key(cli):
    done = cli("splits.target.ks=[1,50]", experiment="rq5_source_shift")
    assert "the data was loaded" not in done.stderr
    assert "splits.target.ks must be a list of integers ≥ 2" in one_error_line(done)


def test_a_row_level_split_on_grouped_data_is_one_line_naming_the_grouped_split(cli, env, data_dir):
    # Only the data shows the leak (a context group on both sides of a fold).
    env = {**env, "RUNNER_DATA_DIR": str(data_dir)}
    done = cli("split=kfold", "dataset.limit=60", "study.params.time_gates=false",
               env=env, patch=False, experiment="rq2_grouped_cv")  # fmt: skip
    line = one_error_line(done)
    assert "on both train and test sides" in line and "split=grouped_kfold" in line


# --------------------------------------------------------------------------- required paths
# A run whose data file is not named stops with the config checks: no MLflow run is opened
# (the tracking store is never created), no traceback.


@pytest.mark.parametrize(
    ("experiment", "overrides", "message"),
    [
        ("route", [], "dataset.path is required and not set"),
        ("operating_report", [], "dataset.path is required and not set"),
        (
            "audit",
            ["dataset.decisions=decisions.parquet"],
            "dataset.labels is required and not set",
        ),
    ],
)
def test_a_missing_required_path_is_one_line_before_any_mlflow_run(
    cli, tmp_path, experiment, overrides, message
):
    done = cli(*overrides, experiment=experiment, tracking=None)
    assert "the data was loaded" not in done.stderr
    assert message in one_error_line(done)
    assert not (tmp_path / "artifacts" / "mlflow.db").exists()


# --------------------------------------------------------------------------- every kind of part
# A mistake in any part is found by the pre-flight check, before any data: one line that
# names the key to change (and, where there are few, its valid choices).


@pytest.mark.parametrize(
    ("experiment", "overrides", "message"),
    [
        ("rq2_grouped_cv", ["gates.ragscope_c.features=[nosuch]"],
         "gates.ragscope_c: unknown lexical feature(s) ['nosuch']; known: ['answer_length'"),
        ("rq1_cheap_signals", ["gates.uncovered.feature=nosuch"],
         "gates.uncovered: unknown lexical feature(s) ['nosuch']"),
        ("rq1_cheap_signals", ["gate.nonexistent=1"], "did you mean gates.<name>.<key>?"),
        ("rq1_cheap_signals", ["gates.uncovered.nonexistent=1"],
         "gates.uncovered.nonexistent: unknown key (runner.gates.FeatureGate has no "
         "'nonexistent'); valid keys: feature, sign"),
        ("rq1_cheap_signals", ["+gates.uncovered.nonexistent=1"],
         "gates.uncovered.nonexistent: unknown key (runner.gates.FeatureGate has no "
         "'nonexistent'); valid keys: feature, sign"),
        ("rq4_verifier_cost", ["verifiers.hhem_full.batch_size=0"],
         "verifiers.hhem_full: hhem: batch_size must be a positive int, got 0"),
        ("claims_verification", ["judges.smollm2_reask.max_new_tokens=0"],
         "judges.smollm2_reask: judge 'smollm2_reask': max_new_tokens must be a positive int"),
        ("claims_verification_lettucedetect", ["span_detector.threshold=null"],
         "span_detector: While dereferencing interpolation '${span_detector.threshold}'"),
        ("operating_report", ["routing.review_budget=2", "dataset.path=x.jsonl"],
         "routing.review_budget=2.0: a fraction in (0, 1]"),
        ("audit", ["routing.engine=nosuch", "dataset.decisions=x", "dataset.labels=y"],
         "routing.engine='nosuch': one of ('local', 'ray')"),
        ("hri_example", ["hri.labels.SUPPORTED.contribution=3"],
         "hri.labels.SUPPORTED.contribution must lie in [0, 1], got 3.0"),
        ("rq1_cheap_signals", ["study.params.gates=[x]"],
         "study.params.gates: unknown key (runner.studies.rq1_cheap_signals.Params has no "
         "'gates'); did you mean 'time_gates'? valid keys: time_gates, timing_rows, "
         "timing_repeats"),
        ("rq1_cheap_signals", ["study.params.time_gates=abc"],
         "study.params.time_gates: Value 'abc' is not a valid bool"),
        ("rq1_cheap_signals", ["dataset.pth=x"],
         "dataset.pth: unknown key (runner.data.ragtruth.load_ragtruth has no 'pth'); "
         "did you mean 'path'?"),
    ],
)  # fmt: skip
def test_a_mistake_in_any_kind_of_part_is_one_line_naming_its_key_before_any_data(
    cli, experiment, overrides, message
):
    done = cli(*overrides, experiment=experiment)
    assert "the data was loaded" not in done.stderr
    assert message in one_error_line(done)
