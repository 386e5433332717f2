"""TF-IDF support features of RAGScope-E, the only lexical features with fitted statistics.

The vocabulary and IDF weights depend on the corpus, so they are fitted on the training
fold's texts only and then applied to held-out rows: `TfidfSupport` is a scikit-learn
transformer, and inside a `Pipeline` that boundary holds by construction. Settings are the
study's: scikit-learn's English stop words, unigrams and bigrams, ``min_df=1``, L2-normalised
rows, cosine similarity. Words come from the project tokeniser (`runner.text.tokenize`), so
TF-IDF sees the same tokens as every other feature.

Fitting corpus: every distinct training context once, then every training answer. A context
is one document however many answers it carries (RAGTruth: six), so repeated contexts do not
inflate document frequencies; pass ``dedupe_contexts=False`` to count every row's context.
"""

from __future__ import annotations

from collections.abc import Sequence

import numpy as np
import pandas as pd
from sklearn.base import BaseEstimator, TransformerMixin
from sklearn.feature_extraction.text import TfidfVectorizer
from sklearn.utils.validation import check_is_fitted

from runner.features.family import answer_tokens, validate_texts
from runner.features.tfidf_vectors import (
    best_sentence_cosine,
    context_matrix,
    context_terms,
    tfidf_rows,
    vocabulary_fingerprint,
)
from runner.text import tokenize

TFIDF_FEATURE_NAMES: tuple[str, ...] = ("tfidf_risk", "max_sentence_tfidf_risk")
TEXT_COLUMNS = ("context", "answer")


def _row_dot(left, right) -> np.ndarray:
    """Row-wise dot products of two sparse matrices of equal shape."""
    return np.asarray(left.multiply(right).sum(axis=1), dtype=np.float64).ravel()


class TfidfSupport(TransformerMixin, BaseEstimator):
    """TF-IDF answer–context risks: whole context, and best-matching context sentence.

    Parameters
    ----------
    features : sequence of str, optional
        Which of `TFIDF_FEATURE_NAMES` to output, in order; default both. (Each distinct
        context and its sentences are vectorised once per process and kept,
        `runner.features.tfidf_vectors`, whichever features are asked for.)
    dedupe_contexts : bool, default True
        Fit on each distinct training context once (see module docstring).

    Attributes
    ----------
    vectorizer_ : TfidfVectorizer
        Fitted on the training texts.
    """

    def __init__(self, features: Sequence[str] | None = None, dedupe_contexts: bool = True):
        self.features = features
        self.dedupe_contexts = dedupe_contexts

    def _names(self) -> tuple[str, ...]:
        names = TFIDF_FEATURE_NAMES if self.features is None else tuple(self.features)
        unknown = [n for n in names if n not in TFIDF_FEATURE_NAMES]
        if unknown or not names or len(set(names)) != len(names):
            raise ValueError(
                f"features must be distinct names from {list(TFIDF_FEATURE_NAMES)}, "
                f"got {list(names)}"
            )
        return names

    def fit(self, X: pd.DataFrame, y=None) -> TfidfSupport:
        """Fit vocabulary and IDF on the frame's contexts and answers (labels unused).

        Parameters
        ----------
        X : DataFrame
            With string columns ``context`` and ``answer``: the training fold.
        y : ignored

        Returns
        -------
        TfidfSupport
            self
        """
        self._names()
        validate_texts(X, TEXT_COLUMNS)
        self._vectors_key = None  # a new vocabulary: `transform` fingerprints it again
        contexts = X["context"].tolist()
        if self.dedupe_contexts:
            contexts = list(dict.fromkeys(contexts))
        self.vectorizer_ = TfidfVectorizer(
            tokenizer=tokenize,
            token_pattern=None,
            lowercase=False,  # tokenize lowercases
            stop_words="english",
            ngram_range=(1, 2),
            min_df=1,
            norm="l2",
        ).fit(contexts + X["answer"].tolist())
        return self

    def transform(self, X: pd.DataFrame) -> np.ndarray:
        """Risks ``1 - cosine`` of each answer against its context and best sentence.

        Parameters
        ----------
        X : DataFrame
            With string columns ``context`` and ``answer``.

        Returns
        -------
        ndarray of float64, shape (n_rows, len(features))
            ``tfidf_risk`` = 1 − cos(answer, context); ``max_sentence_tfidf_risk`` =
            1 − max over context sentences of cos(answer, sentence). An answer or context
            with no in-vocabulary term has cosine 0, so risk 1 (fail closed); a context
            with no sentence gives sentence risk 1.
        """
        check_is_fitted(self, "vectorizer_")
        names = self._names()
        validate_texts(X, TEXT_COLUMNS)
        vectorizer = self.vectorizer_
        if getattr(self, "_vectors_key", None) is None:  # once per fitted (or loaded) model
            self._vectors_key = vocabulary_fingerprint(vectorizer)
        entries = context_terms(vectorizer, self._vectors_key, X["context"].tolist())
        answers = tfidf_rows(vectorizer, self._vectors_key, answer_tokens(X["answer"].tolist()))
        columns = {}
        if "tfidf_risk" in names:
            contexts = context_matrix(entries, answers.shape[1])
            columns["tfidf_risk"] = _row_dot(answers, contexts)
        if "max_sentence_tfidf_risk" in names:
            columns["max_sentence_tfidf_risk"] = best_sentence_cosine(answers, entries)
        cosine = np.column_stack([columns[n] for n in names])
        return 1.0 - np.clip(cosine, 0.0, 1.0)

    def get_feature_names_out(self, input_features=None) -> np.ndarray:
        """Output column names (`features`)."""
        return np.asarray(self._names(), dtype=object)
