"""FeatureGate: one lexical feature as a zero-shot risk."""

import numpy as np
import pytest
from sklearn.base import clone

from runner.features import lexical_features
from runner.gates import FeatureGate


@pytest.mark.parametrize("feature", ["uncovered_fraction", "rouge_l_risk", "token_f1_risk"])
def test_score_is_the_feature(train, feature):
    frame, _ = train
    gate = FeatureGate(feature)
    risk = gate.score(frame)
    assert risk.dtype == np.float64 and risk.shape == (len(frame),)
    assert risk.tolist() == lexical_features(frame)[feature].tolist()


def test_needs_no_fit_and_fit_returns_self(train):
    frame, y = train
    gate = FeatureGate("uncovered_fraction")
    assert gate.needs_fit is False
    assert gate.fit(frame, y) is gate
    assert gate.score(frame).tolist() == FeatureGate("uncovered_fraction").score(frame).tolist()


def test_unfaithful_rows_score_higher(train):
    frame, y = train
    risk = FeatureGate("uncovered_fraction").score(frame)
    assert risk[y == 1].min() > risk[y == 0].max()


def test_sign_flips_support_features(train):
    frame, _ = train
    coverage = lexical_features(frame, features=["coverage"])["coverage"].to_numpy()
    assert FeatureGate("coverage", sign=-1.0).score(frame).tolist() == (-coverage).tolist()


def test_precomputed_column_is_used(train):
    frame, _ = train
    frame = frame.assign(rouge_l_risk=np.linspace(0, 1, len(frame)))
    assert (
        FeatureGate("rouge_l_risk").score(frame).tolist() == np.linspace(0, 1, len(frame)).tolist()
    )


def test_frame_is_not_modified(train):
    frame, _ = train
    before = frame.copy()
    FeatureGate("token_f1_risk").score(frame)
    assert frame.equals(before)


def test_non_finite_precomputed_value_is_named(train):
    frame, _ = train
    frame = frame.assign(uncovered_fraction=0.5)
    frame.loc[3, "uncovered_fraction"] = np.nan
    with pytest.raises(ValueError, match=r"row 3, field 'uncovered_fraction'"):
        FeatureGate("uncovered_fraction").score(frame)


def test_bad_parameters_are_rejected(train):
    frame, _ = train
    with pytest.raises(ValueError, match="unknown lexical feature"):
        FeatureGate("tfidf_risk").score(frame)
    with pytest.raises(ValueError, match="sign"):
        FeatureGate("rouge_l_risk", sign=0.0).fit(frame)


def test_clone_keeps_parameters():
    gate = clone(FeatureGate("rouge_l_risk", sign=-1.0))
    assert gate.get_params() == {"feature": "rouge_l_risk", "sign": -1.0}


def test_repeated_index_labels_are_fine(train):
    frame, _ = train
    repeated = frame.set_axis([0] * len(frame))
    risk = FeatureGate("uncovered_fraction").score(repeated)
    assert risk.tolist() == FeatureGate("uncovered_fraction").score(frame).tolist()
