"""A scorer reads its row as the loader does; a trace it cannot read gets an error, no number."""

from __future__ import annotations

import mlflow
import pytest
from tests.data.test_mlflow_traces import log_trace, store  # noqa: F401 (fixture)

from runner.data.mlflow_traces import load_mlflow_traces
from runner.gates import FeatureGate
from runner.scorers import gate_scorer


def test_a_gate_scorer_scores_the_loaders_row_and_refuses_an_unreadable_trace(store):  # noqa: F811
    good = log_trace(answer="Paris is in Spain.")
    bad = log_trace(docs=None)
    gate = FeatureGate("uncovered_fraction")
    scorer = gate_scorer(gate, name="uncovered")
    feedback = scorer(trace=mlflow.get_trace(good))
    frame = load_mlflow_traces("app", tracking_uri=store, skip_invalid=True).frame
    assert feedback.value == pytest.approx(float(gate.score(frame)[0]), rel=1e-12)
    assert "spain" in feedback.rationale and feedback.source.source_id == "scorer:uncovered"
    refused = scorer(trace=mlflow.get_trace(bad))
    assert refused.value is None and bad in refused.error.error_message
