"""`dataset=mlflow_traces`: traces logged by real MLflow Tracing into SQLite, read as rows.

Each bad trace (no retriever span, an empty answer, an error state, an output the mapping
cannot read) is an error naming its trace id, or a counted skip under ``skip_invalid``.
"""

from __future__ import annotations

import mlflow
import mlflow.tracking.fluent
import pytest
from mlflow.entities import AssessmentSource, Document, SpanType

from runner.data.mlflow_traces import load_mlflow_traces, search_filter, to_ms
from runner.data.rag_file import PASSAGE_JOIN
from runner.errors import ConfigError, DataError, DataNotFoundError


@pytest.fixture
def store(tmp_path, monkeypatch):
    """A fresh SQLite store as the active tracking URI and experiment, undone afterwards."""
    uri = f"sqlite:///{tmp_path / 'mlflow.db'}"
    monkeypatch.setenv("MLFLOW_ENABLE_ASYNC_TRACE_LOGGING", "false")
    monkeypatch.delenv("MLFLOW_EXPERIMENT_ID", raising=False)
    monkeypatch.setattr(mlflow.tracking.fluent, "_active_experiment_id", None)
    previous = mlflow.get_tracking_uri()
    mlflow.set_tracking_uri(uri)
    client = mlflow.MlflowClient(uri)
    exp = client.create_experiment("app", artifact_location=(tmp_path / "art").as_uri())
    mlflow.set_experiment(experiment_id=exp)
    yield uri
    mlflow.set_tracking_uri(previous)


def log_trace(question="q?", docs=("Paris is in France.",), answer="Paris.", tags=None):
    """One traced call: root span, optional RETRIEVER span, answer as the root's output."""
    with mlflow.start_span(name="rag", span_type=SpanType.CHAIN) as root:
        root.set_inputs({"question": question})
        if tags:
            mlflow.update_current_trace(tags=tags)
        if docs is not None:
            with mlflow.start_span(name="retrieve", span_type=SpanType.RETRIEVER) as span:
                span.set_outputs([Document(page_content=d) for d in docs])
        root.set_outputs(answer)
    return mlflow.get_last_active_trace_id()


def test_a_trace_reads_as_the_canonical_row(store):
    first = log_trace(docs=("A.", "B."), tags={"source": "web", "task": "QA"})
    second = log_trace(question="other", docs=("A.", "B."), answer="Other.")
    mlflow.log_expectation(trace_id=first, name="hallucinated", value=True)
    reviewer = AssessmentSource(source_type="HUMAN", source_id="r")
    mlflow.log_feedback(trace_id=second, name="hallucinated", value="faithful", source=reviewer)
    data = load_mlflow_traces("app", tracking_uri=store, label="hallucinated")
    frame = data.frame.set_index("example_id")
    assert list(frame.index) == [first, second]  # request-time order
    row = frame.loc[first]
    assert (row["question"], row["answer"]) == ("q?", "Paris.")
    assert row["context"] == PASSAGE_JOIN.join(["A.", "B."])
    assert (row["source"], row["task"]) == ("web", "QA")
    assert (frame.loc[second, "source"], frame.loc[second, "task"]) == ("unspecified", "all")
    assert frame.loc[first, "group_id"] == frame.loc[second, "group_id"]  # same documents
    assert frame["label"].tolist() == [1, 0]
    assert data.info["labelled"] and data.info["positives"] == 1
    # a code-sourced feedback is not a reviewer's label
    mlflow.log_feedback(trace_id=second, name="other", value=True)
    partly = load_mlflow_traces("app", tracking_uri=store, label="other")
    assert not partly.info["labelled"] and partly.frame["label"].isna().all()


@pytest.mark.parametrize(
    ("kwargs", "field", "needle"),
    [
        ({"docs": None}, "retriever", "has no RETRIEVER span"),
        ({"answer": "  "}, "answer", "the answer is empty"),
        ({"answer": {"text": "x"}}, "answer", "set dataset.answer_key"),
    ],
)
def test_a_bad_trace_is_an_error_naming_it_or_a_counted_skip(store, kwargs, field, needle):
    log_trace()
    bad = log_trace(**kwargs)
    with pytest.raises(DataError, match=rf"row {bad}, field '{field}': trace {bad}.*{needle}"):
        load_mlflow_traces("app", tracking_uri=store)
    data = load_mlflow_traces("app", tracking_uri=store, skip_invalid=True)
    assert data.info["rows"] == 1 and data.info["rows_read"] == 2
    (skipped,) = data.info["skipped"]
    assert (skipped["id"], skipped["field"]) == (bad, field)


def test_a_trace_that_failed_is_refused_by_state(store):
    with pytest.raises(RuntimeError):
        with mlflow.start_span(name="rag") as root:
            root.set_inputs({"question": "q"})
            raise RuntimeError("generator down")
    bad = mlflow.get_last_active_trace_id()
    with pytest.raises(DataError, match=rf"trace {bad} ended in state ERROR"):
        load_mlflow_traces("app", tracking_uri=store)


def test_filter_time_range_and_cap_select_traces(store):
    ids = [log_trace(question=f"q{i}", tags={"env": "prod" if i else "dev"}) for i in range(3)]
    assert (
        load_mlflow_traces("app", tracking_uri=store, max_results=2).frame["example_id"].tolist()
        == ids[:2]
    )
    prod = load_mlflow_traces("app", tracking_uri=store, filter_string="tag.env = 'prod'")
    assert prod.frame["example_id"].tolist() == ids[1:]
    with pytest.raises(DataError, match="no traces match"):
        load_mlflow_traces("app", tracking_uri=store, since="2999-01-01")
    assert to_ms("1970-01-01T00:00:01", "since") == 1000 and to_ms("1500", "until") == 1500
    assert search_filter("tag.a = 'b'", 1, None) == "tag.a = 'b' AND timestamp_ms >= 1"


def test_an_unknown_experiment_or_setting_says_what_to_set(store):
    with pytest.raises(DataNotFoundError, match=r"dataset\.experiment='nope'"):
        load_mlflow_traces("nope", tracking_uri=store)
    with pytest.raises(ConfigError, match=r"dataset\.since"):
        load_mlflow_traces("app", tracking_uri=store, since="yesterday")


def test_a_study_that_needs_labels_names_an_unset_or_misspelt_label_setting(store):
    from runner.data import labelled_traces

    first = log_trace()
    mlflow.log_expectation(trace_id=first, name="hallucinated", value=False)
    unset = load_mlflow_traces("app", tracking_uri=store)
    with pytest.raises(
        DataError,
        match=r"file MLflow experiment 'app', field 'dataset\.label': fit_gate needs labelled "
        r"traces: set dataset\.label=<assessment name>.*on these traces: 'hallucinated'\)",
    ):
        labelled_traces(unset, "fit_gate")
    misspelt = load_mlflow_traces("app", tracking_uri=store, label="halucinated")
    with pytest.raises(
        DataError, match=r"dataset\.label='halucinated' is on none of the 1 traces.*'hallucinated'"
    ):
        labelled_traces(misspelt, "fit_gate")


def test_an_unlabelled_trace_is_named_or_with_skip_invalid_skipped_and_counted(store):
    from runner.data import labelled_traces

    ids = [log_trace(question=f"q{i}") for i in range(3)]
    for trace_id, value in zip(ids[::2], (True, False), strict=True):
        mlflow.log_expectation(trace_id=trace_id, name="hallucinated", value=value)
    data = load_mlflow_traces("app", tracking_uri=store, label="hallucinated")
    with pytest.raises(
        DataError,
        match=rf"row {ids[1]}, field 'label': trace {ids[1]} has no 'hallucinated' label.*"
        r"set dataset\.skip_invalid=true",
    ):
        labelled_traces(data, "fit_gate")
    skipping = load_mlflow_traces(
        "app", tracking_uri=store, label="hallucinated", skip_invalid=True
    )
    used = labelled_traces(skipping, "fit_gate")
    assert used.frame["example_id"].tolist() == [ids[0], ids[2]]
    assert used.frame["label"].tolist() == [1, 0] and str(used.frame["label"].dtype) == "int64"
    assert used.info["rows"] == 2 and used.info["rows_read"] == 3 and used.info["labelled"]
    (skipped,) = used.info["skipped"]
    assert (skipped["id"], skipped["field"], used.info["skipped_rows"]) == (ids[1], "label", 1)
