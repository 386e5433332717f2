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

from runner.features.family import validate_texts
from runner.text import split_sentences, tokenize

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
        Which of `TFIDF_FEATURE_NAMES` to output, in order; default both. The sentence
        feature costs a transform of every context sentence, so a gate needing only
        ``tfidf_risk`` skips it.
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
        contexts = X["context"].tolist()
        distinct = list(dict.fromkeys(contexts))
        position = {text: i for i, text in enumerate(distinct)}
        row_context = np.fromiter(
            (position[t] for t in contexts), dtype=np.intp, count=len(contexts)
        )
        answers = vectorizer.transform(X["answer"].tolist()).tocsr()
        columns = {}
        if "tfidf_risk" in names:
            context_vectors = vectorizer.transform(distinct).tocsr()
            columns["tfidf_risk"] = _row_dot(answers, context_vectors[row_context])
        if "max_sentence_tfidf_risk" in names:
            columns["max_sentence_tfidf_risk"] = self._best_sentence_cosine(
                answers, distinct, row_context
            )
        cosine = np.column_stack([columns[n] for n in names])
        return 1.0 - np.clip(cosine, 0.0, 1.0)

    def _best_sentence_cosine(
        self, answers, distinct: list[str], row_context: np.ndarray
    ) -> np.ndarray:
        sentences = [split_sentences(text) for text in distinct]
        bounds = np.concatenate([[0], np.cumsum([len(s) for s in sentences])])
        flat = [s for pieces in sentences for s in pieces]
        sentence_vectors = self.vectorizer_.transform(flat).tocsr()
        best = np.zeros(answers.shape[0], dtype=np.float64)
        order = np.argsort(row_context, kind="stable")
        starts = np.flatnonzero(np.r_[True, np.diff(row_context[order]) != 0])
        # One sparse product per distinct context: its answers × its sentences.
        for rows in np.split(order, starts[1:]):
            c = row_context[rows[0]]
            low, high = bounds[c], bounds[c + 1]
            if high > low:
                products = answers[rows] @ sentence_vectors[low:high].T
                best[rows] = products.max(axis=1).toarray().ravel()
        return best

    def get_feature_names_out(self, input_features=None) -> np.ndarray:
        """Output column names (`features`)."""
        return np.asarray(self._names(), dtype=object)
