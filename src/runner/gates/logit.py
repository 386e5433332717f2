"""Learned gates: standardised logistic regression on lexical (and TF-IDF) features.

The token-coverage logit, RAGScope-C and RAGScope-E are one class with different feature
lists (`runner.gates.feature_sets`). Everything fitted — TF-IDF vocabulary and IDF, the
scaler, the logistic weights — lives in one scikit-learn `Pipeline` fitted in `fit`, so when
the study fits a gate on a training fold, no statistic can see the test fold.
"""

from __future__ import annotations

import itertools
from collections.abc import Mapping, Sequence
from typing import Any

import numpy as np
import pandas as pd
from sklearn.base import BaseEstimator, clone
from sklearn.compose import ColumnTransformer
from sklearn.linear_model import LogisticRegression
from sklearn.pipeline import Pipeline
from sklearn.preprocessing import StandardScaler
from sklearn.utils.validation import check_is_fitted

from runner.features import (
    DEFAULT_ENCODER,
    SIMILARITY_FEATURE_NAMES,
    VIEWS_KEPT,
    TfidfSupport,
    encoder_folder,
    similarity_features,
)
from runner.frames import check_labels
from runner.gates.base import as_risk, check_lexical_names, refuse_before_data, with_lexical
from runner.gates.verifier_features import VerifierRisks, risk_column, with_verifier_risks
from runner.settings import SEED

TEXT_CHUNK_CONTEXTS = VIEWS_KEPT // 2
"""New distinct contexts whose text features `LogitGate.score` computes together (lexical,
then TF-IDF).

Why chunks: the TF-IDF step reads each context's tokens from the views the lexical step
just built, and those are kept for at most `runner.features.VIEWS_KEPT` contexts; over a
routed batch of thousands of distinct contexts the first ones would be gone by the time
TF-IDF reached them, and each context would be tokenised twice. A batch with fewer
distinct contexts (traffic that asks about the same documents) stays one chunk. Both
steps are row-local (as is scaling), so the chunks' rows are the whole batch's, bit for
bit; the logistic model then scores the whole batch at once, as before."""


class LogitGate(BaseEstimator):
    """Risk = P(unfaithful) from a standardised logistic regression.

    Parameters
    ----------
    features : sequence of str
        Lexical features (`runner.features.LEXICAL_FEATURE_NAMES`) fed to the model.
    tfidf : bool
        Add the two TF-IDF risks (`runner.features.TfidfSupport`, fitted inside `fit`).
    C : float, default 1.0
        Inverse L2 regularisation strength.
    class_weight : str or None, default "balanced"
        Passed to `LogisticRegression`.
    max_iter : int, default 1000
    random_state : int, default `runner.settings.SEED`
    solver : str, default "lbfgs"
    extra_features : sequence of str, default ()
        Numeric columns that are not lexical features but scores the frame already
        carries, e.g. a verifier's risk a study adds (the stacked gate: RAGScope-E
        features + the trained detector's risk). Missing or non-finite values are errors.
    similarity : bool, default False
        Add the frozen sentence encoder's best-evidence features
        (`runner.features.SIMILARITY_FEATURE_NAMES`; RAGScope-E+sim). Read from the frame
        when a study already joined them, else computed (the encoder is never trained).
    encoder : str, default `runner.features.DEFAULT_ENCODER`
        The sentence encoder: alias, model folder or Hub id (used when `similarity`).
    cache_dir : str or None, default None
        Folder of the on-disk sentence vector cache (``paths.cache_dir``); None: memory only.
    verifiers : mapping of str to verifier, optional
        Verifiers whose risk on every row is a feature, column ``<name>_risk`` (the stacked
        gate: RAGScope-E + the trained detector, `conf/gate/ragscope_e_detector.yaml`), on
        the log-odds scale (``risk_logit``) where the verifier has one, else its ``score``.
        Anything with ``score(frame) -> risk`` (Hydra builds it inside the gate's node).
        Read from the frame when a study already joined the column, else scored; a row is
        scored once for this gate and all its clones (`runner.gates.verifier_features`).
        The verifier is part of the fitted gate: a pickled gate carries it.

    Attributes
    ----------
    pipeline_ : Pipeline
        ``columns`` (lexical passthrough [+ TF-IDF]) → ``scale`` (StandardScaler) →
        ``model`` (LogisticRegression), fitted on the training frame.
    """

    needs_fit = True
    _convert_ = "all"  # Hydra hands lists to it as plain lists (clone-safe, picklable)

    def __init__(
        self,
        features: Sequence[str],
        tfidf: bool,
        C: float = 1.0,
        class_weight: str | None = "balanced",
        max_iter: int = 1000,
        random_state: int = SEED,
        solver: str = "lbfgs",
        extra_features: Sequence[str] = (),
        similarity: bool = False,
        encoder: str = DEFAULT_ENCODER,
        cache_dir: str | None = None,
        verifiers: Mapping[str, Any] | None = None,
    ):
        self.features = features
        self.tfidf = tfidf
        self.C = C
        self.class_weight = class_weight
        self.max_iter = max_iter
        self.random_state = random_state
        self.solver = solver
        self.extra_features = extra_features
        self.similarity = similarity
        self.encoder = encoder
        self.cache_dir = cache_dir
        self.verifiers = verifiers
        if similarity:
            # A missing encoder package is a config error: fail when the run builds its
            # parts, before any data is read (a cheap lookup; the model loads on first use).
            encoder_folder(encoder)

    @classmethod
    def check_settings(cls, **settings: object) -> None:
        """The feature lists, checked before any data (`runner.gates.base.refuse_before_data`)."""
        refuse_before_data(cls(**settings)._names)

    def __sklearn_clone__(self) -> LogitGate:
        """A clone shares the verifiers (built once, loaded once) and their kept risks, so
        the out-of-fold loop scores each row once; every other parameter is cloned."""
        params = self.get_params(deep=False)
        shared = params.pop("verifiers")
        twin = type(self)(**{k: clone(v, safe=False) for k, v in params.items()})
        twin.verifiers = shared
        twin._risks = self._kept_risks()
        return twin

    def _kept_risks(self) -> VerifierRisks:
        if "_risks" not in self.__dict__:
            self._risks = VerifierRisks()
        return self._risks

    def __getstate__(self) -> dict[str, Any]:
        state = dict(self.__dict__)
        state.pop("_risks", None)  # kept scores of past rows: a pickled gate starts empty
        return state

    def _verifier_columns(self) -> list[str]:
        verifiers = self.verifiers or {}
        if not isinstance(verifiers, Mapping):
            raise ValueError(f"verifiers must map names to verifiers, got {verifiers!r}")
        columns = [risk_column(name) for name in verifiers]
        clash = sorted(set(columns) & set(self.extra_features))
        if clash:
            raise ValueError(f"{clash} is both an extra feature and a verifier's risk column")
        return columns

    def _names(self) -> list[str]:
        names = check_lexical_names(self.features)
        if not names and not self.tfidf and not self.similarity and not self.verifiers:
            raise ValueError(
                "a LogitGate needs at least one feature, tfidf=True, similarity=True or a verifier"
            )
        self._verifier_columns()
        return names

    def _with_columns(self, frame: pd.DataFrame, names: list[str]) -> pd.DataFrame:
        frame = with_lexical(frame, names)
        if self.similarity:
            frame = self._with_similarity(frame)
        if self.verifiers:
            for name, verifier in self.verifiers.items():
                if not callable(getattr(verifier, "score", None)):
                    raise ValueError(f"verifier {name!r} has no score(frame): got {verifier!r}")
            frame = with_verifier_risks(frame, self.verifiers, self._kept_risks())
        for column in [*self.extra_features, *self._verifier_columns()]:
            if column not in frame.columns:
                raise ValueError(f"extra feature {column!r} is not a column of the frame")
            values = pd.to_numeric(frame[column], errors="coerce").to_numpy(float)
            bad = np.flatnonzero(~np.isfinite(values))
            if len(bad):
                row = frame["example_id"].iloc[bad[0]] if "example_id" in frame else bad[0]
                raise ValueError(f"extra feature {column!r} is not a finite number at row {row}")
        return frame

    def _with_similarity(self, frame: pd.DataFrame) -> pd.DataFrame:
        """`frame` with the similarity columns: as joined (checked finite), else computed."""
        missing = [n for n in SIMILARITY_FEATURE_NAMES if n not in frame.columns]
        if missing:
            computed = similarity_features(frame, self.encoder, self.cache_dir)
            frame = frame.assign(**{n: computed[n].to_numpy() for n in missing})
        for name in SIMILARITY_FEATURE_NAMES:
            values = pd.to_numeric(frame[name], errors="coerce").to_numpy(float)
            bad = np.flatnonzero(~np.isfinite(values))
            if len(bad):
                raise ValueError(
                    f"row {frame.index[bad[0]]!r}, field {name!r}: not a finite number"
                )
        return frame

    def _pipeline(self, names: list[str]) -> Pipeline:
        parts = [("lexical", "passthrough", names)] if names else []
        if self.similarity:
            parts.append(("similarity", "passthrough", list(SIMILARITY_FEATURE_NAMES)))
        if self.extra_features:
            parts.append(("extra", "passthrough", list(self.extra_features)))
        if self.verifiers:
            parts.append(("verifiers", "passthrough", self._verifier_columns()))
        if self.tfidf:
            parts.append(("tfidf", TfidfSupport(), ["context", "answer"]))
        return Pipeline(
            [
                ("columns", ColumnTransformer(parts, remainder="drop")),
                ("scale", StandardScaler()),
                (
                    "model",
                    LogisticRegression(
                        C=self.C,
                        class_weight=self.class_weight,
                        max_iter=self.max_iter,
                        random_state=self.random_state,
                        solver=self.solver,
                    ),
                ),
            ]
        )

    def fit(self, frame: pd.DataFrame, y) -> LogitGate:
        """Fit TF-IDF (if used), scaler and logistic regression on the training frame.

        Parameters
        ----------
        frame : DataFrame
            Training fold: ``question``, ``context``, ``answer`` and, optionally, the
            lexical feature columns already computed.
        y : array-like of int
            1 = unfaithful, 0 = faithful; both classes must occur.

        Returns
        -------
        LogitGate
            self
        """
        names = self._names()
        labels = check_labels(y, rows=len(frame), need_all="a learned gate").astype(np.int64)
        self.pipeline_ = self._pipeline(names).fit(self._with_columns(frame, names), labels)
        return self

    def score(self, frame: pd.DataFrame) -> np.ndarray:
        """Predicted probability of the unfaithful class for each row.

        Parameters
        ----------
        frame : DataFrame
            Same columns as in `fit`.

        Returns
        -------
        ndarray of float64, shape (n_rows,)
        """
        check_is_fitted(self, "pipeline_")
        names = self._names()
        model = self.pipeline_.named_steps["model"]
        positive = list(model.classes_).index(1)
        probabilities = model.predict_proba(self._design(frame, names))
        return as_risk(probabilities[:, positive], frame)

    def _design(self, frame: pd.DataFrame, names: list[str]) -> Any:
        """The model's input rows: the fitted column and scaling steps over `frame`, by
        chunks of `TEXT_CHUNK_CONTEXTS` new contexts where every column is made from the row's text
        alone (no similarity, verifier or extra column: those are computed or checked over
        the whole frame, and an encoder's or a verifier's batch is theirs to choose)."""
        steps = self.pipeline_[:-1]
        text_only = not (self.similarity or self.verifiers or self.extra_features)
        bounds = _context_chunks(frame, TEXT_CHUNK_CONTEXTS) if text_only else [0, len(frame)]
        parts = [
            steps.transform(self._with_columns(frame.iloc[start:end], names))
            for start, end in itertools.pairwise(bounds)
        ]
        return parts[0] if len(parts) == 1 else np.vstack(parts)


def _context_chunks(frame: pd.DataFrame, contexts: int) -> list[int]:
    """Row bounds cutting `frame` so that each chunk first meets at most `contexts` distinct
    contexts (``[0, len(frame)]``: one chunk); a context met in an earlier chunk is not
    counted again."""
    if len(frame) == 0 or "context" not in frame.columns:
        return [0, len(frame)]
    codes, _ = pd.factorize(frame["context"], use_na_sentinel=False)
    met = np.maximum.accumulate(codes) // contexts  # codes count contexts in order of meeting
    return [0, *(np.flatnonzero(np.diff(met)) + 1).tolist(), len(frame)]
