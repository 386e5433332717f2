"""The command line: a run logs to MLflow, and a missing data set stops it at once."""

from __future__ import annotations

import json
import os
import sys

import mlflow
import pytest
from tests.conftest import run, run_runner

from runner.reporting.outputs import latest_run_dir

NO_NETWORK = """
import os, runpy, socket, sys

def refuse(*args, **kwargs):
    sys.stderr.write("network connection attempted\\n")
    sys.stderr.flush()
    os._exit(98)

socket.socket.connect = refuse
socket.create_connection = refuse
runpy.run_module("runner", run_name="__main__", alter_sys=True)
"""


@pytest.mark.slow
def test_without_data_the_run_stops_at_once_saying_where_to_put_the_files(tmp_path):
    env = {
        **os.environ,
        "RUNNER_DATA_DIR": str(tmp_path / "empty"),
        "RUNNER_ARTIFACTS_DIR": str(tmp_path / "artifacts"),
    }
    # No Hub retry loop: any network connection attempt ends the run with status 98.
    done = run(
        [sys.executable, "-c", NO_NETWORK, "experiment=rq1_cheap_signals", "tracking=off"], env=env
    )
    assert "network connection attempted" not in done.stderr
    assert done.returncode == 2
    assert "RUNNER_DATA_DIR" in done.stderr and "wandb/RAGTruth-processed" in done.stderr


@pytest.mark.slow
def test_a_cli_run_writes_outputs_and_an_mlflow_run_with_its_artifacts(tmp_path, data_dir):
    env = {**os.environ, "RUNNER_DATA_DIR": str(data_dir), "RUNNER_ARTIFACTS_DIR": str(tmp_path)}
    done = run_runner("experiment=rq5_source_shift", "bootstrap=fast", "progress=false", env=env)
    assert done.returncode == 0, done.stderr[-2000:]
    assert "Table VIII (a)" in done.stdout
    run_dir = latest_run_dir(tmp_path / "rq5_source_shift")
    assert f"outputs: {run_dir}" in done.stdout
    manifest = json.loads((run_dir / "manifest.json").read_text())
    assert manifest["dataset"]["info"]["rows"] == 1000
    assert manifest["seeds"]["seed"] == 13
    client = mlflow.MlflowClient(f"sqlite:///{tmp_path / 'mlflow.db'}")
    exp = client.get_experiment_by_name("rq5_source_shift")
    (run,) = client.search_runs([exp.experiment_id])
    assert "table8a/RAGTruth/cross-source AUROC" in run.data.metrics
    assert {a.path for a in client.list_artifacts(run.info.run_id)} >= {
        "cells.csv",
        "scores.parquet",
        "manifest.json",
        "runtime.json",
        "tables",
        "figures",
    }
