"""Zero-shot gates (RAGScope-Z): one lexical feature, used as the risk with no training."""

from __future__ import annotations

import numpy as np
import pandas as pd
from sklearn.base import BaseEstimator

from runner.gates.base import as_risk, check_lexical_names, refuse_before_data, with_lexical


class FeatureGate(BaseEstimator):
    """Risk = ``sign × feature``: a monotone score from one lexical feature.

    Parameters
    ----------
    feature : str
        A lexical feature (`runner.features.LEXICAL_FEATURE_NAMES`), e.g.
        ``"uncovered_fraction"``, ``"rouge_l_risk"``, ``"token_f1_risk"``.
    sign : float, default 1.0
        +1 when larger feature values mean more risk (the ``*_risk`` features and
        ``uncovered_fraction``), -1 for support-type features such as ``coverage``.
    """

    needs_fit = False

    def __init__(self, feature: str, sign: float = 1.0):
        self.feature = feature
        self.sign = sign

    @classmethod
    def check_settings(cls, **settings: object) -> None:
        """`feature` and `sign`, checked before any data (`gates.base.refuse_before_data`)."""
        refuse_before_data(cls(**settings)._check)

    def _check(self) -> str:
        (name,) = check_lexical_names([self.feature])
        if not np.isfinite(self.sign) or self.sign == 0:
            raise ValueError(f"sign must be a finite non-zero number, got {self.sign!r}")
        return name

    def fit(self, frame: pd.DataFrame, y=None) -> FeatureGate:
        """Nothing to learn; checks the parameters.

        Parameters
        ----------
        frame : DataFrame
            Ignored apart from being the training fold.
        y : ignored

        Returns
        -------
        FeatureGate
            self
        """
        self._check()
        return self

    def score(self, frame: pd.DataFrame) -> np.ndarray:
        """Risk of each row.

        Parameters
        ----------
        frame : DataFrame
            Response-level frame; its ``feature`` column is used when present, else the
            feature is computed from ``question``, ``context`` and ``answer``.

        Returns
        -------
        ndarray of float64, shape (n_rows,)
            Larger = more likely unfaithful.
        """
        name = self._check()
        values = with_lexical(frame, [name])[name].to_numpy(dtype=np.float64)
        return as_risk(float(self.sign) * values, frame)
