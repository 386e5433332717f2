"""The trained detector as an MLflow pyfunc model: the weights folder plus how to score.

Why pyfunc and not the transformers flavor: the detector's risk is not the pipeline's
output (it is the max over answer tokens, after the input rule of ``detector.json``), so
a registered version must score exactly as `LettuceDetectVerifier` does. The weights
folder is the model's artifact ``detector``; ``models:/<name>@<alias>`` URIs given to the
verifier (`runner.verifiers.loading.resolve_source`) resolve to that folder.
"""

from __future__ import annotations

from typing import Any

import mlflow.pyfunc
import pandas as pd

ARTIFACT = "detector"
DETECTOR_INPUT_FIELDS = ("question", "context", "answer")


def detector_signature() -> Any:
    """Input: question, context, answer (strings); output: the risk."""
    from mlflow.models import ModelSignature
    from mlflow.types import ColSpec, DataType, Schema

    inputs = Schema([ColSpec(DataType.string, name) for name in DETECTOR_INPUT_FIELDS])
    return ModelSignature(inputs=inputs, outputs=Schema([ColSpec(DataType.double, "risk")]))


class DetectorModel(mlflow.pyfunc.PythonModel):
    """Scores (question, context, answer) rows with the weights of artifact ``detector``."""

    def load_context(self, context: Any) -> None:
        """Build the verifier over the shipped folder (its ``detector.json`` sets the rule)."""
        from runner.verifiers.lettuce_detect import LettuceDetectVerifier

        self.verifier = LettuceDetectVerifier(
            model=context.artifacts[ARTIFACT], batch_size=16, evidence="full_context"
        )

    def predict(self, context: Any, model_input: pd.DataFrame, params: Any = None) -> pd.DataFrame:
        """One ``risk`` per row (max answer-token probability of being unsupported)."""
        frame = model_input.reset_index(drop=True).copy()
        frame["example_id"] = [f"#{i}" for i in range(len(frame))]
        frame["question"] = frame["question"].fillna("")
        return pd.DataFrame({"risk": self.verifier.score(frame)})
