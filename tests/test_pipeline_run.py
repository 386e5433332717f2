"""A run never loses an earlier result: own run folder, `latest` switched only when complete.

The study is the real HRI worked example (small, real data, ~1 s), run through the real
pipeline; the killed and concurrent cases run real `python -m runner` processes.
"""

from __future__ import annotations

import fcntl
import json
import os
import signal
import subprocess
import sys
import textwrap
import time
from pathlib import Path

import pytest
from hydra import compose, initialize_config_dir

from runner.config import register_configs
from runner.errors import ConfigError
from runner.pipeline import run
from runner.reporting import outputs
from runner.reporting.run_folders import complete_runs, incomplete_runs, latest_run_dir

ROOT = Path(__file__).resolve().parents[1]
CONF = ROOT / "conf"
EXPERIMENT = "hri_example"

register_configs()


def config(artifacts: Path, *overrides: str):
    with initialize_config_dir(config_dir=str(CONF), version_base="1.3"):
        return compose(
            "config",
            overrides=[
                f"experiment={EXPERIMENT}",
                "tracking=off",
                "progress=false",
                f"paths.artifacts_dir={artifacts}",
                *overrides,
            ],
        )


def cli(artifacts: Path, *args: str, **kwargs) -> subprocess.Popen:
    env = {**os.environ, "RUNNER_ARTIFACTS_DIR": str(artifacts)}
    return subprocess.Popen(
        [sys.executable, "-m", "runner", "progress=false", *args],
        cwd=ROOT,
        env=env,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
        **kwargs,
    )


def render_tables(artifacts: Path, tmp_path: Path) -> subprocess.CompletedProcess:
    experiments = tmp_path / "experiments"
    if not experiments.exists():
        experiments.mkdir()
        (experiments / "hri").mkdir()
        (experiments / "hri" / "published.csv").write_bytes(
            (ROOT / "experiments" / "hri" / "published.csv").read_bytes()
        )
    return subprocess.run(
        [
            sys.executable,
            str(ROOT / "scripts" / "render_tables.py"),
            "--artifacts",
            str(artifacts),
            "--experiments",
            str(experiments),
        ],
        capture_output=True,
        text=True,
        timeout=300,
        env={**os.environ, "PYTHONPATH": str(ROOT / "src")},
    )


def test_each_run_gets_its_own_folder_and_latest_points_at_the_newest(tmp_path):
    first = run(config(tmp_path))
    second = run(config(tmp_path))
    exp = tmp_path / EXPERIMENT
    assert first.output_dir != second.output_dir
    assert first.output_dir.parent == second.output_dir.parent == exp / "runs"
    assert latest_run_dir(exp) == second.output_dir
    for out in (first, second):
        assert (out.output_dir / "cells.csv").is_file()
        manifest = json.loads((out.output_dir / "manifest.json").read_text())
        assert manifest["run"]["id"] == out.run_id == out.output_dir.name
    a, b = (o.output_dir / "cells.csv" for o in (first, second))
    assert a.read_bytes() == b.read_bytes()


def test_a_plain_run_keeps_the_earlier_sweep_outputs_of_the_experiment(tmp_path):
    sweep_job = tmp_path / EXPERIMENT / "multirun" / "2026-01-01_00-00-00" / "seed=2"
    sweep_job.mkdir(parents=True)
    (sweep_job / "cells.csv").write_text("kept\n")
    run(config(tmp_path))
    assert (sweep_job / "cells.csv").read_text() == "kept\n"


def test_a_failure_in_the_write_phase_leaves_the_previous_result_as_latest(tmp_path, monkeypatch):
    good = run(config(tmp_path))
    real = outputs.write_json

    def crash_on_manifest(path: Path, obj) -> None:
        if path.name == "manifest.json":
            raise OSError("disk full (simulated)")
        real(path, obj)

    monkeypatch.setattr(outputs, "write_json", crash_on_manifest)
    with pytest.raises(OSError, match="disk full"):
        run(config(tmp_path))
    exp = tmp_path / EXPERIMENT
    assert latest_run_dir(exp) == good.output_dir
    assert complete_runs(exp) == [good.run_id]
    assert incomplete_runs(exp) == []  # the failed run's temporary folder is removed


def test_keep_runs_must_be_positive_and_is_checked_before_any_work(tmp_path):
    with pytest.raises(ConfigError, match=r"paths\.keep_runs"):
        run(config(tmp_path, "paths.keep_runs=0"))
    assert not (tmp_path / EXPERIMENT).exists()


def test_keep_runs_bounds_the_kept_runs(tmp_path):
    outs = [run(config(tmp_path, "paths.keep_runs=2")) for _ in range(3)]
    assert complete_runs(tmp_path / EXPERIMENT) == [o.run_id for o in outs[1:]]


KILL_IN_WRITE_PHASE = textwrap.dedent(
    """
    import os, signal, sys
    from hydra import compose, initialize_config_dir
    from runner.config import register_configs
    from runner.pipeline import run
    from runner.reporting import outputs

    register_configs()
    real = outputs.write_json

    def killed_before_manifest(path, obj):
        if path.name == "manifest.json":
            os.kill(os.getpid(), signal.SIGKILL)  # no cleanup, like a kill -9 or power loss
        real(path, obj)

    outputs.write_json = killed_before_manifest
    with initialize_config_dir(config_dir=sys.argv[1], version_base="1.3"):
        cfg = compose("config", overrides=sys.argv[2:])
    run(cfg)
    """
)


def kill_in_write_phase(artifacts: Path, experiment: str = EXPERIMENT) -> int:
    done = subprocess.run(
        [
            sys.executable,
            "-c",
            KILL_IN_WRITE_PHASE,
            str(CONF),
            f"experiment={experiment}",
            "tracking=off",
            "progress=false",
            f"paths.artifacts_dir={artifacts}",
        ],
        capture_output=True,
        text=True,
        timeout=300,
        env={**os.environ, "PYTHONPATH": str(ROOT / "src")},
    )
    return done.returncode


@pytest.mark.slow
def test_a_run_killed_in_its_write_phase_leaves_the_previous_result_readable(tmp_path):
    artifacts = tmp_path / "artifacts"
    good = run(config(artifacts))
    assert kill_in_write_phase(artifacts) == -signal.SIGKILL
    exp = artifacts / EXPERIMENT
    assert latest_run_dir(exp) == good.output_dir
    assert len(incomplete_runs(exp)) == 1  # the killed run's partial folder, never `latest`
    assert (incomplete_runs(exp)[0] / "cells.csv").exists()  # it was killed while writing
    done = render_tables(artifacts, tmp_path)
    assert done.returncode == 0, done.stderr[-2000:]
    assert f"hri_example: tables + 0 figures re-rendered in {good.output_dir}" in done.stdout
    report = (tmp_path / "experiments" / "hri" / "REPRODUCTION.md").read_text()
    assert "## hri_example" in report


@pytest.mark.slow
def test_the_next_run_removes_the_folder_of_a_run_killed_outright(tmp_path):
    artifacts = tmp_path / "artifacts"
    assert kill_in_write_phase(artifacts) == -signal.SIGKILL  # no chance to clean up
    exp = artifacts / EXPERIMENT
    [killed] = incomplete_runs(exp)
    done = run(config(artifacts))
    assert incomplete_runs(exp) == [] and not killed.exists()
    assert latest_run_dir(exp) == done.output_dir


@pytest.mark.slow
def test_make_tables_names_a_study_whose_only_run_was_killed_and_why(tmp_path):
    artifacts = tmp_path / "artifacts"
    run(config(artifacts))  # something to render, so the report is written
    assert kill_in_write_phase(artifacts, "hri_calibration") == -signal.SIGKILL
    done = render_tables(artifacts, tmp_path)
    assert done.returncode == 0, done.stderr[-2000:]
    line = next(s for s in done.stdout.splitlines() if s.startswith("skipped hri_calibration:"))
    assert "incomplete run folder" in line and "killed" in line
    assert "skipped rq2_grouped_cv: no run yet" in done.stdout


@pytest.mark.slow
def test_two_concurrent_runs_of_one_experiment_both_finish_with_their_figures(tmp_path):
    # the HRI calibration study draws figures: the old layout crashed one run in write_figures
    args = ("experiment=hri_calibration", "bootstrap=fast", "tracking=off")
    procs = [cli(tmp_path, *args) for _ in range(2)]
    for p in procs:
        _, err = p.communicate(timeout=900)  # reads both pipes, so neither run blocks on them
        assert p.returncode == 0, err[-2000:]
    exp = tmp_path / "hri_calibration"
    runs = complete_runs(exp)
    assert len(runs) == 2
    assert latest_run_dir(exp).name == max(runs)
    first, second = (exp / "runs" / r for r in runs)
    for name in ("cells.csv", "scores.parquet"):
        assert (first / name).read_bytes() == (second / name).read_bytes(), name
    figures = sorted(p.name for p in (first / "figures").iterdir())
    assert figures and figures == sorted(p.name for p in (second / "figures").iterdir())


def blocking_run(tmp_path: Path) -> tuple[list[str], Path]:
    """Overrides of a run whose data load blocks (`tests.blocking_loader`), and the file it
    writes once loading: by then its folder and its MLflow run exist."""
    conf = tmp_path / "conf"
    (conf / "dataset").mkdir(parents=True)
    loading = tmp_path / "loading"
    (conf / "dataset" / "blocking.yaml").write_text(
        f"_target_: tests.blocking_loader.load\nready: {loading}\n"
    )
    args = [f"experiment={EXPERIMENT}", "dataset=blocking", f"hydra.searchpath=[file://{conf}]"]
    return args, loading


def wait_until(done, proc: subprocess.Popen, timeout: float = 300) -> None:
    """Poll `done` while `proc` runs (a state to reach, not a time to wait)."""
    deadline = time.monotonic() + timeout
    while not done():
        assert proc.poll() is None, proc.communicate()[1][-2000:]
        assert time.monotonic() < deadline, "the run never reached the state"
        time.sleep(0.1)


@pytest.mark.slow
def test_a_sigterm_ends_the_mlflow_run_killed_and_removes_the_unfinished_folder(tmp_path):
    from mlflow import MlflowClient

    artifacts = tmp_path / "artifacts"
    args, loading = blocking_run(tmp_path)
    proc = cli(artifacts, *args)
    wait_until(loading.exists, proc)
    client = MlflowClient(f"sqlite:///{artifacts / 'mlflow.db'}")
    [opened] = client.search_runs([client.get_experiment_by_name(EXPERIMENT).experiment_id])
    assert opened.info.status == "RUNNING" and incomplete_runs(artifacts / EXPERIMENT)
    proc.send_signal(signal.SIGTERM)
    _, err = proc.communicate(timeout=300)
    assert proc.returncode == 128 + signal.SIGTERM, err[-2000:]
    assert "error: run stopped by SIGTERM" in err
    ended = client.get_run(opened.info.run_id)
    assert ended.info.status == "KILLED"
    assert ended.data.tags["error"] == "Terminated: stopped by SIGTERM"
    assert incomplete_runs(artifacts / EXPERIMENT) == []
    assert complete_runs(artifacts / EXPERIMENT) == []


@pytest.mark.slow
def test_a_sighup_before_the_mlflow_run_opens_leaves_no_unfinished_folder(tmp_path):
    artifacts = tmp_path / "artifacts"
    artifacts.mkdir()
    args, loading = blocking_run(tmp_path)
    with open(artifacts / "mlflow.db.lock", "a") as store:  # `tracking.store_lock`'s file
        fcntl.flock(store, fcntl.LOCK_EX)  # the store is busy: the run waits to open its run
        proc = cli(artifacts, *args)
        wait_until(lambda: incomplete_runs(artifacts / EXPERIMENT), proc)
        proc.send_signal(signal.SIGHUP)
        _, err = proc.communicate(timeout=300)
    assert proc.returncode == 128 + signal.SIGHUP, err[-2000:]
    assert not loading.exists()  # stopped before it loaded: no MLflow run was open
    assert incomplete_runs(artifacts / EXPERIMENT) == []
