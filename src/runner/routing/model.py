"""The fitted gate as an MLflow pyfunc model: raw question/context/answer in, risk + decision out.

Why a pyfunc: the same object is what `route` applies, what `mlflow models serve` answers
over HTTP and what a team loads in their own service, so the preprocessing boundary (the
lexical features and TF-IDF computed from raw text inside the gate) is the one validated
in the operating report. Bad input is the caller's fault and gets an `MlflowException`
with ``INVALID_PARAMETER_VALUE`` naming the field, which the scoring server answers as a
400, never as a 500 with a traceback.
"""

from __future__ import annotations

from typing import Any

import numpy as np
import pandas as pd

from runner.routing.thresholds import decide

INPUT_FIELDS = ("question", "context", "answer")
OPTIONAL_FIELDS = ("id", "source")
NON_EMPTY = ("context", "answer")


class InputError(ValueError):
    """A request the model cannot score; the message names the field (and the row)."""


def check_input(frame: Any) -> pd.DataFrame:
    """The request as a frame of strings, or an `InputError` naming the field at fault."""
    if isinstance(frame, dict):
        frame = pd.DataFrame(frame)
    if not isinstance(frame, pd.DataFrame):
        raise InputError(f"input must be a table with fields {list(INPUT_FIELDS)}")
    for name in INPUT_FIELDS:
        if name not in frame.columns:
            raise InputError(f"field '{name}' is missing (required: {', '.join(INPUT_FIELDS)})")
    if frame.empty:
        raise InputError("input has no rows")
    for name in INPUT_FIELDS:
        for pos, value in enumerate(frame[name].tolist()):
            if not isinstance(value, str):
                raise InputError(f"field '{name}' of row {pos} must be a string, got {value!r}")
            if name in NON_EMPTY and not value.strip():
                raise InputError(f"field '{name}' of row {pos} is empty")
    return frame.reset_index(drop=True)


def _pyfunc_base() -> type:
    from mlflow.pyfunc import PythonModel

    return PythonModel


class RoutingModel(_pyfunc_base()):
    """A fitted gate with the contract's thresholds.

    Parameters
    ----------
    gate : fitted gate
        Anything with ``score(frame) -> risk`` on raw question/context/answer.
    review_at, accept_at : float
        Thresholds of `runner.routing.thresholds.decide`.
    """

    def __init__(self, gate: Any, review_at: float, accept_at: float) -> None:
        self.gate = gate
        self.review_at = float(review_at)
        self.accept_at = float(accept_at)

    def score(self, frame: pd.DataFrame) -> pd.DataFrame:
        """``risk`` and ``decision`` per row of a checked frame."""
        risk = np.asarray(self.gate.score(frame[list(INPUT_FIELDS)]), dtype=np.float64)
        return pd.DataFrame(
            {"risk": risk, "decision": decide(risk, self.review_at, self.accept_at).astype(str)}
        )

    def predict(
        self, context, model_input, params=None
    ):  # untyped: MLflow would read hints as a schema
        """MLflow's entry point: validate, then score; bad input is a 400 naming the field."""
        from mlflow.exceptions import MlflowException
        from mlflow.protos.databricks_pb2 import INVALID_PARAMETER_VALUE

        try:
            frame = check_input(model_input)
        except InputError as exc:
            raise MlflowException(str(exc), error_code=INVALID_PARAMETER_VALUE) from None
        return self.score(frame)


def signature() -> Any:
    """Input: the three text fields (+ optional id, source); output: risk and decision."""
    from mlflow.models import ModelSignature
    from mlflow.types import ColSpec, DataType, Schema

    inputs = Schema(
        [ColSpec(DataType.string, name) for name in INPUT_FIELDS]
        + [ColSpec(DataType.string, name, required=False) for name in OPTIONAL_FIELDS]
    )
    outputs = Schema([ColSpec(DataType.double, "risk"), ColSpec(DataType.string, "decision")])
    return ModelSignature(inputs=inputs, outputs=outputs)
