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


def test_evaluate_on_rows_scores_their_inputs_context_and_says_what_a_row_lacks(store):  # noqa: F811
    import pandas as pd

    from runner.data import PASSAGE_JOIN

    gate = FeatureGate("uncovered_fraction")
    passages = ["Paris is the capital of France.", "It lies on the Seine."]
    question, answer = "Capital of France?", "Paris, on the Seine."
    rows = pd.DataFrame(
        {
            "inputs": [
                {"question": question, "context": passages},  # passages, as a retriever's
                {"question": question, "context": passages[0]},  # one text
                {"question": question},  # no context at all
            ],
            "outputs": [answer] * 3,
        }
    )
    result = mlflow.genai.evaluate(data=rows, scorers=[gate_scorer(gate, name="uncovered")])
    table = result.result_df
    contexts = [PASSAGE_JOIN.join(passages), passages[0]]
    expected = gate.score(
        pd.DataFrame({"question": [question] * 2, "context": contexts, "answer": [answer] * 2})
    )
    assert expected[0] != expected[1]  # the two contexts tell the rows apart
    values = table["uncovered/value"].dropna().tolist()
    assert sorted(values) == pytest.approx(sorted(expected.tolist()), rel=1e-12)
    (error,) = table["uncovered/error_message"].dropna().tolist()
    assert "inputs have no 'context' key" in error and "give inputs=" in error
    assert "tr-" not in error  # no trace id the user never made
