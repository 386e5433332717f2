"""Slurm for real: sweeps through `sbatch` on a one-node cluster, logged to the server.

`scripts/services.sh start postgres mlflow slurm` starts, in a temporary folder,
PostgreSQL, an MLflow server over it and munged + slurmctld + slurmd on 127.0.0.1 (one
stack for the module). `python -m runner -m ... hydra/launcher=submitit_slurm
tracking=server` then submits job arrays to that slurmctld: a 2-job sweep of
`hri_example` and a job that fails. Needs Debian's slurm-wlm and munge
(scripts/ci_system_deps.sh); without them the module fails, it never skips.
"""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
import tempfile
from pathlib import Path

import mlflow
import pytest
from tests.conftest import process_running, run_experiment

from runner.tracking import cell_metrics

ROOT = Path(__file__).resolve().parents[1]
SERVICES = ROOT / "scripts" / "services.sh"
DAEMONS = ("munged", "slurmctld", "slurmd", "sbatch", "squeue", "sinfo", "scontrol")
SBIN = os.pathsep.join(["/usr/sbin", "/sbin"])  # munged and the Slurm daemons
HRI = ("default", "ahp")  # the 2 jobs of the sweep: two HRI weightings, different cells
COMMON = ("experiment=hri_example", "progress=false", "bootstrap=fast")
# one CPU per job, so the 2 jobs run at once on a 2-CPU node (the config asks for 2)
LAUNCHER = ("hydra/launcher=submitit_slurm", "hydra.launcher.cpus_per_task=1")


def _require_slurm() -> None:
    path = os.pathsep.join([os.environ.get("PATH", ""), SBIN])
    missing = [b for b in DAEMONS if shutil.which(b, path=path) is None]
    if missing:
        pytest.fail(
            f"Slurm/munge not installed ({', '.join(missing)} not found): "
            "run scripts/ci_system_deps.sh (Debian's slurm-wlm and munge)"
        )


def _services(cmd: str, state: Path, *components: str) -> subprocess.CompletedProcess:
    env = {**os.environ, "RUNNER_SERVICES_DIR": str(state), "PY": sys.executable}
    return subprocess.run(
        ["bash", str(SERVICES), cmd, *components],
        env=env,
        capture_output=True,
        text=True,
        timeout=240,
    )


def _pids(state: Path) -> dict[str, int]:
    files = [*state.glob("*.pid"), *(state / "slurm").glob("*.pid")]
    return {p.stem: int(p.read_text()) for p in files}


def _carrying(conf: Path) -> list[int]:
    """Processes whose environment names this cluster's slurm.conf (daemons, steps, jobs)."""
    needle = f"SLURM_CONF={conf}".encode()
    found = []
    for proc in Path("/proc").iterdir():
        if not proc.name.isdigit() or int(proc.name) == os.getpid():
            continue
        try:
            environ = (proc / "environ").read_bytes()
        except OSError:
            continue
        if needle in environ.split(b"\0") and process_running(int(proc.name)):
            found.append(int(proc.name))
    return found


@pytest.fixture(scope="module")
def cluster():
    """PostgreSQL + mlflow server + one-node Slurm, started and stopped by the script.

    Stopping is checked here, once the module's last test is done in whatever order they ran
    (a test that stopped the stack would break every test shuffled after it): each service
    is reported stopped by its PID and runs no more, no slurmstepd, job or daemon of this
    cluster is left, and services.env is gone.
    """
    _require_slurm()
    # not under pytest's tmp (mode 700): as root, PostgreSQL runs as `nobody` and must reach
    # it; a short path, too (munged's socket lives in it)
    state = Path(tempfile.mkdtemp(prefix="runner-slurm-", dir="/tmp"))
    state.chmod(0o755)
    started = _services("start", state, "postgres", "mlflow", "slurm")
    try:
        assert started.returncode == 0, started.stdout + started.stderr
        values = dict(
            line.removeprefix("export ").split("=", 1)
            for line in (state / "services.env").read_text().splitlines()
            if line.startswith("export ")
        )
        env = {
            **os.environ,
            "PYTHONPATH": str(ROOT / "src"),
            "MLFLOW_TRACKING_URI": values["MLFLOW_TRACKING_URI"],
            "SLURM_CONF": values["SLURM_CONF"],
            # services.env puts the cluster's bin/ (its sacct) before the PATH
            "PATH": os.pathsep.join([str(state / "slurm" / "bin"), os.environ["PATH"]]),
        }
        pids = _pids(state)
        yield {"state": state, "status": started.stdout, "pids": pids, "env": env}
        conf = Path(env["SLURM_CONF"])
        stopped = _services("stop", state)
        assert stopped.returncode == 0, stopped.stdout + stopped.stderr
        for name in ("slurmd", "slurmctld", "munged", "mlflow", "postgres"):
            assert f"stopped {name} (PID {pids[name]})" in stopped.stdout
        assert [n for n, pid in pids.items() if process_running(pid)] == []
        assert _carrying(conf) == []  # no slurmstepd, job or daemon of this cluster is left
        assert not (state / "services.env").exists()
    finally:
        stopped = _services("stop", state)  # a no-op once stopped above
        assert stopped.returncode == 0, stopped.stdout + stopped.stderr
        shutil.rmtree(state, ignore_errors=True)


def _sweep(cluster: dict, artifacts: Path, *overrides: str) -> subprocess.Popen:
    """`python -m runner -m` through sbatch, tracked on the cluster's server (not waited for)."""
    artifacts.mkdir(parents=True)
    env = {**cluster["env"], "RUNNER_ARTIFACTS_DIR": str(artifacts)}
    args = ["-m", *COMMON, *overrides, *LAUNCHER, "tracking=server"]
    return subprocess.Popen(
        [sys.executable, "-m", "runner", *args],
        cwd=artifacts,
        env=env,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
    )


@pytest.fixture(scope="module")
def sweeps(cluster, tmp_path_factory) -> dict[str, tuple[int, str, Path]]:
    """The 2-job sweep and the failing job, submitted together; (exit code, stderr, folder)."""
    root = tmp_path_factory.mktemp("slurm-sweeps")
    procs = {
        "ok": _sweep(
            cluster,
            root / "ok",
            f"hri={','.join(HRI)}",
            "tracking.experiment_name=slurm_sweep",
        ),
        # checks pass (the study's check, the server), then the study finds no such response
        "fail": _sweep(
            cluster,
            root / "fail",
            "study.params.response_id=nope",
            "tracking.experiment_name=slurm_fail",
        ),
    }
    done = {}
    try:
        for name, proc in procs.items():
            _, err = proc.communicate(timeout=300)
            done[name] = (proc.returncode, err, root / name)
    finally:
        for proc in procs.values():  # a sweep still waiting after 300 s is not left behind
            if proc.poll() is None:
                proc.kill()
                proc.wait()
    return done


def _runs(cluster: dict, experiment: str) -> list:
    client = mlflow.MlflowClient(cluster["env"]["MLFLOW_TRACKING_URI"])
    exp = client.get_experiment_by_name(experiment)
    assert exp is not None, f"no experiment {experiment!r} on the server"
    return client.search_runs([exp.experiment_id])


def _squeue(cluster: dict, *args: str) -> list[str]:
    done = subprocess.run(
        ["squeue", "--noheader", *args],
        env=cluster["env"],
        capture_output=True,
        text=True,
        timeout=30,
    )
    assert done.returncode == 0, done.stderr
    return done.stdout.split()


@pytest.mark.slow
def test_the_cluster_is_one_idle_node_with_every_file_in_its_folder(cluster):
    state = cluster["state"]
    lines = {line.split()[0]: line for line in cluster["status"].splitlines() if line[:1].isalpha()}
    for name in ("postgres", "mlflow", "munged", "slurmctld", "slurmd"):
        assert "running" in lines[name] and f"PID {cluster['pids'][name]}" in lines[name]
    assert "node localhost idle" in lines["slurmd"]
    conf = (state / "slurm" / "slurm.conf").read_text()
    assert f"AuthInfo=socket={state}/slurm/munge/munge.socket" in conf
    assert "SlurmctldHost=localhost(127.0.0.1)" in conf
    assert "AccountingStorageType=accounting_storage/none" in conf
    for key in ("StateSaveLocation", "SlurmdSpoolDir", "SlurmctldPidFile", "SlurmdLogFile"):
        assert f"{key}={state}/slurm/" in conf
    assert cluster["env"]["SLURM_CONF"] == str(state / "slurm" / "slurm.conf")


@pytest.mark.slow
def test_a_2_job_slurm_sweep_records_2_finished_runs_with_the_cells_of_a_local_run(
    cluster, sweeps, tmp_path
):
    code, err, folder = sweeps["ok"]
    assert code == 0, err[-3000:]
    # the jobs went through sbatch, as one array of 2
    (script,) = folder.glob("multirun/hri_example/*/.submitit/*/*_submission.sh")
    assert "#SBATCH --array=0-1%2" in script.read_text()
    runs = _runs(cluster, "slurm_sweep")
    assert sorted(_choice(r, "hri") for r in runs) == sorted(HRI)
    client = mlflow.MlflowClient(cluster["env"]["MLFLOW_TRACKING_URI"])
    array_ids = set()
    for run in runs:
        assert run.info.status == "FINISHED"
        assert run.info.artifact_uri.startswith("mlflow-artifacts:/")  # via the server
        tags = run.data.tags
        assert tags["slurm_node"] == "localhost"
        array_ids.add(tags["slurm_array_job_id"])
        hri = _choice(run, "hri")
        # the same config run locally, in this process, without Slurm or a server
        local = run_experiment(tmp_path / hri, "hri_example", f"hri={hri}", "tracking=off")
        slurm_cells = Path(client.download_artifacts(run.info.run_id, "cells.csv", str(tmp_path)))
        assert slurm_cells.read_bytes() == (local.output_dir / "cells.csv").read_bytes()
        metrics = {k: v for k, v in run.data.metrics.items() if not k.startswith("runtime/")}
        assert metrics == cell_metrics(local.result)
    assert len(array_ids) == 1
    assert sorted(r.data.tags["slurm_array_task_id"] for r in runs) == ["0", "1"]


def _choice(run, key: str) -> str:
    """The value a run's command line gave `key` (from its `overrides` tag)."""
    (value,) = [
        o.split("=", 1)[1] for o in run.data.tags["overrides"].split() if o.startswith(f"{key}=")
    ]
    return value


@pytest.mark.slow
def test_a_job_that_fails_is_a_failed_run_tagged_with_its_slurm_job(cluster, sweeps):
    code, err, _ = sweeps["fail"]
    assert code != 0
    assert "state: FAILED" in err and "response_id='nope'" in err  # submitit saw Slurm's state
    (run,) = _runs(cluster, "slurm_fail")
    assert run.info.status == "FAILED"
    assert "nope" in run.data.tags["error"]
    # a sweep of one job is a plain job, not an array: its id alone names it
    tags = run.data.tags
    assert "slurm_array_job_id" not in tags
    job = tags["slurm_job_id"]
    # Slurm's own record of that job says FAILED
    assert _squeue(cluster, "--states=all", f"--jobs={job}", "--format=%i|%T") == [f"{job}|FAILED"]


@pytest.mark.slow
def test_after_the_sweeps_the_queue_is_empty(cluster, sweeps):
    # that `stop` then leaves no process is checked by `cluster` when the module is done
    assert _squeue(cluster) == []  # nothing pending, running or completing
