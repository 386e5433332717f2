"""Tracking logs every cell, the config and the outputs to a real MLflow backend."""

from __future__ import annotations

import json
import socket
import subprocess
import sys
import time
import urllib.request
from pathlib import Path

import mlflow
import pytest
from omegaconf import OmegaConf

from runner import tracking
from runner.results import StudyResult


def _cfg(artifacts: Path, enabled: bool = True):
    return OmegaConf.create(
        {
            "experiment": "unit",
            "seed": 13,
            "study": {"name": "unit", "params": {}},
            "tracking": {
                "enabled": enabled,
                "uri": None,
                "artifact_root": None,
                "experiment_name": None,
                "run_name": None,
            },
            "paths": {"artifacts_dir": str(artifacts), "output_dir": str(artifacts / "unit")},
            "gates": {"uncovered": {"_target_": "x.Y", "feature": "uncovered_fraction"}},
        }
    )


def _result() -> StudyResult:
    r = StudyResult()
    r.add("table3", "QA", "uncovered/AUROC", 0.7, ci=(0.65, 0.75))
    r.add("table7", "hhem_full", "AUROC", None)
    r.runtime = {"gates": {"uncovered": {"ms_per_example": 0.12}}}
    r.tags = {"weights": "random"}
    return r


def _logged(tmp_path: Path) -> tuple[str, str]:
    cfg = _cfg(tmp_path)
    out = tmp_path / "unit"
    out.mkdir()
    (out / "cells.csv").write_text("table,row,column,value,ci_low,ci_high\n")
    run_id = tracking.log_run(cfg, _result(), out, {"git": {"commit": "abc"}})
    uri, _ = tracking.resolve_uri(cfg)
    return run_id, uri


def test_metric_key_keeps_table_coordinates_and_strips_unsafe_characters():
    assert (
        tracking.metric_key("table6", "QA / rouge_l", "review precision@10%")
        == "table6/QA / rouge_l/review precision_10_"
    )


def test_a_run_logs_cells_cis_params_tags_and_artifacts_to_sqlite(tmp_path):
    run_id, uri = _logged(tmp_path)
    assert uri.startswith("sqlite:///") and (tmp_path / "mlflow.db").exists()
    run = mlflow.MlflowClient(uri).get_run(run_id)
    assert run.info.status == "FINISHED"
    assert run.data.metrics["table3/QA/uncovered/AUROC"] == pytest.approx(0.7)
    assert run.data.metrics["table3/QA/uncovered/AUROC/ci_low"] == pytest.approx(0.65)
    assert run.data.metrics["runtime/gates/uncovered/ms_per_example"] == pytest.approx(0.12)
    # a not-available cell is never logged as a number
    assert not any(k.startswith("table7/") for k in run.data.metrics)
    assert run.data.params["gates.uncovered.feature"] == "uncovered_fraction"
    assert run.data.tags["weights"] == "random"
    names = [a.path for a in mlflow.MlflowClient(uri).list_artifacts(run_id)]
    assert "cells.csv" in names


def test_tracking_off_logs_nothing(tmp_path):
    cfg = _cfg(tmp_path, enabled=False)
    assert tracking.log_run(cfg, _result(), tmp_path, {"git": {"commit": None}}) is None
    assert not (tmp_path / "mlflow.db").exists()


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


@pytest.mark.slow
def test_a_real_mlflow_server_serves_the_logged_run_over_its_rest_api_and_ui(tmp_path):
    run_id, uri = _logged(tmp_path)
    port = _free_port()
    env = {
        "MLFLOW_SERVER_ENABLE_JOB_EXECUTION": "false",
        "MLFLOW_DISABLE_TELEMETRY": "true",
        "PATH": "/usr/bin:/bin",
    }
    proc = subprocess.Popen(
        [
            sys.executable,
            "-m",
            "mlflow",
            "server",
            "--backend-store-uri",
            uri,
            "--default-artifact-root",
            str(tmp_path / "mlruns"),
            "--host",
            "127.0.0.1",
            "--port",
            str(port),
            "--workers",
            "1",
        ],
        env=env,
        stdout=subprocess.DEVNULL,
        stderr=subprocess.DEVNULL,
    )
    base = f"http://127.0.0.1:{port}"
    try:
        deadline = time.monotonic() + 90
        while True:
            try:
                with urllib.request.urlopen(f"{base}/health", timeout=2) as resp:
                    if resp.status == 200:
                        break
            except OSError:
                if proc.poll() is not None or time.monotonic() > deadline:
                    pytest.fail(f"mlflow server did not come up (exit {proc.poll()})")
                time.sleep(0.5)
        with urllib.request.urlopen(
            f"{base}/api/2.0/mlflow/runs/get?run_id={run_id}", timeout=10
        ) as resp:
            payload = json.loads(resp.read())
        metrics = {m["key"]: m["value"] for m in payload["run"]["data"]["metrics"]}
        assert metrics["table3/QA/uncovered/AUROC"] == pytest.approx(0.7)
        with urllib.request.urlopen(base + "/", timeout=10) as resp:
            assert b"<html" in resp.read().lower()
    finally:
        proc.terminate()
        try:
            proc.wait(timeout=20)
        except subprocess.TimeoutExpired:
            proc.kill()
