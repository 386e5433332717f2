"""Threshold rules and curves for calibrated risk scores (`runner.evaluation.operating`,
`runner.evaluation.metrics`), on resamples from `resample_weights`."""

from __future__ import annotations

import math

import numpy as np
import pytest

from runner.evaluation import metrics
from runner.evaluation import operating as op
from runner.evaluation.bootstrap import resample_weights
from runner.evaluation.intervals import percentile_interval

Y = np.array([1, 1, 0, 0], dtype=float)
S = np.array([0.9, 0.8, 0.7, 0.1])
ONES = np.ones((1, 4))


def test_resample_weights_keep_stratum_sizes_and_both_classes():
    y = np.array([1, 0, 1, 0, 0, 1, 0, 1, 1, 0])
    strata = np.array(list("aaaabbbbbb"))
    w, _ = resample_weights(y, 300, 7, strata=strata)
    assert w.shape == (300, 10)
    assert (w[:, :4].sum(axis=1) == 4).all() and (w[:, 4:].sum(axis=1) == 6).all()
    for rows in (slice(0, 4), slice(4, 10), slice(0, 10)):
        pos = w[:, rows] @ y[rows]
        assert ((pos > 0) & (pos < w[:, rows].sum(axis=1))).all()


def test_resample_weights_are_deterministic_per_seed():
    y = np.array([1, 0, 1, 0, 1, 0])
    a, _ = resample_weights(y, 50, [13, 0])
    b, _ = resample_weights(y, 50, [13, 0])
    c, _ = resample_weights(y, 50, [13, 1])
    assert (a == b).all() and not (a == c).all()


def test_bootstrap_rejects_a_one_class_stratum():
    with pytest.raises(ValueError, match="one class"):
        resample_weights(np.array([1, 1, 0, 0]), 10, 0, strata=np.array(list("aabb")))


def test_cost_optimal_threshold_by_hand():
    # Costs per response with cost_missed 5, cost_review 1:
    # nothing 2.5; >= 0.9: 1.25; >= 0.8: 0; >= 0.7: 0.25; >= 0.1: 0.5.
    t, c = op.cost_optimal_threshold(Y, S, ONES, 5.0, 1.0)
    assert t[0] == 0.8 and c[0] == 0.0


def test_cost_ties_choose_the_highest_threshold():
    y = np.array([1, 0, 1, 0], dtype=float)
    s = np.array([0.9, 0.8, 0.7, 0.1])
    # cost_missed = cost_review = 1: nothing 0.5, >=0.9 0.25, >=0.8 0.5, >=0.7 0.25, >=0.1 0.5
    t, c = op.cost_optimal_threshold(y, s, np.ones((1, 4)), 1.0, 1.0)
    assert t[0] == 0.9 and c[0] == pytest.approx(0.25)


def test_flagging_nothing_can_be_optimal():
    y = np.array([1, 0, 0, 0, 0], dtype=float)
    s = np.array([0.1, 0.5, 0.6, 0.7, 0.8])
    t, c = op.cost_optimal_threshold(y, s, np.ones((1, 5)), 1.0, 1.0)
    assert math.isinf(t[0]) and c[0] == pytest.approx(0.2)


def test_cost_with_resample_weights_equals_cost_on_the_duplicated_sample():
    w = np.array([[2.0, 0.0, 1.0, 1.0]])
    t, c = op.cost_optimal_threshold(Y, S, w, 5.0, 1.0)
    t2, c2 = op.cost_optimal_threshold(
        np.array([1, 1, 0, 0.0]), np.array([0.9, 0.9, 0.7, 0.1]), ONES, 5.0, 1.0
    )
    assert t[0] == t2[0] == 0.9 and c[0] == c2[0]


def test_recall_and_precision_targets():
    y = np.array([1, 0, 1, 1, 0, 1], dtype=float)
    s = np.array([0.9, 0.8, 0.7, 0.6, 0.5, 0.4])
    assert op.recall_threshold(y, s, np.ones((1, 6)), 0.5)[0] == 0.7  # 2 of 4
    assert op.recall_threshold(y, s, np.ones((1, 6)), 1.0)[0] == 0.4
    # precision at >= 0.9: 1; >= 0.6: 3/4; >= 0.4: 4/6. Lowest threshold with >= 0.75: 0.6.
    assert op.precision_threshold(y, s, np.ones((1, 6)), 0.75)[0] == 0.6
    assert op.precision_threshold(y, s, np.ones((1, 6)), 1.0)[0] == 0.9
    y0 = np.array([0, 1, 0, 1], dtype=float)
    assert math.isinf(op.precision_threshold(y0, S, ONES, 0.9)[0])


def test_operating_point_by_hand():
    flagged = np.array([True, False, True, False])
    point = op.flag_rule_point(Y, flagged, ONES, 5.0, 1.0)
    assert point["precision"][0] == 0.5 and point["recall"][0] == 0.5
    assert point["flagged"][0] == 0.5 and point["cost"][0] == pytest.approx((5 + 1) / 4)
    none = op.flag_rule_point(Y, np.zeros(4, dtype=bool), ONES, 5.0, 1.0)
    assert math.isnan(none["precision"][0]) and none["recall"][0] == 0.0


def test_curves_span_the_unit_square():
    fpr, tpr = metrics.roc_points(Y, S)
    assert (fpr[0], tpr[0]) == (0.0, 0.0) and (fpr[-1], tpr[-1]) == (1.0, 1.0)
    recall, precision = metrics.pr_points(Y, S)
    assert recall[0] == 0.0 and recall[-1] == 1.0
    assert precision[0] == 1.0  # scikit-learn's (recall 0, precision 1) end point
    assert precision[-1] == 0.5  # flag everything: the base rate
    assert (np.diff(recall) >= 0).all()


def test_percentile_interval_and_bad_input():
    assert percentile_interval(np.arange(101.0), 0.9) == pytest.approx((5.0, 95.0))
    with pytest.raises(ValueError, match="finite"):
        percentile_interval(np.array([1.0, np.inf]), 0.9)
    with pytest.raises(ValueError, match="costs must be > 0"):
        op.cost_optimal_threshold(Y, S, ONES, 0.0, 1.0)
    with pytest.raises(ValueError, match="0/1"):
        op.recall_threshold(np.array([2.0, 0, 1, 0]), S, ONES, 0.5)
