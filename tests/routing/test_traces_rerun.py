"""Reruns over MLflow traces, as a user runs them: what the traces say is what was decided last.

The 80 rows of the format page's example file are logged as traces of a traced app (real
MLflow Tracing into the runner's own SQLite store; label = an expectation, source = a
trace tag, one docs_search trace left unlabelled). A gate is fitted on the docs_search
traces only, so the support_bot traces come from a source the gate never saw: a rerun with
``routing.on_unseen_source=review`` changes their decisions, as in the issue.
"""

from __future__ import annotations

import json
import os
from pathlib import Path

import mlflow
import mlflow.tracking.fluent
import pandas as pd
import pytest
from mlflow.entities import AssessmentSource, Document, Feedback, SpanType
from mlflow.tracing.client import TracingClient
from tests.conftest import run_experiment as experiment
from tests.conftest import run_runner

from runner.data.rag_file import parse_label
from runner.errors import DataError

ROOT = Path(__file__).resolve().parents[2]
FIXTURE = ROOT / "tests" / "fixtures" / "rag_file" / "rag_example.jsonl"
TRACED = ("dataset=mlflow_traces", "dataset.experiment=app")
FIT = (
    *TRACED,
    "dataset.label=hallucinated",
    "dataset.filter_string=\"tag.source = 'docs_search'\"",
)
ROUTE = (*TRACED, "routing.model_uri=models:/ragscope_e@champion")
pytestmark = pytest.mark.slow


def log_rows(store: str, rows: list[dict], unlabelled: set[str]) -> dict[str, str]:
    """Each row as one traced RAG call in experiment ``app``; row id -> trace id."""
    with pytest.MonkeyPatch.context() as mp:
        mp.setenv("MLFLOW_ENABLE_ASYNC_TRACE_LOGGING", "false")
        mp.delenv("MLFLOW_EXPERIMENT_ID", raising=False)
        mp.setattr(mlflow.tracking.fluent, "_active_experiment_id", None)
        previous = mlflow.get_tracking_uri()
        mlflow.set_tracking_uri(store)
        mlflow.set_experiment("app")
        ids = {}
        try:
            for row in rows:
                context = row["context"] if isinstance(row["context"], list) else [row["context"]]
                with mlflow.start_span(name="rag", span_type=SpanType.CHAIN) as root:
                    root.set_inputs({"question": row["question"]})
                    mlflow.update_current_trace(tags={"source": row["source"]})
                    with mlflow.start_span(name="retrieve", span_type=SpanType.RETRIEVER) as s:
                        s.set_outputs([Document(page_content=c) for c in context])
                    root.set_outputs(row["answer"])
                trace_id = mlflow.get_last_active_trace_id()
                if row["id"] not in unlabelled:
                    value = bool(parse_label(row["label"]))
                    mlflow.log_expectation(trace_id=trace_id, name="hallucinated", value=value)
                ids[row["id"]] = trace_id
        finally:
            mlflow.set_tracking_uri(previous)
    return ids


@pytest.fixture(scope="module")
def app(tmp_path_factory):
    """The traced app's store (the runner's own) and its traces; nothing routed yet."""
    artifacts = tmp_path_factory.mktemp("rerun")
    store = f"sqlite:///{artifacts / 'mlflow.db'}"
    rows = [json.loads(line) for line in FIXTURE.read_text().splitlines()]
    unlabelled = next(r["id"] for r in rows if r["source"] == "docs_search")
    mlflow.MlflowClient(store).create_experiment(
        "app", artifact_location=(artifacts / "app").as_uri()
    )
    ids = log_rows(store, rows, {unlabelled})
    return artifacts, store, ids, ids[unlabelled]


def current(store: str, trace_id: str) -> dict:
    """name -> the trace's one valid runner answer (fails if there are several)."""
    trace = TracingClient(store).get_trace(trace_id)
    out: dict = {}
    for a in trace.info.assessments:
        if a.source.source_id.startswith("ragscope:") and a.valid is not False:
            assert a.name not in out, f"two current {a.name} on {trace_id}"
            out[a.name] = a
    return out


def decisions_of(outcome) -> pd.DataFrame:
    return pd.read_parquet(outcome.output_dir / "decisions.parquet").set_index("id")


def summary_of(outcome) -> dict:
    return json.loads((outcome.output_dir / "summary.json").read_text())["trace_assessments"]


def runs_of(artifacts: Path, name: str) -> list[str]:
    folder = artifacts / name / "runs"
    return sorted(p.name for p in folder.iterdir()) if folder.is_dir() else []


@pytest.fixture(scope="module")
def fitted(app):
    """The gate fitted on the labelled docs_search traces (the unlabelled one skipped)."""
    artifacts = app[0]
    return experiment(artifacts, "fit_gate", *FIT, "dataset.skip_invalid=true")


def test_fit_gate_names_an_unlabelled_trace_and_exits_2_or_skips_it(app, fitted):
    artifacts, _store, _ids, unlabelled = app
    runs = runs_of(artifacts, "fit_gate")
    env = {**os.environ, "PYTHONPATH": str(ROOT / "src"), "MLFLOW_DISABLE_TELEMETRY": "true"}
    done = run_runner(
        "experiment=fit_gate", *FIT, f"paths.artifacts_dir={artifacts}", "progress=false", env=env
    )
    assert done.returncode == 2, done.stderr[-2000:]
    (line,) = [ln for ln in done.stderr.splitlines() if ln.startswith("error:")]
    assert f"row {unlabelled}, field 'label': trace {unlabelled} has no 'hallucinated'" in line
    assert "dataset.skip_invalid=true" in line
    unset = [a for a in FIT if not a.startswith("dataset.label")]
    with pytest.raises(DataError, match=r"field 'dataset\.label': fit_gate needs labelled traces"):
        experiment(artifacts, "fit_gate", *unset)
    assert runs_of(artifacts, "fit_gate") == runs  # nothing half-written
    info = json.loads((fitted.output_dir / "manifest.json").read_text())["dataset"]["info"]
    assert [s["id"] for s in info["skipped"]] == [unlabelled] and info["skipped_rows"] == 1
    assert info["rows"] == 39 and info["labelled"]  # the 40 docs_search traces, one skipped
    contract = json.loads((fitted.output_dir / "contract.json").read_text())
    assert contract["training_sources"] == ["docs_search"]
    assert contract["training_data"]["rows"] == 39


@pytest.fixture(scope="module")
def reruns(app, fitted):
    """Two routes with the fitted gate, the second changing the decisions of the unseen
    source and drawing a larger audit sample; and every trace's answers right after."""
    artifacts, store, ids, _ = app
    first = experiment(artifacts, "route", *ROUTE, "routing.audit_fraction=0.1")
    second = experiment(
        artifacts,
        "route",
        *ROUTE,
        "routing.on_unseen_source=review",
        "routing.audit_fraction=0.3",
    )
    return first, second, {t: current(store, t) for t in ids.values()}


def test_a_rerun_that_changes_decisions_rewrites_them_on_the_traces(app, reruns):
    store = app[1]
    first, second, answers_after = reruns
    before, after = decisions_of(first), decisions_of(second)
    said = ["decision", "reason"]  # what a decision assessment says
    changed = int((before[said].fillna("") != after[said].fillna("")).any(axis=1).sum())
    assert (after.loc[after["unseen_source"], "decision"] == "review").all()
    assert (before.loc[before["unseen_source"], "decision"] != "review").any()
    for trace_id, row in after.iterrows():
        answers = answers_after[trace_id]
        assert answers["ragscope_decision"].value == row["decision"]
        assert answers["ragscope_risk"].value == row["risk"]
        mark = answers.get("ragscope_audit")
        assert (mark is not None and mark.value is True) == bool(row["audit"])
    counts = summary_of(second)
    assert counts["updated"]["ragscope_decision"] == changed > 0
    assert counts["left"]["ragscope_decision"] == len(after) - changed
    assert counts["left"]["ragscope_risk"] == len(after)  # same model version, same risks
    metrics = mlflow.MlflowClient(store).get_run(second.mlflow_run_id).data.metrics
    assert metrics["trace_assessments/ragscope_decision/updated"] == changed


def test_the_traces_carry_only_the_last_runs_audit_sample(reruns):
    first, second, answers_after = reruns
    sample = set(decisions_of(second).query("audit").index)
    marks = {t: answers.get("ragscope_audit") for t, answers in answers_after.items()}
    marked = {t for t, mark in marks.items() if mark is not None and mark.value is True}
    assert marked == sample and len(sample) > decisions_of(first)["audit"].sum()
    assert {marks[t].metadata["routing_run_id"] for t in marked} == {second.mlflow_run_id}


def test_the_audit_reads_the_sample_of_the_run_it_is_given(app, reruns):
    artifacts, store, ids, _ = app
    first, second, _ = reruns
    reviewer = AssessmentSource(source_type="HUMAN", source_id="reviewer@team")
    client = TracingClient(store)
    for trace_id in ids.values():  # a reviewer labels every trace (not fit_gate's label)
        client.log_assessment(trace_id, Feedback(name="reviewed", value=False, source=reviewer))
    third = experiment(artifacts, "route", *ROUTE, "routing.audit_fraction=0.2")
    audit = (
        "dataset=mlflow_trace_audit",
        "dataset.experiment=app",
        "dataset.label=reviewed",
        "routing.max_accepted_risk=0.5",
    )
    for run, named in ((third, ()), (second, (f"dataset.routing_run={second.mlflow_run_id}",)),
                       (first, (f"dataset.routing_run={first.mlflow_run_id}",))):  # fmt: skip
        audited = experiment(artifacts, "audit", *audit, *named)
        record = json.loads((audited.output_dir / "audit.json").read_text())
        assert record["routing_run_id"] == run.mlflow_run_id  # default: the newest run
        assert record["rows"] == record["marked_rows"] == decisions_of(run)["audit"].sum()
    with pytest.raises(DataError, match=r"dataset\.routing_run='no-such-run': no routing run"):
        experiment(artifacts, "audit", *audit, "dataset.routing_run=no-such-run")


def test_unchanged_failed_fewer_and_new_version_reruns(app, reruns, monkeypatch):
    import runner.reporting

    artifacts, store, ids, _ = app
    settings = (*ROUTE, "routing.audit_fraction=0.3")
    experiment(artifacts, "route", *settings)
    again = summary_of(experiment(artifacts, "route", *settings))
    n = len(ids)
    assert again["left"]["ragscope_decision"] == again["left"]["ragscope_risk"] == n
    assert again["added"]["ragscope_decision"] == again["updated"]["ragscope_decision"] == 0

    # a run that fails before its folder is published leaves the traces as they were
    def answer_ids() -> dict:
        return {t: {k: a.assessment_id for k, a in current(store, t).items()} for t in ids.values()}

    before = answer_ids()

    def broken(*args, **kwargs):
        raise OSError("disk full")

    with monkeypatch.context() as patch:
        patch.setattr(runner.reporting, "publish", broken)
        with pytest.raises(OSError, match="disk full"):
            experiment(artifacts, "route", *ROUTE, "routing.audit_fraction=0.1")  # new marks
    assert answer_ids() == before

    # fewer traces: only those are touched
    few = experiment(artifacts, "route", *ROUTE, "dataset.max_results=30")
    assert summary_of(few)["traces"] == 30
    after = answer_ids()
    untouched = set(ids.values()) - set(decisions_of(few).index)
    assert len(untouched) == n - 30 and all(after[t] == before[t] for t in untouched)

    # a new model version supersedes every risk and decision
    version = experiment(artifacts, "fit_gate", *FIT, "dataset.skip_invalid=true")
    registered = json.loads((version.output_dir / "registered_model.json").read_text())
    counts = summary_of(experiment(artifacts, "route", *ROUTE))
    assert counts["updated"]["ragscope_decision"] == counts["updated"]["ragscope_risk"] == n
    for trace_id in ids.values():
        source = current(store, trace_id)["ragscope_decision"].source.source_id
        assert source == f"ragscope:ragscope_e/{registered['version']}"
