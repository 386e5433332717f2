"""The fitted gate as an MLflow pyfunc model: raw question/context/answer in, risk + decision out.

Why a pyfunc: the same object is what `route` applies, what `mlflow models serve` answers
over HTTP and what a team loads in their own service, so the preprocessing boundary (the
lexical features and TF-IDF computed from raw text inside the gate) is the one validated
in the operating report. Bad input is the caller's fault and gets an `MlflowException`
with ``INVALID_PARAMETER_VALUE`` naming the field, which the scoring server answers as a
400, never as a 500 with a traceback.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

import numpy as np
import pandas as pd

from runner.data import PASSAGE_JOIN
from runner.routing.contract import decide
from runner.text import unreadable_reason

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
    frame = frame.reset_index(drop=True)
    frame["context"] = [_passages(value, pos) for pos, value in enumerate(frame["context"])]
    for name in INPUT_FIELDS:
        for pos, value in enumerate(frame[name].tolist()):
            # Messages name the field, the row and the type, never the value: a request
            # may hold user data, and a 400 body must not echo it back.
            if not isinstance(value, str):
                raise InputError(
                    f"field '{name}' of row {pos} must be a string, got {type(value).__name__}"
                )
            if name in NON_EMPTY and not value.strip():
                raise InputError(f"field '{name}' of row {pos} is empty")
    return frame


def _passages(value: Any, pos: int) -> Any:
    """A list context joined as the file format joins it; anything else unchanged."""
    if isinstance(value, np.ndarray):
        value = value.tolist()
    if not isinstance(value, (list, tuple)):
        return value
    if not value:
        raise InputError(f"field 'context' of row {pos} is an empty list")
    for k, passage in enumerate(value):
        if not isinstance(passage, str) or not passage.strip():
            raise InputError(
                f"field 'context' of row {pos}: passage {k + 1} must be a non-empty string, "
                f"got {type(passage).__name__}"
            )
    return PASSAGE_JOIN.join(value)


def _request_error(message: str) -> Exception:
    """An ``INVALID_PARAMETER_VALUE`` `MlflowException` (a 400) whose message stays as given.

    Why not a plain `MlflowException`: MLflow's scoring server (``invocations`` in
    ``mlflow.pyfunc.scoring_server``, 3.x) rewrites the message of any `MlflowException`
    raised by ``predict`` to ``Failed to predict data '<the request frame>' ...``, so the
    400 body would quote the request's text, which may hold user data. Our message names
    the field, the row and the type only; this subclass ignores the rewrite.
    """
    from mlflow.exceptions import MlflowException
    from mlflow.protos.databricks_pb2 import INVALID_PARAMETER_VALUE

    class RequestError(MlflowException):
        @property
        def message(self) -> str:
            return self._fixed_message

        @message.setter
        def message(self, value: str) -> None:
            if not hasattr(self, "_fixed_message"):  # set once, by MlflowException.__init__
                self._fixed_message = value

    return RequestError(message, error_code=INVALID_PARAMETER_VALUE)


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
        Thresholds of `runner.routing.contract.thresholds.decide`.
    training_sources : sequence of str, optional
        Sources the gate was fitted on; a request row whose ``source`` is not among them is
        flagged ``unseen_source`` (as `route` flags it).
    """

    # MLflow reads type hints on `predict` as an input schema and warns, at class creation
    # (so on every import), when there are none. This model checks its own input and logs
    # an explicit signature (`signature`); MLflow's own opt-out for such models.
    _skip_type_hint_validation = True

    def __init__(
        self,
        gate: Any,
        review_at: float,
        accept_at: float,
        training_sources: Sequence[str] | None = None,
    ) -> None:
        self.gate = gate
        self.review_at = float(review_at)
        self.accept_at = float(accept_at)
        self.training_sources = None if training_sources is None else list(training_sources)

    def score(self, frame: pd.DataFrame) -> pd.DataFrame:
        """``risk``, ``decision``, ``reason`` and ``unseen_source`` per row of a checked frame.

        A row whose text the lexical features cannot read (`runner.text.scripts`) goes to
        review with the reason, whatever its risk: the risk was computed from text the
        gate could not see. ``unseen_source`` is False where the request gives no source
        or the model does not know its training sources (models fitted before it did).
        """
        risk = np.asarray(self.gate.score(frame[list(INPUT_FIELDS)]), dtype=np.float64)
        decision = decide(risk, self.review_at, self.accept_at).astype(object)
        reasons = [
            unreadable_reason(c, a) or ""
            for c, a in zip(frame["context"], frame["answer"], strict=True)
        ]
        unreadable = np.array([bool(r) for r in reasons], dtype=bool)
        decision[unreadable] = "review"
        known = getattr(self, "training_sources", None)  # older pickles lack it
        if known is not None and "source" in frame.columns:
            unseen = ~frame["source"].astype(str).isin(set(known)).to_numpy()
        else:
            unseen = np.zeros(len(frame), dtype=bool)
        return pd.DataFrame(
            {
                "risk": risk,
                "decision": decision.astype(str),
                "reason": reasons,
                "unseen_source": unseen,
            }
        )

    def predict(
        self, context, model_input, params=None
    ):  # untyped: MLflow would read hints as a schema
        """MLflow's entry point: validate, then score; bad input is a 400 naming the field
        (and never quoting the request, see `_request_error`)."""
        try:
            frame = check_input(model_input)
        except InputError as exc:
            raise _request_error(str(exc)) from None
        return self.score(frame)


def signature() -> Any:
    """Input: the three text fields (+ optional id, source); output: risk, decision, reason
    and unseen_source."""
    from mlflow.models import ModelSignature
    from mlflow.types import ColSpec, DataType, Schema
    from mlflow.types.schema import AnyType

    # `context` is a string or a list of passages, as in the file format; the model checks it.
    inputs = Schema(
        [ColSpec(AnyType() if name == "context" else DataType.string, name)
         for name in INPUT_FIELDS]
        + [ColSpec(DataType.string, name, required=False) for name in OPTIONAL_FIELDS]
    )  # fmt: skip
    outputs = Schema(
        [
            ColSpec(DataType.double, "risk"),
            ColSpec(DataType.string, "decision"),
            ColSpec(DataType.string, "reason"),
            ColSpec(DataType.boolean, "unseen_source"),
        ]
    )
    return ModelSignature(inputs=inputs, outputs=outputs)
