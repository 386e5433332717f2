"""Tracking logs every cell, the config and the outputs to a real MLflow backend."""

from __future__ import annotations

import datetime as dt
import json
import os
import sqlite3
import urllib.request
from pathlib import Path

import mlflow
import pandas as pd
import pytest
from hydra import compose, initialize_config_dir
from mlflow.exceptions import MlflowException
from omegaconf import OmegaConf
from tests.conftest import mlflow_server, run_runner

from runner import tracking
from runner.config import register_configs, run_record
from runner.data import LoadedData
from runner.errors import ConfigError
from runner.pipeline import run
from runner.reporting.run_folders import latest_run_dir
from runner.results import StudyResult

ROOT = Path(__file__).resolve().parents[1]
register_configs()


def _cfg(artifacts: Path, enabled: bool = True):
    return OmegaConf.create(
        {
            "experiment": "unit",
            "seed": 13,
            "study": {"_target_": "runner.studies.rq1_cheap_signals.CheapSignals", "params": {}},
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
    record = run_record(cfg)
    tracked = tracking.start_run(record, out)  # the pipeline's path: open, then finish
    tracked.finish(_result(), out, {"git": {"commit": "abc"}})
    run_id = tracked.run_id
    uri, _ = tracking.record_store(record)
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
    assert tracking.start_run(run_record(cfg), tmp_path) is None
    assert not (tmp_path / "mlflow.db").exists()


def test_a_study_experiment_is_marked_to_open_on_its_runs_and_a_set_kind_is_kept(tmp_path):
    _, uri = _logged(tmp_path)
    client = mlflow.MlflowClient(uri)
    created = client.get_experiment_by_name("unit")
    assert created.tags[tracking.KIND_TAG] == tracking.STUDY_KIND
    assert tracking.ui_path(created.experiment_id) == (
        f"#/experiments/{created.experiment_id}?workflowType=machine_learning"
    )
    other = client.create_experiment("mine", artifact_location=(tmp_path / "m").as_uri())
    client.set_experiment_tag(other, tracking.KIND_TAG, tracking.TRACES_KIND)
    tracking.mark_kind(client, client.get_experiment(other), tracking.STUDY_KIND)
    assert client.get_experiment(other).tags[tracking.KIND_TAG] == tracking.TRACES_KIND
    # an experiment from before kinds existed gets one on its next run
    client.delete_experiment_tag(created.experiment_id, tracking.KIND_TAG)
    tracking.prepare_experiment(run_record(_cfg(tmp_path)))
    assert (
        client.get_experiment(created.experiment_id).tags[tracking.KIND_TAG]
        == "custom_model_development"
    )


def test_run_names_carry_the_overrides_but_not_the_experiment_choice():
    name = tracking.run_name("rq1_cheap_signals", ["experiment=rq1_cheap_signals", "seed=2"])
    assert name == "rq1_cheap_signals seed=2"
    assert tracking.run_name("hri_example", []) == "hri_example"
    assert tracking.run_name("x", ["+bootstrap.n=5", "progress=false"]) == "x +bootstrap.n=5"


def test_a_locked_database_is_retried_and_other_errors_are_not():
    calls = []

    def flaky() -> str:
        calls.append(1)
        if len(calls) < 3:
            raise sqlite3.OperationalError("database is locked")
        return "ok"

    assert tracking.retry_locked(flaky) == "ok" and len(calls) == 3

    def broken() -> None:
        calls.append(1)
        raise sqlite3.OperationalError("no such table: runs")

    calls.clear()
    with pytest.raises(sqlite3.OperationalError, match="no such table"):
        tracking.retry_locked(broken)
    assert len(calls) == 1

    def always_locked() -> None:
        raise sqlite3.OperationalError("database is locked")

    with pytest.raises(sqlite3.OperationalError, match="locked"):
        tracking.retry_locked(always_locked, attempts=2)


def test_a_data_set_another_job_created_first_is_retried_only_where_that_race_exists():
    """Two sweep jobs logging one data set at once to a server over PostgreSQL: the second
    insert of the data set row fails with a unique violation; a retry links the row the
    first job created. Elsewhere a unique violation is a real error and is not retried."""
    race = "psycopg.errors.UniqueViolation: duplicate key value violates unique constraint"

    class Store:
        def __init__(self) -> None:
            self.calls = 0

        def log_inputs(self, run_id: str, datasets: list) -> None:
            self.calls += 1
            if self.calls == 1:
                raise MlflowException(f'{race} "dataset_pk"')

    store = Store()
    data = LoadedData(
        name="rows", frame=pd.DataFrame({"a": [1]}), files=[], fingerprint="f" * 16, info={}
    )
    tracking.TrackedRun(store, "run-1").log_input(data)
    assert store.calls == 2

    def insert() -> None:
        raise MlflowException(f'{race} "experiments_name_key"')

    with pytest.raises(MlflowException, match="UniqueViolation"):
        tracking.retry_locked(insert)


def pipeline_cfg(artifacts: Path, *overrides: str):
    with initialize_config_dir(config_dir=str(ROOT / "conf"), version_base="1.3"):
        return compose(
            "config",
            overrides=[
                "experiment=hri_example",
                "progress=false",
                f"paths.artifacts_dir={artifacts}",
                *overrides,
            ],
        )


def only_run(artifacts: Path, experiment: str = "hri_example"):
    client = mlflow.MlflowClient(f"sqlite:///{artifacts / 'mlflow.db'}")
    exp = client.get_experiment_by_name(experiment)
    (found,) = client.search_runs([exp.experiment_id])
    return client, found


def test_the_mlflow_run_spans_the_study_and_records_name_dataset_and_own_folder(tmp_path):
    outcome = run(pipeline_cfg(tmp_path, "seed=2"), overrides=["seed=2"])
    _, found = only_run(tmp_path)
    assert found.info.run_id == outcome.mlflow_run_id
    assert found.info.status == "FINISHED"
    assert found.info.run_name == "hri_example seed=2"
    manifest = json.loads((outcome.output_dir / "manifest.json").read_text())
    started = dt.datetime.fromisoformat(manifest["run"]["started_utc"]).timestamp()
    study_s = outcome.result.runtime["study_seconds"]
    # opened before the data load and the study, closed after: Duration covers the study
    assert found.info.start_time / 1000 - started <= manifest["run"]["wall_seconds"] - study_s
    assert (found.info.end_time - found.info.start_time) / 1000 >= study_s
    assert found.data.tags["output_dir"] == str(outcome.output_dir)
    assert latest_run_dir(tmp_path / "hri_example") == outcome.output_dir
    (dataset_input,) = found.inputs.dataset_inputs
    assert dataset_input.dataset.name == "hri_claims"
    assert manifest["dataset"]["fingerprint"].startswith(dataset_input.dataset.digest)
    assert "supplier_contract.yaml" in dataset_input.dataset.source
    assert manifest["run"]["mlflow_run_id"] == found.info.run_id


def test_a_failing_study_leaves_a_failed_run_with_its_error(tmp_path):
    with pytest.raises(ConfigError, match="nope"):
        run(pipeline_cfg(tmp_path, "study.params.response_id=nope"))
    client, found = only_run(tmp_path)
    assert found.info.status == "FAILED"
    assert "ConfigError" in found.data.tags["error"] and "nope" in found.data.tags["error"]
    assert found.data.params["study.params.response_id"] == "nope"
    assert "error.txt" in {a.path for a in client.list_artifacts(found.info.run_id)}
    assert latest_run_dir(tmp_path / "hri_example") is None


def test_a_run_inside_a_slurm_job_carries_its_job_ids_also_when_it_fails(tmp_path, monkeypatch):
    slurm = {"SLURM_JOB_ID": "14", "SLURM_ARRAY_JOB_ID": "12", "SLURM_ARRAY_TASK_ID": "2"}
    for var, value in {**slurm, "SLURMD_NODENAME": "node7"}.items():
        monkeypatch.setenv(var, value)
    with pytest.raises(ConfigError, match="nope"):
        run(pipeline_cfg(tmp_path, "study.params.response_id=nope"))
    _, found = only_run(tmp_path)
    assert found.info.status == "FAILED"
    tags = found.data.tags
    assert (tags["slurm_job_id"], tags["slurm_array_job_id"], tags["slurm_array_task_id"]) == (
        "14",
        "12",
        "2",
    )
    assert tags["slurm_node"] == "node7"


def test_outside_slurm_a_run_has_no_slurm_tags():
    assert tracking.slurm_tags({"HOME": "/root", "SLURM_JOB_ID": ""}) == {}
    assert tracking.slurm_tags({"SLURM_JOB_ID": "9"}) == {"slurm_job_id": "9"}


def test_ctrl_c_during_a_run_ends_it_killed_and_leaves_no_partial_folder(tmp_path, monkeypatch):
    import runner.pipeline

    def interrupted(cfg, **_):
        raise KeyboardInterrupt

    monkeypatch.setattr(runner.pipeline, "load_data", interrupted)
    with pytest.raises(KeyboardInterrupt):
        run(pipeline_cfg(tmp_path))
    _, found = only_run(tmp_path)
    assert found.info.status == "KILLED"
    assert found.data.tags["error"].startswith("KeyboardInterrupt")
    assert not list((tmp_path / "hri_example" / "runs").iterdir())


@pytest.mark.slow
def test_a_parallel_sweep_on_a_fresh_folder_records_every_job_as_a_finished_run(
    tmp_path, warm_runner
):
    env = {**os.environ, "RUNNER_ARTIFACTS_DIR": str(tmp_path)}
    done = run_runner(
        "-m",
        "experiment=hri_example",
        "seed=1,2,3",
        "hydra/launcher=joblib",
        "progress=false",
        env=env,
    )
    assert done.returncode == 0, done.stderr[-3000:]
    client = mlflow.MlflowClient(f"sqlite:///{tmp_path / 'mlflow.db'}")
    exp = client.get_experiment_by_name("hri_example")
    runs = client.search_runs([exp.experiment_id])
    assert sorted(r.info.run_name for r in runs) == [f"hri_example seed={s}" for s in (1, 2, 3)]
    assert {r.info.status for r in runs} == {"FINISHED"}
    folders = {r.data.tags["output_dir"] for r in runs}
    assert len(folders) == 3
    for r in runs:
        seed = r.info.run_name.split("=")[1]
        out = Path(r.data.tags["output_dir"])
        assert out.parent.parent.name == f"seed={seed}" and out.parent.name == "runs"
        assert (out / "manifest.json").is_file()
    # a plain run afterwards keeps the sweep's outputs
    sweep = tmp_path / "hri_example" / "multirun"
    before = sorted(p.relative_to(sweep) for p in sweep.rglob("cells.csv"))
    plain = warm_runner.run(["experiment=hri_example", "progress=false"], env=env)
    assert plain.returncode == 0, plain.stderr[-3000:]
    assert sorted(p.relative_to(sweep) for p in sweep.rglob("cells.csv")) == before
    assert len(before) == 3


@pytest.mark.slow
def test_a_real_mlflow_server_serves_the_logged_run_over_its_rest_api_and_ui(tmp_path):
    run_id, uri = _logged(tmp_path)
    env = {
        "MLFLOW_SERVER_ENABLE_JOB_EXECUTION": "false",
        "MLFLOW_DISABLE_TELEMETRY": "true",
        "PATH": "/usr/bin:/bin",
    }
    with mlflow_server(uri, tmp_path / "mlruns", env, startup_s=90) as base:
        with urllib.request.urlopen(
            f"{base}/api/2.0/mlflow/runs/get?run_id={run_id}", timeout=10
        ) as resp:
            payload = json.loads(resp.read())
        metrics = {m["key"]: m["value"] for m in payload["run"]["data"]["metrics"]}
        assert metrics["table3/QA/uncovered/AUROC"] == pytest.approx(0.7)
        with urllib.request.urlopen(base + "/", timeout=10) as resp:
            assert b"<html" in resp.read().lower()


def test_hand_over_registers_the_model_links_the_run_and_writes_the_feedback(tmp_path):
    import pandas as pd

    from runner.gates import FeatureGate
    from runner.results import ModelLink, ModelSpec
    from runner.routing.model import RoutingModel, signature

    uri = f"sqlite:///{tmp_path / 'mlflow.db'}"
    client = mlflow.MlflowClient(tracking_uri=uri, registry_uri=uri)
    experiment = client.create_experiment("publish", artifact_location=(tmp_path / "art").as_uri())
    fit_run = client.create_run(experiment).info.run_id
    example = pd.DataFrame({"question": ["q?"], "context": ["a b c"], "answer": ["a b"]})
    fitted = StudyResult()
    fitted.model = ModelSpec(
        python_model=RoutingModel(FeatureGate("uncovered_fraction"), 0.9, 0.1),
        name="gate",
        alias="champion",
        metadata={"gate": "uncovered"},
        input_example=example,
        tags={"training_sources": "docs"},
        signature=signature(),
    )
    before = mlflow.get_tracking_uri()
    try:
        tracking.hand_over(uri, fitted, fit_run, tmp_path)
    finally:
        mlflow.set_tracking_uri(before)
    record = json.loads((tmp_path / "registered_model.json").read_text())
    assert (record["version"], record["run_id"], record["uri"]) == (
        "1",
        fit_run,
        "models:/gate@champion",
    )
    assert client.get_model_version("gate", "1").tags == {"training_sources": "docs"}

    written = []

    class Feedback:  # a RunFeedback: written once the run id is known
        def write(self, run_id):
            written.append(run_id)
            return {"logged": {"ragscope_risk": 2}}

    route_run = client.create_run(experiment).info.run_id
    routed = StudyResult(trace_feedback=Feedback())
    routed.model_link = ModelLink("gate", "1", "last_route_run", "models:/gate@champion")
    tracking.hand_over(uri, routed, route_run, tmp_path)
    assert client.get_model_version("gate", "1").tags["last_route_run"] == route_run
    assert written == [route_run]
    summary = json.loads((tmp_path / "trace_assessments.json").read_text())
    assert summary == {"logged": {"ragscope_risk": 2}}
    # the run is tagged with the model version it used (logged when the run finishes)
    assert tracking.link_tags(routed.model_link) == {
        "model_name": "gate",
        "model_version": "1",
        "model_uri": "models:/gate@champion",
    }
    assert tracking.link_tags(None) == {}


def test_with_tracking_off_feedback_is_written_nothing_is_linked_and_a_model_cannot_register(
    tmp_path,
):
    from runner.results import ModelLink, ModelSpec

    written = []

    class Feedback:
        def write(self, run_id):
            written.append(run_id)
            return {}

    routed = StudyResult(trace_feedback=Feedback())
    routed.model_link = ModelLink("gate", "1", "last_route_run")  # no run: nothing to link
    tracking.hand_over(None, routed, None, tmp_path)
    assert written == [None] and (tmp_path / "trace_assessments.json").exists()
    fitted = StudyResult(model=ModelSpec(object(), "gate", "champion", {}, None))
    with pytest.raises(ConfigError, match="registers a model: it needs tracking"):
        tracking.hand_over(None, fitted, None, tmp_path)
