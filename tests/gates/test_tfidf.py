"""TfidfGate: TF-IDF risks with statistics fitted on the training frame only."""

import numpy as np
import pytest
from sklearn.base import clone
from sklearn.exceptions import NotFittedError

from runner.features import TfidfSupport
from runner.gates import TfidfGate, TfidfKind


@pytest.mark.parametrize(
    ("kind", "column"), [("answer_context", 0), ("max_sentence", 1), (TfidfKind.max_sentence, 1)]
)
def test_score_is_the_tfidf_risk_fitted_on_train(train, test, kind, column):
    (train_frame, y), (test_frame, _) = train, test
    gate = TfidfGate(kind).fit(train_frame, y)
    expected = TfidfSupport().fit(train_frame).transform(test_frame)[:, column]
    risk = gate.score(test_frame)
    assert risk.dtype == np.float64
    assert risk.tolist() == expected.tolist()


def test_statistics_come_from_the_training_frame_only(train, test):
    (train_frame, _), (test_frame, _) = train, test
    gate = TfidfGate().fit(train_frame)
    held_out = test_frame.assign(answer="zzzunseen yyyunseen")
    assert "zzzunseen" not in gate.support_.vectorizer_.vocabulary_
    assert gate.score(held_out).tolist() == [1.0] * len(test_frame)


def test_needs_fit(train):
    frame, _ = train
    assert TfidfGate().needs_fit is True
    with pytest.raises(NotFittedError):
        TfidfGate().score(frame)


def test_unfaithful_rows_score_higher_on_average(train):
    frame, y = train
    risk = TfidfGate("max_sentence").fit(frame).score(frame)
    assert risk[y == 1].mean() > risk[y == 0].mean()


def test_unknown_kind_is_rejected(train):
    frame, _ = train
    with pytest.raises(ValueError, match="kind must be one of"):
        TfidfGate("cosine").fit(frame)


def test_clone_is_unfitted(train):
    frame, _ = train
    fitted = TfidfGate("max_sentence").fit(frame)
    copy = clone(fitted)
    assert copy.get_params() == {"kind": "max_sentence"}
    assert not hasattr(copy, "support_")
