"""AUROC and AP: scikit-learn's definitions, ties included; batched = weighted = duplicated."""

from __future__ import annotations

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from sklearn.metrics import average_precision_score, roc_auc_score

from runner.evaluation.metrics import (
    auroc,
    auroc_batched,
    average_precision,
    average_precision_batched,
    indices_to_weights,
)

TOL = 1e-12


@st.composite
def labelled_scores(draw, max_n: int = 40, levels: int = 4):
    """Labels with both classes and scores from a few levels, so ties are common."""
    n = draw(st.integers(2, max_n))
    y = draw(st.lists(st.integers(0, 1), min_size=n, max_size=n))
    if len(set(y)) < 2:
        y[0], y[1] = 0, 1
    s = draw(st.lists(st.integers(0, levels - 1), min_size=n, max_size=n))
    return np.array(y), np.array(s, dtype=float) / levels


def test_auroc_hand_example_with_a_tie_counts_the_tied_pair_half():
    # positives {0.5, 0.9} vs negatives {0.1, 0.5}: 1 + 0.5 + 1 + 1 wins of 4 pairs.
    y, s = [0, 0, 1, 1], [0.1, 0.5, 0.5, 0.9]
    assert auroc(y, s) == pytest.approx(3.5 / 4, abs=TOL)


def test_ap_hand_example_treats_tied_scores_as_one_threshold():
    # threshold 0.9: precision 1, recall 1/2; threshold 0.5 (two rows): precision 2/3, recall 1.
    y, s = [0, 0, 1, 1], [0.1, 0.5, 0.5, 0.9]
    assert average_precision(y, s) == pytest.approx(0.5 * 1 + 0.5 * 2 / 3, abs=TOL)


def test_constant_scores_give_auroc_one_half_and_ap_the_base_rate():
    y = np.array([1, 0, 0, 1, 0])
    s = np.full(5, 0.3)
    assert auroc(y, s) == 0.5
    assert average_precision(y, s) == pytest.approx(0.4, abs=TOL)


def test_perfect_ranking_gives_exactly_one():
    y = np.array([0, 0, 1, 1, 1])
    s = np.array([0.0, 0.1, 0.7, 0.8, 0.9])
    assert auroc(y, s) == 1.0
    assert average_precision(y, s) == 1.0


@settings(max_examples=300, deadline=None)
@given(labelled_scores())
def test_auroc_and_ap_match_sklearn_with_ties(data):
    y, s = data
    assert auroc(y, s) == pytest.approx(roc_auc_score(y, s), abs=TOL)
    assert average_precision(y, s) == pytest.approx(average_precision_score(y, s), abs=TOL)


@settings(max_examples=120, deadline=None)
@given(labelled_scores(max_n=25), st.integers(0, 2**32 - 1))
def test_weighted_metric_equals_sklearn_on_explicitly_duplicated_sample(data, seed):
    y, s = data
    rng = np.random.default_rng(seed)
    idx = rng.integers(0, y.size, size=(6, y.size))
    weights = indices_to_weights(idx, y.size)
    keep = [b for b in range(6) if len(set(y[idx[b]])) == 2]
    if not keep:
        idx[0, :2] = [int(np.argmin(y)), int(np.argmax(y))]
        weights = indices_to_weights(idx, y.size)
        keep = [0]
    got_auc = auroc_batched(y, s, weights[keep])
    got_ap = average_precision_batched(y, s, weights[keep])
    for j, b in enumerate(keep):
        dup_y, dup_s = y[idx[b]], s[idx[b]]
        assert got_auc[j] == pytest.approx(roc_auc_score(dup_y, dup_s), abs=TOL)
        assert got_ap[j] == pytest.approx(average_precision_score(dup_y, dup_s), abs=TOL)
        # sklearn's own sample_weight path agrees too.
        w = weights[b]
        assert got_auc[j] == pytest.approx(roc_auc_score(y, s, sample_weight=w), abs=TOL)


def test_batched_with_unit_weights_equals_single_value():
    rng = np.random.default_rng(3)
    y = rng.integers(0, 2, 200)
    s = rng.integers(0, 10, 200) / 10
    ones = np.ones((3, 200))
    np.testing.assert_array_equal(auroc_batched(y, s, ones), np.full(3, auroc(y, s)))
    np.testing.assert_array_equal(
        average_precision_batched(y, s, ones), np.full(3, average_precision(y, s))
    )


def test_zero_weight_rows_are_left_out():
    y = np.array([0, 1, 0, 1])
    s = np.array([0.2, 0.9, 0.95, 0.1])
    weights = np.array([[1.0, 1.0, 0.0, 0.0]])
    assert auroc_batched(y, s, weights)[0] == 1.0
    assert average_precision_batched(y, s, weights)[0] == 1.0


@pytest.mark.parametrize("fn", [auroc, average_precision])
@pytest.mark.parametrize("y", [[1, 1, 1], [0, 0, 0]])
def test_one_class_raises_a_clear_value_error(fn, y):
    with pytest.raises(ValueError, match="one class"):
        fn(y, [0.1, 0.2, 0.3])


@pytest.mark.parametrize("fn", [auroc_batched, average_precision_batched])
def test_batched_raises_when_a_resample_holds_one_class(fn):
    y = np.array([0, 1, 0, 1])
    weights = np.array([[1.0, 1, 1, 1], [2.0, 0, 2, 0]])
    with pytest.raises(ValueError, match="resample rows 1"):
        fn(y, np.arange(4.0), weights)


@pytest.mark.parametrize(
    ("y", "s", "match"),
    [
        ([0, 2, 1], [0.1, 0.2, 0.3], "0/1 labels"),
        ([0, 1, 1], [0.1, np.nan, 0.3], "finite"),
        ([0, 1, 1], [0.1, 0.2], "3 entries"),
        (["a", "b"], [0.1, 0.2], "0/1 labels"),
        ([], [], "empty"),
    ],
)
def test_bad_inputs_raise(y, s, match):
    with pytest.raises(ValueError, match=match):
        auroc(y, s)


def test_bad_weights_raise():
    y, s = np.array([0, 1]), np.array([0.1, 0.2])
    with pytest.raises(ValueError, match=r"\(B, 2\)"):
        auroc_batched(y, s, np.ones(2))
    with pytest.raises(ValueError, match="non-negative"):
        auroc_batched(y, s, np.array([[1.0, -1.0]]))


def test_indices_to_weights_counts_multiplicities():
    w = indices_to_weights(np.array([[0, 0, 2], [1, 2, 2]]), 3)
    np.testing.assert_array_equal(w, [[2, 0, 1], [0, 1, 2]])
    with pytest.raises(ValueError, match="lie in"):
        indices_to_weights(np.array([[0, 3]]), 3)
