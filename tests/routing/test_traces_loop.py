"""The loop on MLflow traces: a traced RAG app's traces read, fitted on, routed, audited.

`scripts/traced_rag_demo.py` (a real app instrumented with MLflow Tracing, TF-IDF retriever
over RAGTruth QA test contexts) logs traces into a fresh SQLite store, the runner's own;
then `fit_gate` and `route` read them with `dataset=mlflow_traces`, the decisions go back
onto the traces as assessments, reviewers' labels are logged as human feedback the way the
UI does, and `audit` reads them from the traces. Real MLflow, real data, no file between.
"""

from __future__ import annotations

import json
import os
import sys
from pathlib import Path

import pandas as pd
import pytest
from tests.conftest import real_data_dir
from tests.conftest import run as run_process
from tests.conftest import run_experiment as experiment

from runner.config import register_configs

ROOT = Path(__file__).resolve().parents[2]
TRACES = 60
TRACED = ("dataset=mlflow_traces", "dataset.experiment=rag_demo")
MODEL = "routing.model_uri=models:/ragscope_e@champion"
register_configs()
pytestmark = pytest.mark.slow


@pytest.fixture(scope="module")
def loop(tmp_path_factory):
    """Demo traces, a gate fitted on them, one route run with an audit sample."""
    artifacts = tmp_path_factory.mktemp("traces")
    store = f"sqlite:///{artifacts / 'mlflow.db'}"
    summary = artifacts / "demo.json"
    env = {
        **os.environ,
        "PYTHONPATH": str(ROOT / "src"),
        "RUNNER_DATA_DIR": str(real_data_dir()),
        "MLFLOW_ENABLE_ASYNC_TRACE_LOGGING": "false",  # every trace stored when it returns
    }
    done = run_process(
        [sys.executable, str(ROOT / "scripts" / "traced_rag_demo.py"), "--tracking-uri", store,
         "--experiment", "rag_demo", "--traces", str(TRACES), "--out", str(summary),
         "--artifact-root", str(artifacts / "app")],
        env=env,
    )  # fmt: skip
    assert done.returncode == 0, done.stderr[-3000:]
    demo = json.loads(summary.read_text())
    fitted = experiment(artifacts, "fit_gate", *TRACED, "dataset.label=hallucinated")
    routed = experiment(artifacts, "route", *TRACED, MODEL, "routing.audit_fraction=0.3")
    return artifacts, store, demo, fitted, routed


def traces_of(store: str, experiment_id: str) -> dict:
    from mlflow.tracing.client import TracingClient

    found = TracingClient(store).search_traces(locations=[experiment_id], max_results=500)
    return {t.info.trace_id: t for t in found}


def ours(trace, name: str, version: str = "1") -> list:
    source = f"ragscope:ragscope_e/{version}"
    return [a for a in trace.info.assessments if a.name == name and a.source.source_id == source]


def of_run(trace, name: str, run_id: str) -> list:
    """The assessments `name` a routing run wrote on a trace (current or superseded since)."""
    return [
        a
        for a in trace.info.assessments
        if a.name == name and (a.metadata or {}).get("routing_run_id") == run_id
    ]


def test_traces_read_as_the_rows_the_app_answered(loop):
    _, _, demo, fitted, routed = loop
    manifest = json.loads((routed.output_dir / "manifest.json").read_text())
    info = manifest["dataset"]["info"]
    assert info["rows"] == info["rows_read"] == TRACES and info["skipped_rows"] == 0
    decisions = pd.read_parquet(routed.output_dir / "decisions.parquet")
    assert sorted(decisions["id"]) == sorted(demo["trace_ids"])
    # the fitted gate read the demo's expectations as labels
    fit_info = json.loads((fitted.output_dir / "manifest.json").read_text())["dataset"]["info"]
    assert fit_info["labelled"] and fit_info["positives"] == demo["hallucinated"]


def test_route_over_traces_gives_the_risks_of_route_over_the_exported_rows(loop, tmp_path):
    from runner.data.mlflow_traces import load_mlflow_traces

    artifacts, store, _, _, routed = loop
    frame = load_mlflow_traces("rag_demo", tracking_uri=store).frame
    export = tmp_path / "export.jsonl"
    rows = frame.rename(columns={"example_id": "id"})[["id", "question", "context", "answer"]]
    rows.assign(source=frame["source"]).to_json(export, orient="records", lines=True)
    from_file = experiment(artifacts, "route", "dataset=rag_file", f"dataset.path={export}", MODEL)
    a = pd.read_parquet(routed.output_dir / "decisions.parquet").set_index("id").sort_index()
    b = pd.read_parquet(from_file.output_dir / "decisions.parquet").set_index("id").sort_index()
    assert a["risk"].tolist() == b["risk"].tolist()
    assert a["decision"].tolist() == b["decision"].tolist()


def test_decisions_are_assessments_on_the_traces_with_their_contract(loop):
    _, store, demo, _, routed = loop
    decisions = pd.read_parquet(routed.output_dir / "decisions.parquet").set_index("id")
    traces = traces_of(store, demo["experiment_id"])
    for trace_id, row in decisions.iterrows():
        trace = traces[trace_id]
        (risk,) = of_run(trace, "ragscope_risk", routed.mlflow_run_id)
        (decision,) = of_run(trace, "ragscope_decision", routed.mlflow_run_id)
        assert risk.value == pytest.approx(row["risk"], abs=0, rel=0)
        assert decision.value == row["decision"]
        meta = decision.metadata
        assert meta["model_uri"] == "models:/ragscope_e@champion"
        assert meta["model_version"] == "1"
        assert meta["routing_run_id"] == routed.mlflow_run_id
        assert float(meta["review_at"]) >= float(meta["accept_at"])
        marks = of_run(trace, "ragscope_audit", routed.mlflow_run_id)
        assert [m.value for m in marks] == [True] * int(row["audit"])
    assert decisions["audit"].sum() > 0
    summary = json.loads((routed.output_dir / "trace_assessments.json").read_text())
    assert summary["added"]["ragscope_decision"] == TRACES


def test_a_rerun_leaves_the_answers_and_a_new_model_version_supersedes_them(loop):
    artifacts, store, demo, _, _ = loop
    again = experiment(artifacts, "route", *TRACED, MODEL, "routing.audit_fraction=0.3")
    summary = json.loads((again.output_dir / "trace_assessments.json").read_text())
    assert summary["left"]["ragscope_decision"] == summary["left"]["ragscope_risk"] == TRACES
    other = experiment(artifacts, "route", *TRACED, "routing.model_uri=models:/ragscope_e/1")
    summary = json.loads((other.output_dir / "trace_assessments.json").read_text())
    assert summary["left"]["ragscope_decision"] == TRACES  # the same version, by another URI
    experiment(artifacts, "fit_gate", *TRACED, "dataset.label=hallucinated")  # version 2
    newer = experiment(artifacts, "route", *TRACED, MODEL)
    summary = json.loads((newer.output_dir / "trace_assessments.json").read_text())
    assert summary["updated"]["ragscope_decision"] == TRACES
    for trace in traces_of(store, demo["experiment_id"]).values():
        (current,) = [a for a in ours(trace, "ragscope_decision", "2") if a.valid]
        (superseded,) = ours(trace, "ragscope_decision", "1")
        assert current.overrides == superseded.assessment_id and superseded.valid is False


def test_audit_reads_the_reviewers_labels_from_human_feedback(loop):
    import mlflow
    from mlflow.entities import AssessmentSource

    artifacts, store, demo, _, routed = loop
    decisions = pd.read_parquet(routed.output_dir / "decisions.parquet")
    marked = decisions[decisions["audit"]]
    truth = dict(zip(demo["trace_ids"], demo["labels"], strict=True))
    mlflow.set_tracking_uri(store)
    reviewer = AssessmentSource(source_type="HUMAN", source_id="reviewer@team")
    for trace_id in marked["id"]:
        # what the UI stores when a reviewer answers a yes/no "hallucinated" feedback
        mlflow.log_feedback(
            trace_id=trace_id, name="hallucinated", value=truth[trace_id], source=reviewer
        )
    review_band = decisions[decisions["decision"] == "review"]["id"].iloc[0]
    mlflow.log_feedback(trace_id=review_band, name="hallucinated", value=True, source=reviewer)
    audited = experiment(
        artifacts,
        "audit",
        "dataset=mlflow_trace_audit",
        "dataset.experiment=rag_demo",
        f"dataset.routing_run={routed.mlflow_run_id}",  # the run whose sample was labelled
        "routing.max_accepted_risk=0.5",
    )
    record = json.loads((audited.output_dir / "audit.json").read_text())
    assert record["rows"] == len(marked)
    assert record["hallucinated"] == sum(truth[t] for t in marked["id"])
    assert record["model"]["version"] == "1"
    info = json.loads((audited.output_dir / "manifest.json").read_text())["dataset"]["info"]
    assert info["ignored_labels"] == {"decision review": 1}


class HalfVerifier:
    """A stand-in verifier (no weights): risk = half the uncovered fraction."""

    def __init__(self) -> None:
        from runner.gates import FeatureGate

        self.gate, self.loads = FeatureGate("uncovered_fraction"), 0

    def load(self) -> None:
        self.loads += 1

    def score(self, frame: pd.DataFrame):
        assert {"example_id", "question", "context", "answer"} <= set(frame.columns)
        return self.gate.score(frame) / 2


def test_mlflow_evaluate_with_the_runners_scorers_gives_the_gates_values(loop, monkeypatch):
    import mlflow
    import mlflow.tracking.fluent

    from runner.data.mlflow_traces import load_mlflow_traces
    from runner.gates import FeatureGate
    from runner.scorers import gate_scorer, registered_gate_scorer, verifier_scorer

    _, store, demo, _, routed = loop
    monkeypatch.delenv("MLFLOW_EXPERIMENT_ID", raising=False)
    monkeypatch.setattr(mlflow.tracking.fluent, "_active_experiment_id", None)
    mlflow.set_tracking_uri(store)
    mlflow.set_experiment(experiment_id=demo["experiment_id"])
    frame = load_mlflow_traces("rag_demo", tracking_uri=store).frame.set_index("example_id")
    gate, verifier = FeatureGate("uncovered_fraction"), HalfVerifier()
    scorers = [
        gate_scorer(gate, name="uncovered"),
        registered_gate_scorer("models:/ragscope_e/1", tracking_uri=store),
        verifier_scorer(verifier, name="half"),
    ]
    traces = mlflow.search_traces(locations=[demo["experiment_id"]], max_results=20)
    result = mlflow.genai.evaluate(data=traces, scorers=scorers)
    table = result.result_df.set_index("trace_id")
    ids = list(table.index)
    decisions = pd.read_parquet(routed.output_dir / "decisions.parquet").set_index("id")
    expected = gate.score(frame.loc[ids].reset_index())
    assert table["uncovered/value"].tolist() == pytest.approx(expected.tolist(), rel=1e-12)
    assert table["ragscope_gate_risk/value"].tolist() == pytest.approx(
        decisions.loc[ids, "risk"].tolist(), rel=1e-9
    )
    assert table["half/value"].tolist() == pytest.approx((expected / 2).tolist(), rel=1e-12)
    assert verifier.loads == 1
    # each value is stored on its trace as a feedback, with the evidence as rationale
    stored = traces_of(store, demo["experiment_id"])[ids[0]]
    (feedback,) = [a for a in stored.info.assessments if a.name == "uncovered"]
    assert feedback.value == pytest.approx(expected[0], rel=1e-12)
    assert "answer tokens not in the context" in feedback.rationale


def test_the_ui_shows_decisions_on_traces_and_opens_a_study_on_its_runs(loop, tmp_path):
    """Headless Chromium on a real `mlflow server` over the loop's store (as test_mlflow_ui)."""
    from tests.conftest import mlflow_server
    from tests.test_mlflow_ui import get_json, render

    from runner.data.mlflow_traces import load_mlflow_traces
    from runner.tracking import TRACES_KIND, ui_path

    artifacts, store, demo, _, routed = loop
    last = demo["trace_ids"][-1]  # the newest trace: the first row of the traces page
    question = (
        load_mlflow_traces("rag_demo", tracking_uri=store)
        .frame.set_index("example_id")
        .loc[last, "question"]
    )
    decision = (
        pd.read_parquet(routed.output_dir / "decisions.parquet")
        .set_index("id")
        .loc[last, "decision"]
    )
    env = {
        "MLFLOW_SERVER_ENABLE_JOB_EXECUTION": "false",
        "MLFLOW_DISABLE_TELEMETRY": "true",
        "PATH": os.environ.get("PATH", "/usr/bin:/bin"),
        "HOME": str(tmp_path),
    }
    with mlflow_server(store, artifacts / "mlruns", env, startup_s=300) as base:

        def experiment_of(name: str) -> tuple[str, dict]:
            url = f"{base}/api/2.0/mlflow/experiments/get-by-name?experiment_name={name}"
            found = get_json(url)
            tags = {t["key"]: t["value"] for t in found["experiment"].get("tags", [])}
            return found["experiment"]["experiment_id"], tags

        app_id, app_tags = experiment_of("rag_demo")
        route_id, route_tags = experiment_of("route")
        assert app_tags["mlflow.experimentKind"] == "genai_development"
        assert route_tags["mlflow.experimentKind"] == "custom_model_development"

        for attempt in range(3):  # the table renders once the trace search has answered
            text = render(f"{base}/{ui_path(app_id, TRACES_KIND)}", tmp_path, f"traces{attempt}")
            if "ragscope_decision" in text and question in text:
                break
        assert "ragscope_decision" in text and "ragscope_risk" in text, text[:2000]
        row = text[text.index(json.dumps(question)) :]
        row = row[: row.find('{"question"', 1) if '{"question"' in row[1:] else None]
        assert f" {decision} " in row, row[:1500]

        for attempt in range(3):
            text = render(f"{base}/{ui_path(route_id)}", tmp_path, f"runs{attempt}")
            if "Run Name" in text:
                break
        assert "Run Name" in text and "mlflow_traces (" in text, text[:2000]
        assert "Traces 0" not in text  # not the empty GenAI overview
