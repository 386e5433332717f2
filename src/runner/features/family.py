"""The lexical feature family over a whole frame: base φ plus ROUGE-L and token-F1 risk.

`lexical_features` is what studies and gates call. It validates the input, tokenises each
distinct context and question once (RAGTruth has six answers per context), applies the
feature functions of `runner.features.base` and `runner.features.support`, and can cache
the result on disk (`runner.features.cache`). Bump `FEATURE_VERSION` whenever any feature's
definition or the tokeniser changes: it is part of the cache key and of logged results.
"""

from __future__ import annotations

import os
from collections.abc import Callable, Sequence

import numpy as np
import pandas as pd
from pandas.api.types import infer_dtype

from runner.features import base, cache, support
from runner.features.kept import Kept
from runner.features.views import ContextView, ExampleView, TextView
from runner.text import tokenize

FEATURE_VERSION = "lexical-1"

INPUT_COLUMNS = ("question", "context", "answer")
VIEWS_KEPT = 512
"""Distinct contexts (and questions) whose views outlive one `compute` call, newest kept.

Why across calls: a routed stream scores its batches one call at a time, and traffic asks
about the same documents again and again; without this each batch re-derives the views
(tokens, LCS bitmasks: about 110 KB and 0.4 ms for a RAGTruth context) of contexts the
batch before it had. Bounded, so memory stays flat: at most `VIEWS_KEPT` of each."""

# Every feature as f(example) -> float, in the canonical column order.
FEATURES: dict[str, Callable[[ExampleView], float]] = {
    "answer_length": base.answer_length,
    "context_length": base.context_length,
    "coverage": base.coverage,
    "uncovered_fraction": base.uncovered_fraction,
    "rare_token_coverage": base.rare_token_coverage,
    "answer_context_jaccard": base.answer_context_jaccard,
    "question_answer_jaccard": base.question_answer_jaccard,
    "longest_supported_run": base.longest_supported_run,
    "best_sentence_support": base.best_sentence_support,
    "numeric_coverage": base.numeric_coverage,
    "numeric_count": base.numeric_count,
    "rouge_l_risk": support.rouge_l_risk,
    "token_f1_risk": support.token_f1_risk,
}

BASE_FEATURE_NAMES: tuple[str, ...] = tuple(list(FEATURES)[:11])
SUPPORT_FEATURE_NAMES: tuple[str, ...] = ("rouge_l_risk", "token_f1_risk")
LEXICAL_FEATURE_NAMES: tuple[str, ...] = BASE_FEATURE_NAMES + SUPPORT_FEATURE_NAMES


def validate_texts(frame: pd.DataFrame, columns: Sequence[str] = INPUT_COLUMNS) -> None:
    """Check that `frame` has the text columns and every value in them is a string.

    Parameters
    ----------
    frame : DataFrame
        The frame to check.
    columns : sequence of str
        Required text columns.

    Raises
    ------
    ValueError
        Naming the missing column, or the row label and field of the first non-string value.
    """
    if not isinstance(frame, pd.DataFrame):
        raise ValueError(f"expected a pandas DataFrame, got {type(frame).__name__}")
    missing = [c for c in columns if c not in frame.columns]
    if missing:
        raise ValueError(f"frame lacks text column(s) {missing}; has {list(frame.columns)}")
    for column in columns:
        if _all_strings(frame[column]):
            continue
        for label, value in zip(frame.index, frame[column], strict=True):
            if not isinstance(value, str):
                raise ValueError(
                    f"row {label!r}, field '{column}': expected a string, got {value!r}"
                )


def _all_strings(values: object) -> bool:
    """Whether every value is a `str`, answered in C where the column's type allows (a
    routed batch is checked at each step that reads it); False sends the caller to the
    row-by-row check, which names the first offender."""
    if not isinstance(values, pd.Series):
        return False
    if isinstance(values.dtype, pd.StringDtype):  # str or missing, nothing else
        return not values.isna().any()
    return values.dtype == object and infer_dtype(values, skipna=False) == "string"


def _check_names(features: Sequence[str] | None) -> tuple[str, ...]:
    if features is None:
        return LEXICAL_FEATURE_NAMES
    names = tuple(features)
    unknown = [n for n in names if n not in FEATURES]
    if unknown:
        raise ValueError(f"unknown lexical feature(s) {unknown}; known: {list(FEATURES)}")
    if len(set(names)) != len(names):
        raise ValueError(f"feature names repeat: {list(names)}")
    return names


def compute(
    questions: Sequence[str],
    contexts: Sequence[str],
    answers: Sequence[str],
    names: Sequence[str] = LEXICAL_FEATURE_NAMES,
) -> np.ndarray:
    """Feature matrix for aligned text sequences (no validation, no cache).

    Parameters
    ----------
    questions, contexts, answers : sequence of str
        One entry per example.
    names : sequence of str
        Features to compute (keys of `FEATURES`), in column order.

    Returns
    -------
    ndarray of float64, shape (n_examples, len(names))
    """
    functions = [FEATURES[n] for n in names]
    rows = []
    latest = _LATEST_ANSWERS
    latest.clear()
    for q_text, c_text, a_text in zip(questions, contexts, answers, strict=True):
        context = _CONTEXT_VIEWS.get(c_text, ContextView.of)
        question = _QUESTION_VIEWS.get(q_text, TextView.of)
        answer = TextView.of(a_text)
        latest[a_text] = answer.tokens
        example = ExampleView(question, answer, context)
        rows.append([f(example) for f in functions])
    return np.array(rows, dtype=np.float64).reshape(len(answers), len(functions))


_CONTEXT_VIEWS: Kept[ContextView] = Kept(VIEWS_KEPT)
_QUESTION_VIEWS: Kept[TextView] = Kept(VIEWS_KEPT)
_LATEST_ANSWERS: dict[str, list[str]] = {}
"""The answer tokens of the latest `compute` call: the TF-IDF features of the same batch
read their tokens here (`answer_tokens`) instead of tokenising the answers again. Holds
one batch, replaced by the next."""


def context_view(text: str) -> ContextView:
    """The `ContextView` of `text`: kept from an earlier call, else built and kept."""
    return _CONTEXT_VIEWS.get(text, ContextView.of)


def answer_tokens(answers: Sequence[str]) -> list[list[str]]:
    """`runner.text.tokenize` of each answer: the latest `compute` call's tokens where it
    had the answer, else tokenised here."""
    latest = _LATEST_ANSWERS
    return [tokens if (tokens := latest.get(a)) is not None else tokenize(a) for a in answers]


def lexical_features(
    frame: pd.DataFrame,
    features: Sequence[str] | None = None,
    cache_dir: str | os.PathLike[str] | None = None,
) -> pd.DataFrame:
    """The lexical features of every row of a response-level frame.

    Parameters
    ----------
    frame : DataFrame
        With string columns ``question``, ``context`` and ``answer``.
    features : sequence of str, optional
        Which features, in which column order; default `LEXICAL_FEATURE_NAMES` (the 11 base
        features then ``rouge_l_risk`` and ``token_f1_risk``).
    cache_dir : path, optional
        Directory of the on-disk cache; None computes without caching.

    Returns
    -------
    DataFrame
        Same index as `frame`, one float64 column per feature, no NaN.

    Raises
    ------
    ValueError
        On a missing text column, a non-string text (naming row and field), an unknown
        feature name or an unreadable cache file.
    """
    names = _check_names(features)
    validate_texts(frame)
    columns = [frame[c].tolist() for c in INPUT_COLUMNS]
    path = None
    if cache_dir is not None:
        key = cache.fingerprint(FEATURE_VERSION, names, zip(*columns, strict=True))
        path = cache.cache_path(cache_dir, key)
        cached = cache.load(path, names, len(frame))
        if cached is not None:
            cached.index = frame.index
            return cached
    values = compute(*columns, names=names)
    bad = ~np.isfinite(values)
    if bad.any():
        row, col = np.argwhere(bad)[0]
        raise ValueError(  # a bug in a feature, never an input problem
            f"row {frame.index[row]!r}: feature '{names[col]}' is {values[row, col]}"
        )
    result = pd.DataFrame(values, index=frame.index, columns=list(names))
    if path is not None:
        cache.save(path, result)
    return result


def with_lexical_features(frame: pd.DataFrame, cache_dir: str | None) -> pd.DataFrame:
    """The frame plus its lexical feature columns, computed once (and cached on disk).

    The frame's ``attrs`` (the loader's data set label) carry over, which ``pd.concat``
    alone would drop: splitters name the data set from it in their errors.
    """
    feats = lexical_features(frame, cache_dir=cache_dir)
    overlap = [c for c in feats.columns if c in frame.columns]
    base = frame.drop(columns=overlap)
    out = pd.concat([base, feats], axis=1)
    out.attrs = dict(frame.attrs)
    return out
