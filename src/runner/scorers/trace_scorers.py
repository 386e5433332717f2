"""The three scorers: a zero-shot gate, a registered gate (``models:/…``) and a verifier.

Each reads its row from the trace with the loader's own mapping
(`runner.data.traces.trace_row`), so a scorer sees exactly the question, context and answer
`route` over ``dataset=mlflow_traces`` sees, and scores it with the same object `route`
uses (the gate, the registered pyfunc model, the verifier): the same risk on the same
trace. A trace the mapping cannot read gets a feedback with an error naming why, not a
made-up number. Rows given to `mlflow.genai.evaluate` as a DataFrame of ``inputs`` and
``outputs`` (no retriever span) are scored from ``inputs["context"]`` (`context_key`).
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import numpy as np
import pandas as pd

from runner.data import TraceMapping, TraceProblem, evaluated_row
from runner.routing.model import INPUT_FIELDS
from runner.scorers.evidence import lexical_evidence

SOURCE_ID = "scorer"
CONTEXT_KEY = "context"
"""Where a row evaluated without a retriever span holds its context: ``inputs["context"]``."""


def _frame(row: dict[str, Any]) -> pd.DataFrame:
    return pd.DataFrame([row])


def _feedback(name: str, value: float, rationale: str, metadata: dict[str, str]) -> Any:
    from mlflow.entities import AssessmentSource, Feedback

    # not "ragscope:<model>/<version>": that source marks route's own assessments
    source = AssessmentSource(source_type="CODE", source_id=f"{SOURCE_ID}:{name}")
    return Feedback(
        name=name, value=float(value), rationale=rationale, source=source, metadata=metadata
    )


def _error(name: str, reason: str) -> Any:
    from mlflow.entities import AssessmentError, Feedback

    return Feedback(name=name, error=AssessmentError(error_code="UNREADABLE_TRACE",
                                                     error_message=reason))  # fmt: skip


def _make(
    name: str, mapping: TraceMapping, score: Callable[[dict], tuple], context_key: str
) -> Any:
    """An MLflow scorer `name` that maps a trace (or an evaluated row's ``inputs`` and
    ``outputs``) to a row and calls `score(row)` (`runner.data.evaluated_row`)."""
    from mlflow.genai.scorers import scorer

    def risk(*, inputs: Any = None, outputs: Any = None, trace: Any = None) -> Any:
        if trace is None and inputs is None:
            return _error(
                name,
                "nothing to score: evaluate traces (mlflow.search_traces) or rows with "
                f"inputs={{'question': ..., {context_key!r}: ...}} and outputs=<the answer>",
            )
        row = evaluated_row(trace, inputs, outputs, mapping, context_key)
        if isinstance(row, TraceProblem):
            return _error(name, row.reason)
        value, rationale, metadata = score(row)
        return _feedback(name, value, rationale, metadata)

    return scorer(risk, name=name)


def gate_scorer(
    gate: Any, name: str, mapping: TraceMapping | None = None, context_key: str = CONTEXT_KEY
) -> Any:
    """A scorer from a zero-shot gate (or any fitted gate): value = ``gate.score`` of the row.

    The rationale names the answer tokens the context does not hold and the weakest
    sentence (`runner.scorers.evidence`). `context_key`: where an evaluated row without a
    retriever span holds its context (``inputs[context_key]``).
    """

    def score(row: dict) -> tuple:
        risk = float(np.asarray(gate.score(_frame(row)[list(INPUT_FIELDS)]))[0])
        evidence = lexical_evidence(row["question"], row["context"], row["answer"])
        return risk, f"risk {risk:.4f}; {evidence.text()}", {"gate": name}

    return _make(name, mapping or TraceMapping(), score, context_key)


def registered_gate_scorer(
    model_uri: str,
    tracking_uri: str,
    name: str = "ragscope_gate_risk",
    mapping: TraceMapping | None = None,
    context_key: str = CONTEXT_KEY,
) -> Any:
    """A scorer from a registered routing model: value = the risk `route` gives the row.

    The model (``models:/<name>@<alias>`` or ``models:/<name>/<version>``) is loaded once,
    on the first trace; the rationale adds its decision and thresholds to the evidence.
    """
    from runner.routing.route import load_routed_model

    loaded: dict[str, Any] = {}

    def score(row: dict) -> tuple:
        if "model" not in loaded:
            loaded["model"] = load_routed_model(tracking_uri, model_uri)
        model = loaded["model"]
        fields = [*INPUT_FIELDS, "source"]
        out = model.pyfunc.predict(_frame(row)[fields]).iloc[0]
        risk = float(out["risk"])
        evidence = lexical_evidence(row["question"], row["context"], row["answer"])
        reason = f" ({out['reason']})" if out.get("reason") else ""
        rationale = f"risk {risk:.4f} -> {out['decision']}{reason}; {evidence.text()}"
        meta = {
            "model_uri": model_uri,
            "model_version": f"{model.name}/{model.version}",
            "decision": str(out["decision"]),
        }
        return risk, rationale, meta

    return _make(name, mapping or TraceMapping(), score, context_key)


def verifier_scorer(
    verifier: Any, name: str, mapping: TraceMapping | None = None, context_key: str = CONTEXT_KEY
) -> Any:
    """A scorer from a verifier (`runner.verifiers`): value = its risk on the row.

    The model is loaded on the first trace (``verifier.load()`` when it has one), as the
    routing cascade does (`runner.routing.contract.cascade.score_band`).
    """
    state: dict[str, bool] = {}

    def score(row: dict) -> tuple:
        if not state and callable(getattr(verifier, "load", None)):
            verifier.load()
        state["loaded"] = True
        risk = float(np.asarray(verifier.score(_frame(row)), dtype=np.float64)[0])
        evidence = lexical_evidence(row["question"], row["context"], row["answer"])
        return risk, f"{name} risk {risk:.4f}; {evidence.text()}", {"verifier": name}

    return _make(name, mapping or TraceMapping(), score, context_key)
