"""A splitter mistake on the command line: one `error:` line naming the fix, exit 2.

Splitters check what they can without data when they are built (before any load) and the
rest when they meet the data; either way the error is a `RunnerError`, which
`python -m runner` prints as one line instead of a traceback. The first case runs with a
data loader that exits 99, so a check that waited for the data would show up as exit 99.
"""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]

NO_DATA = """
import os, runpy, sys
import runner.pipeline as pipeline

def no_data(cfg):
    sys.stderr.write("the data was loaded\\n")
    sys.stderr.flush()
    os._exit(99)

pipeline.load_data = no_data
runpy.run_module("runner", run_name="__main__", alter_sys=True)
"""


def cli(experiment: str, *overrides: str, env: dict, data: bool) -> subprocess.CompletedProcess:
    head = [sys.executable, "-m", "runner"] if data else [sys.executable, "-c", NO_DATA]
    return subprocess.run(
        [*head, f"experiment={experiment}", "tracking=off", "progress=false", *overrides],
        cwd=ROOT,
        env=env,
        capture_output=True,
        text=True,
        timeout=600,
    )


@pytest.fixture
def env(tmp_path):
    return {
        **os.environ,
        "PYTHONPATH": str(ROOT / "src"),
        "RUNNER_ARTIFACTS_DIR": str(tmp_path / "artifacts"),
    }


def one_error_line(done: subprocess.CompletedProcess) -> str:
    assert done.returncode == 2, done.stderr[-2000:]
    (line,) = done.stderr.strip().splitlines()
    assert line.startswith("error: ")
    return line


def test_a_named_splitter_setting_is_refused_before_any_data_naming_its_key(env):
    done = cli("rq5_source_shift", "splits.target.ks=[1,50]", env=env, data=False)
    assert "the data was loaded" not in done.stderr
    assert "splits.target.ks must be a list of integers ≥ 2" in one_error_line(done)


@pytest.mark.parametrize(
    ("overrides", "messages"),
    [
        (["split.n_splits=100000"], ["fewer than n_splits=100000", "set split.n_splits ≤"]),
        (["split=kfold"], ["on both train and test sides", "split=grouped_kfold"]),
    ],
)
def test_rq2_split_mistakes_that_need_the_data_are_one_line_naming_the_fix(
    env, data_dir, overrides, messages
):
    env = {**env, "RUNNER_DATA_DIR": str(data_dir)}
    done = cli(
        "rq2_grouped_cv",
        *overrides,
        "dataset.limit=60",
        "study.params.time_gates=false",
        env=env,
        data=True,
    )
    line = one_error_line(done)
    for message in messages:
        assert message in line
