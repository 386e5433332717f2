"""TF-IDF gates: answer–context and best-sentence TF-IDF risk, IDF fitted on training texts.

They use no labels but do fit corpus statistics, so `fit` must see the training fold only:
`needs_fit` is True and the study fits them inside each fold like any learned gate.
"""

from __future__ import annotations

from enum import StrEnum

import numpy as np
import pandas as pd
from sklearn.base import BaseEstimator
from sklearn.utils.validation import check_is_fitted

from runner.features import TfidfSupport
from runner.gates.base import as_risk, refuse_before_data


class TfidfKind(StrEnum):
    """Which TF-IDF risk a `TfidfGate` returns."""

    answer_context = "answer_context"  # 1 - cos(answer, whole context)
    max_sentence = "max_sentence"  # 1 - max cos(answer, context sentence)


_FEATURE = {
    TfidfKind.answer_context: "tfidf_risk",
    TfidfKind.max_sentence: "max_sentence_tfidf_risk",
}


class TfidfGate(BaseEstimator):
    """Risk = 1 − TF-IDF cosine of answer and context (or its best sentence).

    Parameters
    ----------
    kind : {"answer_context", "max_sentence"}
        ``answer_context``: the whole context; ``max_sentence``: the best-matching context
        sentence.

    Attributes
    ----------
    support_ : TfidfSupport
        Fitted on the training frame's contexts and answers.
    """

    needs_fit = True

    def __init__(self, kind: TfidfKind | str = "answer_context"):
        self.kind = kind

    @classmethod
    def check_settings(cls, **settings: object) -> None:
        """`kind`, checked before any data (`runner.gates.base.refuse_before_data`)."""
        refuse_before_data(cls(**settings)._feature)

    def _feature(self) -> str:
        try:
            return _FEATURE[TfidfKind(self.kind)]
        except ValueError:
            raise ValueError(
                f"kind must be one of {[k.value for k in TfidfKind]}, got {self.kind!r}"
            ) from None

    def fit(self, frame: pd.DataFrame, y=None) -> TfidfGate:
        """Fit TF-IDF vocabulary and IDF on the training frame (labels unused).

        Parameters
        ----------
        frame : DataFrame
            Training fold with ``context`` and ``answer``.
        y : ignored

        Returns
        -------
        TfidfGate
            self
        """
        self.support_ = TfidfSupport(features=[self._feature()]).fit(frame)
        return self

    def score(self, frame: pd.DataFrame) -> np.ndarray:
        """Risk of each row.

        Parameters
        ----------
        frame : DataFrame
            With ``context`` and ``answer``.

        Returns
        -------
        ndarray of float64, shape (n_rows,)
            In [0, 1]; larger = more likely unfaithful.
        """
        check_is_fitted(self, "support_")
        return as_risk(self.support_.transform(frame)[:, 0], frame)
