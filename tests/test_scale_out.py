"""Scale-out against real processes: PostgreSQL, an MLflow server over it and a Ray head.

`scripts/services.sh` starts the three in a temporary folder (one stack for the module);
sweeps then run through `python -m runner -m ... hydra/launcher=ray|submitit_local
tracking=server`, and parallel writers log to SQLite and to the server.
"""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import mlflow
import numpy as np
import pytest
from tests.conftest import process_running, run_runner

from runner import tracking
from runner.errors import ConfigError
from runner.run_record import TrackingConf

ROOT = Path(__file__).resolve().parents[1]
SERVICES = ROOT / "scripts" / "services.sh"
SEEDS = (1, 2, 3, 4)
# a tiny but complete rq1 run: 120 rows (20 groups), few resamples, no timing passes
TINY = (
    "experiment=rq1_cheap_signals",
    "dataset.limit=120",
    "bootstrap=fast",
    "bootstrap.n_resamples=20",
    "study.params.time_gates=false",
    "progress=false",
)


def _services(cmd: str, state: Path, timeout: int = 240) -> subprocess.CompletedProcess:
    env = {
        **os.environ,
        "RUNNER_SERVICES_DIR": str(state),
        "PY": sys.executable,
        "PYTHONPATH": str(ROOT / "src"),  # Ray's workers import this checkout's runner
    }
    return subprocess.run(
        ["bash", str(SERVICES), cmd], env=env, capture_output=True, text=True, timeout=timeout
    )


def _pids(state: Path) -> dict[str, int]:
    return {p.stem: int(p.read_text()) for p in state.glob("*.pid")}


@pytest.fixture(scope="module")
def stack():
    """PostgreSQL + mlflow server + Ray head, started and stopped by the services script."""
    # not under pytest's tmp (mode 700): as root, PostgreSQL runs as `nobody` and must reach it
    state = Path(tempfile.mkdtemp(prefix="runner-services-", dir="/tmp"))
    state.chmod(0o755)
    started = _services("start", state)
    assert started.returncode == 0, started.stdout + started.stderr
    env_file = (state / "services.env").read_text()
    values = dict(
        line.removeprefix("export ").split("=", 1)
        for line in env_file.splitlines()
        if line.startswith("export ")
    )
    pids = _pids(state)
    try:
        yield {"state": state, "status": started.stdout, "pids": pids, **values}
    finally:
        stopped = _services("stop", state)
        assert stopped.returncode == 0, stopped.stdout + stopped.stderr
        assert not [name for name, pid in pids.items() if process_running(pid)]
        shutil.rmtree(state, ignore_errors=True)


def _sweep_env(stack: dict, artifacts: Path) -> dict[str, str]:
    return {
        **os.environ,
        "PYTHONPATH": str(ROOT / "src"),
        "RUNNER_ARTIFACTS_DIR": str(artifacts),
        "MLFLOW_TRACKING_URI": stack["MLFLOW_TRACKING_URI"],
        "RAY_ADDRESS": stack["RAY_ADDRESS"],
        "RAY_ENABLE_WINDOWS_OR_OSX_CLUSTER": stack["RAY_ENABLE_WINDOWS_OR_OSX_CLUSTER"],
    }


def _sweep(
    launcher: str, name: str, stack: dict, artifacts: Path, seeds: tuple[int, ...] = SEEDS
) -> subprocess.CompletedProcess:
    """`python -m runner -m` over `seeds` with a launcher, tracked on the stack's server."""
    seeds = ",".join(map(str, seeds))
    args = ["-m", *TINY, f"bootstrap.seed={seeds}", f"hydra/launcher={launcher}"]
    args += ["tracking=server", f"tracking.experiment_name={name}"]
    return run_runner(*args, env=_sweep_env(stack, artifacts), cwd=artifacts)


def _finished_runs(uri: str, experiment: str) -> list:
    client = mlflow.MlflowClient(uri)
    exp = client.get_experiment_by_name(experiment)
    assert exp is not None, f"no experiment {experiment!r} on {uri}"
    return client.search_runs([exp.experiment_id])


def _cell_metrics(run) -> dict[str, float]:
    return {k: v for k, v in run.data.metrics.items() if not k.startswith("runtime/")}


def _check_sweep(
    uri: str, experiment: str, seeds: tuple[int, ...] = SEEDS
) -> dict[int, dict[str, float]]:
    """A FINISHED run per seed, each with its cells, CIs and output files."""
    runs = _finished_runs(uri, experiment)
    assert sorted(int(r.data.params["bootstrap.seed"]) for r in runs) == list(seeds)
    client = mlflow.MlflowClient(uri)
    by_seed = {}
    for run in runs:
        assert run.info.status == "FINISHED"
        assert run.info.artifact_uri.startswith("mlflow-artifacts:/")  # proxied by the server
        metrics = _cell_metrics(run)
        assert "table3/Combined/uncovered/AUROC/ci_low" in metrics
        names = {a.path for a in client.list_artifacts(run.info.run_id)}
        assert {"cells.csv", "scores.parquet", "manifest.json"} <= names
        local = client.download_artifacts(run.info.run_id, "cells.csv")
        assert Path(local).read_text().startswith("table,row,column")
        by_seed[int(run.data.params["bootstrap.seed"])] = metrics
    # each job wrote its own output folder
    assert len({r.data.tags["output_dir"] for r in runs}) == len(seeds)
    assert all(Path(r.data.tags["output_dir"]).is_dir() for r in runs)
    return by_seed


@pytest.fixture(scope="module")
def ray_sweep(stack, tmp_path_factory) -> dict[int, dict[str, float]]:
    artifacts = tmp_path_factory.mktemp("ray-artifacts")
    done = _sweep("ray", "ray_sweep", stack, artifacts)
    assert done.returncode == 0, done.stderr[-3000:]
    return _check_sweep(stack["MLFLOW_TRACKING_URI"], "ray_sweep")


@pytest.mark.slow
def test_services_status_names_each_service_its_pid_and_address(stack):
    status = _services("status", stack["state"])
    assert status.returncode == 0
    lines = {line.split()[0]: line for line in status.stdout.splitlines() if line[:1].isalpha()}
    for name in ("postgres", "mlflow", "ray"):
        assert f"PID {stack['pids'][name]}" in lines[name] and "running" in lines[name]
    assert stack["MLFLOW_TRACKING_URI"].startswith("http://127.0.0.1:")
    assert stack["MLFLOW_TRACKING_URI"] in lines["mlflow"]
    assert stack["RAY_ADDRESS"] in lines["ray"]


@pytest.mark.slow
def test_a_ray_sweep_of_4_jobs_records_4_finished_runs_on_the_server(ray_sweep):
    assert sorted(ray_sweep) == list(SEEDS)
    # the seed moves the bootstrap intervals, never the point estimates
    points = [
        {k: v for k, v in m.items() if not k.endswith(("ci_low", "ci_high"))}
        for m in ray_sweep.values()
    ]
    assert all(p == points[0] for p in points)
    assert ray_sweep[1] != ray_sweep[2]


@pytest.mark.slow
def test_the_same_sweep_through_submitit_local_gives_the_same_numbers_as_ray(
    stack, ray_sweep, tmp_path
):
    seeds = SEEDS[:2]  # two seeds whose numbers differ (the Ray sweep's test checks it)
    done = _sweep("submitit_local", "submitit_sweep", stack, tmp_path, seeds)
    assert done.returncode == 0, done.stderr[-3000:]
    submitit = _check_sweep(stack["MLFLOW_TRACKING_URI"], "submitit_sweep", seeds)
    # same config + seed => same numbers, whichever launcher
    assert submitit == {seed: ray_sweep[seed] for seed in seeds}
    assert list(tmp_path.glob("multirun/rq1_cheap_signals/*/.submitit/*/*_log.out"))


# -- parallel writers --------------------------------------------------------------------


WRITER = """
import json, sys, time
from pathlib import Path
from omegaconf import OmegaConf
from runner import tracking
from runner.config import run_record
from runner.results import StudyResult

artifacts, uri, job = Path(sys.argv[1]), sys.argv[2] or None, int(sys.argv[3])
cfg = OmegaConf.create({
    "experiment": "parallel", "seed": job,
    "study": {"_target_": "runner.studies.rq1_cheap_signals.CheapSignals", "params": {}},
    "tracking": {"enabled": True, "server": uri is not None, "uri": uri, "artifact_root": None,
                 "experiment_name": "parallel", "run_name": f"job{job}"},
    "paths": {"artifacts_dir": str(artifacts), "output_dir": str(artifacts / f"j{job}")},
})
out = Path(cfg.paths.output_dir)
out.mkdir(parents=True)
(out / "cells.csv").write_text(f"job,{job}\\n")
(out / "scores.parquet").write_bytes(bytes(range(256)) * 4)
result = StudyResult()
for i in range(20):
    result.add("t", f"r{i}", "AUROC", 0.5 + i / 100 + job / 1000)
(artifacts / f"ready{job}").touch()
while not (artifacts / "go").exists():  # all jobs start logging at once
    time.sleep(0.01)
try:
    tracked = tracking.start_run(run_record(cfg), out)  # the pipeline's path: open, finish
    tracked.finish(result, out, {"git": {"commit": "test"}})
    print(json.dumps(None))
except Exception as exc:
    print(json.dumps(f"job {job}: {type(exc).__name__}: {str(exc)[:300]}"))
"""


def _parallel_jobs(artifacts: Path, uri: str | None, jobs: int = 4) -> list[str]:
    """Start `jobs` writer processes, release them together, return their errors."""
    artifacts.mkdir(parents=True)
    env = {**os.environ, "PYTHONPATH": str(ROOT / "src")}
    procs = [
        subprocess.Popen(
            [sys.executable, "-c", WRITER, str(artifacts), uri or "", str(j)],
            env=env,
            stdout=subprocess.PIPE,
            stderr=subprocess.PIPE,
            text=True,
        )
        for j in range(jobs)
    ]
    deadline = time.monotonic() + 120
    while len(list(artifacts.glob("ready*"))) < jobs:
        assert all(p.poll() is None for p in procs), [p.communicate() for p in procs]
        assert time.monotonic() < deadline, "writers did not get ready"
        time.sleep(0.05)
    (artifacts / "go").touch()
    errors = []
    for p in procs:
        out, err = p.communicate(timeout=180)
        assert p.returncode == 0, err[-2000:]
        message = json.loads(out.strip().splitlines()[-1])
        if message:
            errors.append(message)
    return errors


def _kept(uri: str) -> dict[str, object]:
    """What the store holds after the writers: runs, metrics, artifacts (or why it can't say)."""
    try:
        client = mlflow.MlflowClient(uri)
        exp = client.get_experiment_by_name("parallel")
        runs = client.search_runs([exp.experiment_id]) if exp else []
        return {
            "runs": len(runs),
            "finished": sum(r.info.status == "FINISHED" for r in runs),
            "metrics": sum(len(r.data.metrics) for r in runs),
            "artifacts": sum(len(client.list_artifacts(r.info.run_id)) for r in runs),
            "jobs": sorted(r.info.run_name for r in runs),
        }
    except Exception as exc:  # a store broken by the writers is a finding, not a crash
        return {"read_error": f"{type(exc).__name__}: {str(exc)[:200]}"}


@pytest.mark.slow
@pytest.mark.parametrize("backend", ["postgres", "sqlite"])
def test_4_parallel_writers_keep_every_run_metric_and_artifact(stack, tmp_path, backend):
    """4 jobs log at the same instant to a fresh store; none may be lost or broken.

    SQLite: the first writers create the store at once (schema migrations race); the
    PostgreSQL server has migrated its schema at start-up and serialises the writes.
    """
    uri = stack["MLFLOW_TRACKING_URI"] if backend == "postgres" else None
    errors = _parallel_jobs(tmp_path / "store", uri)
    kept = _kept(uri or f"sqlite:///{tmp_path / 'store' / 'mlflow.db'}")
    print(f"\n{backend}: 4 parallel writers kept {kept}; errors {errors}")
    assert errors == []
    assert kept == {
        "runs": 4,
        "finished": 4,
        "metrics": 4 * 20,
        "artifacts": 4 * 2,
        "jobs": [f"job{j}" for j in range(4)],
    }


# -- model registry ------------------------------------------------------------------------


@pytest.mark.slow
def test_the_postgres_backed_registry_registers_aliases_and_loads_a_model(stack):
    from sklearn.linear_model import LogisticRegression

    uri = stack["MLFLOW_TRACKING_URI"]
    rng = np.random.default_rng(0)
    x = rng.normal(size=(60, 3))
    y = (x[:, 0] > 0).astype(int)
    model = LogisticRegression().fit(x, y)
    mlflow.set_tracking_uri(uri)
    mlflow.set_registry_uri(uri)
    try:
        mlflow.set_experiment("registry")
        with mlflow.start_run():
            info = mlflow.sklearn.log_model(model, name="gate", input_example=x[:2])
        client = mlflow.MlflowClient(uri)
        version = mlflow.register_model(info.model_uri, "scale_out_gate").version
        client.set_registered_model_alias("scale_out_gate", "champion", version)
        assert client.get_model_version_by_alias("scale_out_gate", "champion").version == version
        loaded = mlflow.pyfunc.load_model("models:/scale_out_gate@champion")
        np.testing.assert_array_equal(loaded.predict(x), model.predict(x))
    finally:
        mlflow.set_tracking_uri(None)
        mlflow.set_registry_uri(None)


# -- checks before any work ---------------------------------------------------------------


def _server_cfg(uri: str | None) -> TrackingConf:
    return TrackingConf(enabled=True, server=True, uri=uri)


def test_tracking_server_without_a_uri_is_a_config_error_not_a_local_fallback():
    with pytest.raises(ConfigError, match=r"tracking=server needs tracking.uri=http://HOST:PORT"):
        tracking.check(_server_cfg(None))
    with pytest.raises(ConfigError, match=r"got 'sqlite:///x\.db'"):
        tracking.check(_server_cfg("sqlite:///x.db"))


def test_a_server_that_does_not_answer_fails_the_check_naming_the_uri():
    import socket

    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        port = s.getsockname()[1]  # bound, never listening: connections are refused
        uri = f"http://127.0.0.1:{port}"
        with pytest.raises(ConfigError, match=rf"tracking.uri={uri}: no MLflow server answers"):
            tracking.check(_server_cfg(uri), timeout=2)


def test_a_server_uri_leaves_artifacts_to_the_server():
    conf = TrackingConf(uri="http://127.0.0.1:5000", artifact_root=None)
    assert tracking.resolve_uri(conf, "/nowhere") == ("http://127.0.0.1:5000", None)


@pytest.mark.slow
def test_the_cli_stops_before_any_data_when_the_tracking_server_is_missing(tmp_path, warm_runner):
    env = {
        **os.environ,
        "PYTHONPATH": str(ROOT / "src"),
        "RUNNER_DATA_DIR": str(tmp_path / "no-data"),  # a data load would fail differently
        "RUNNER_ARTIFACTS_DIR": str(tmp_path),
    }
    env.pop("MLFLOW_TRACKING_URI", None)
    done = warm_runner.run(["experiment=rq1_cheap_signals", "tracking=server"], env=env)
    assert done.returncode == 2
    assert done.stderr.strip().splitlines()[-1].startswith("error: tracking=server needs")
