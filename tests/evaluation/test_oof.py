"""The out-of-fold loop: fresh clones fitted on training rows only, every fold leak-checked."""

from __future__ import annotations

import numpy as np
import pandas as pd
import pytest
from sklearn.base import BaseEstimator
from sklearn.feature_extraction.text import TfidfVectorizer
from sklearn.linear_model import LogisticRegression
from sklearn.pipeline import make_pipeline
from sklearn.preprocessing import StandardScaler

from runner.evaluation.oof import out_of_fold
from runner.evaluation.splits import Fold, GroupedKFold, GroupLeakError, TargetAdaptation


class SeenIdsGate(BaseEstimator):
    """Risk = training prevalence; remembers the example ids it was fitted on."""

    needs_fit = True

    def fit(self, frame, y):
        self.seen_ids_ = set(frame["example_id"])
        self.prevalence_ = float(np.mean(y))
        return self

    def score(self, frame):
        return np.full(len(frame), self.prevalence_)


class TfidfGate(BaseEstimator):
    """Risk = 1 − total TF-IDF mass of the answer under the training-fold vocabulary."""

    needs_fit = True

    def fit(self, frame, y):
        self.vectorizer_ = TfidfVectorizer().fit(frame["answer"])
        return self

    def score(self, frame):
        return 1.0 - np.asarray(self.vectorizer_.transform(frame["answer"]).sum(axis=1)).ravel()


class ScaledLogitGate(BaseEstimator):
    """Standardised logistic regression on two numeric features."""

    needs_fit = True

    def __init__(self, features=("x1", "x2")):
        self.features = features

    def fit(self, frame, y):
        cols = list(self.features)
        self.model_ = make_pipeline(StandardScaler(), LogisticRegression()).fit(frame[cols], y)
        return self

    def score(self, frame):
        return self.model_.predict_proba(frame[list(self.features)])[:, 1]


class ZeroShotGate(BaseEstimator):
    """Needs no fit; counts how often it is asked to score."""

    needs_fit = False

    def __init__(self):
        self.calls = []

    def fit(self, frame, y):  # pragma: no cover - must never be called
        raise AssertionError("a zero-shot gate must not be fitted")

    def score(self, frame):
        self.calls.append(len(frame))
        return frame["x1"].to_numpy() * 2.0


def _run(frame, gates, splitter=None):
    fits = []
    oof = out_of_fold(
        gates,
        frame,
        splitter or GroupedKFold(n_splits=5, seed=13),
        on_fit=lambda fold, name, gate: fits.append((fold, name, gate)),
        progress=False,
    )
    return oof, fits


def test_output_has_one_row_per_example_in_frame_order(frame):
    oof, _ = _run(frame, {"seen": SeenIdsGate(), "logit": ScaledLogitGate()})
    assert list(oof.columns) == ["example_id", "fold", "seen", "logit"]
    assert list(oof["example_id"]) == list(frame["example_id"])
    assert set(oof["fold"]) == {0, 1, 2, 3, 4}
    assert np.isfinite(oof[["seen", "logit"]].to_numpy()).all()


def test_fits_see_only_training_rows_and_no_group_crosses_folds(frame):
    oof, fits = _run(frame, {"seen": SeenIdsGate()})
    assert len(fits) == 5
    group_of = dict(zip(frame["example_id"], frame["group_id"], strict=True))
    for fold, _, gate in fits:
        test_ids = set(oof.loc[oof["fold"] == fold.index, "example_id"])
        assert gate.seen_ids_.isdisjoint(test_ids)
        assert gate.seen_ids_ | test_ids == set(frame["example_id"])
        assert {group_of[i] for i in gate.seen_ids_}.isdisjoint({group_of[i] for i in test_ids})
        # The risk the fold's rows got is the prevalence of *its* training rows.
        train_prev = frame["label"].iloc[fold.train_idx].mean()
        np.testing.assert_allclose(oof.loc[oof["fold"] == fold.index, "seen"], train_prev)
    assert (
        frame.groupby("group_id")["example_id"]
        .apply(lambda ids: oof.set_index("example_id").loc[ids, "fold"].nunique())
        .eq(1)
        .all()
    )


def test_each_fold_fits_a_fresh_clone(frame):
    prototype = SeenIdsGate()
    _, fits = _run(frame, {"seen": prototype})
    assert not hasattr(prototype, "seen_ids_")
    assert len({id(gate) for _, _, gate in fits}) == 5


def test_a_token_only_in_a_test_fold_is_absent_from_that_folds_tfidf_vocabulary(frame):
    f = frame.copy()
    target = f["group_id"] == "g007"
    f.loc[target, "answer"] = f.loc[target, "answer"] + " zzqleaktoken"
    oof, fits = _run(f, {"tfidf": TfidfGate()})
    held_out_in = set(oof.loc[f["group_id"].to_numpy() == "g007", "fold"])
    assert len(held_out_in) == 1
    for fold, _, gate in fits:
        in_vocab = "zzqleaktoken" in gate.vectorizer_.vocabulary_
        assert in_vocab == (fold.index not in held_out_in)


def test_scalers_are_fitted_on_training_rows_only(frame):
    _, fits = _run(frame, {"logit": ScaledLogitGate()})
    for fold, _, gate in fits:
        scaler = gate.model_[0]
        train = frame.iloc[fold.train_idx][["x1", "x2"]]
        np.testing.assert_allclose(scaler.mean_, train.mean().to_numpy(), rtol=1e-12)
        assert not np.allclose(scaler.mean_, frame[["x1", "x2"]].mean().to_numpy(), rtol=1e-9)


def test_zero_shot_gate_scores_once_on_the_whole_frame_and_is_split_by_fold(frame):
    zero = ZeroShotGate()
    oof, fits = _run(frame, {"zero": zero, "seen": SeenIdsGate()})
    assert zero.calls == [len(frame)]
    assert [name for _, name, _ in fits] == ["seen"] * 5
    np.testing.assert_allclose(oof["zero"], frame["x1"].to_numpy() * 2.0)


class LeakySplitter:
    """Puts one row of group g000 in test while its other rows stay in train."""

    is_partition = False

    def folds(self, frame):
        test = np.array([0])
        yield Fold(0, "leaky", np.arange(1, len(frame)), test)


def test_a_leaking_fold_stops_the_loop_before_any_fit(frame):
    with pytest.raises(GroupLeakError, match="'g000'"):
        _run(frame, {"seen": SeenIdsGate()}, LeakySplitter())


class OverlappingSplitter:
    """Claims to be a partition but tests group g000 twice."""

    is_partition = True

    def folds(self, frame):
        g0 = np.flatnonzero(frame["group_id"] == "g000")
        rest = np.setdiff1d(np.arange(len(frame)), g0)
        yield Fold(0, "0", rest, g0)
        yield Fold(1, "1", rest, g0)


def test_a_partition_splitter_must_test_every_row_exactly_once(frame):
    with pytest.raises(ValueError, match="not exactly once"):
        _run(frame, {"seen": SeenIdsGate()}, OverlappingSplitter())


def test_non_partition_splitter_returns_one_row_per_fold_and_test_row():
    f = pd.DataFrame(
        {
            "example_id": [f"e{i}" for i in range(100)],
            "group_id": [f"e{i}" for i in range(100)],
            "source": ["a"] * 50 + ["b"] * 50,
            "label": [0, 1] * 50,
            "x1": np.linspace(0, 1, 100),
            "x2": np.linspace(1, 0, 100) ** 2,
        }
    )
    ta = TargetAdaptation(ks=(10,), n_seeds=2)
    oof, fits = _run(f, {"logit": ScaledLogitGate()}, ta)
    assert len(fits) == 4
    assert len(oof) == 4 * 10  # each run scores its source's 10-row fixed test set
    for fold, _, gate in fits:
        assert len(gate.model_[0].mean_) == 2
        assert fold.train_idx.size == 10


class NaNGate(ScaledLogitGate):
    def score(self, frame):
        out = super().score(frame)
        out[0] = np.nan
        return out


@pytest.mark.parametrize(
    ("gates", "match"),
    [
        ({}, "gates is empty"),
        ({"fold": SeenIdsGate()}, "clash"),
        ({"nan": NaNGate()}, "non-finite"),
    ],
)
def test_bad_gates_raise(frame, gates, match):
    with pytest.raises(ValueError, match=match):
        _run(frame, gates)


def test_missing_columns_raise(frame):
    with pytest.raises(ValueError, match="missing column 'group_id'"):
        _run(frame.drop(columns="group_id"), {"seen": SeenIdsGate()})
