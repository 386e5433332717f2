"""`dataset=mlflow_trace_audit`: settings checked before the store is read; marks an earlier
version of the runner logged (no risk on the mark) still read with their run's risk.

How `route` writes marks and how the audit reads one run's sample:
tests/routing/test_trace_feedback.py.
"""

from __future__ import annotations

import mlflow
import pytest
from mlflow.entities import AssessmentSource
from tests.data.test_mlflow_traces import log_trace, store  # noqa: F401 (fixture)

from runner.data.trace_audit import check_trace_audit_settings, load_trace_audit_labels
from runner.errors import ConfigError


def test_a_routing_run_is_only_named_for_a_runs_sample():
    with pytest.raises(
        ConfigError, match=r"dataset\.routing_run='abc'.*needs dataset\.scope=marked"
    ):
        check_trace_audit_settings("accepted", "abc")
    with pytest.raises(ConfigError, match=r"dataset\.routing_run: the MLflow run id"):
        check_trace_audit_settings("marked", " ")
    with pytest.raises(ConfigError, match=r"dataset\.scope='all'"):
        check_trace_audit_settings("all", None)
    check_trace_audit_settings("marked", None)


def test_a_mark_without_its_risk_reads_the_risk_its_run_logged(store):  # noqa: F811
    trace_id = log_trace()
    runner = AssessmentSource(source_type="CODE", source_id="ragscope:gate/1")
    run = {"routing_run_id": "old-run", "model_version": "1"}
    mlflow.log_feedback(trace_id=trace_id, name="ragscope_risk", value=0.125, source=runner,
                        metadata=run)  # fmt: skip
    mlflow.log_feedback(trace_id=trace_id, name="ragscope_decision", value="accept",
                        source=runner, metadata=run)  # fmt: skip
    mlflow.log_feedback(trace_id=trace_id, name="ragscope_audit", value=True, source=runner,
                        metadata=run)  # fmt: skip
    reviewer = AssessmentSource(source_type="HUMAN", source_id="r")
    mlflow.log_feedback(trace_id=trace_id, name="hallucinated", value=True, source=reviewer)
    data = load_trace_audit_labels("app", tracking_uri=store)
    assert data.info["routing_run_id"] == "old-run" and data.info["models"] == ["gate/1"]
    assert data.frame.to_dict("records") == [
        {"id": trace_id, "label": 1, "risk": 0.125, "model": "gate/1"}
    ]
