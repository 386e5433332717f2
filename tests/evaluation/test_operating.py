"""Operating points: Prec_ρ over the top ⌈ρn⌉, Risk_α over the lowest ⌈αn⌉, fair ties."""

from __future__ import annotations

import itertools

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from runner.evaluation import operating as op
from runner.evaluation.metrics import indices_to_weights

TOL = 1e-12


def test_review_precision_counts_positives_in_the_top_ceil_rho_n():
    # Scores 10..1; the three riskiest rows have labels 1, 0, 1.
    y = np.array([1, 0, 1, 0, 0, 1, 0, 0, 0, 0])
    s = np.arange(10, 0, -1, dtype=float)
    assert op.review_precision(y, s, 0.10) == 1.0  # ⌈1.0⌉ = 1 row
    assert op.review_precision(y, s, 0.25) == pytest.approx(2 / 3)  # ⌈2.5⌉ = 3 rows
    assert op.review_precision(y, s, 0.30) == pytest.approx(2 / 3)


def test_accepted_risk_counts_positives_in_the_lowest_ceil_alpha_n():
    y = np.array([1, 0, 1, 0, 0, 1, 0, 0, 0, 1])
    s = np.arange(10, 0, -1, dtype=float)  # row 9 is the safest, and it is positive
    assert op.accepted_risk(y, s, 0.10) == 1.0
    assert op.accepted_risk(y, s, 0.50) == pytest.approx(2 / 5)  # rows 5..9: 1, 0, 0, 0, 1
    assert op.accepted_risk(y, s, 0.55) == pytest.approx(2 / 6)  # ⌈5.5⌉ = 6 rows, rows 4..9


def test_tied_block_at_the_cut_off_counts_its_positive_rate():
    # Top 2 of 4: row 0 (score 0.9, positive) plus one of the two rows tied at 0.5, whose
    # positive rate is 1/2: expected positives 1 + 1/2 over 2 reviewed rows.
    y, s = [1, 0, 1, 0], [0.9, 0.5, 0.5, 0.1]
    assert op.review_precision(y, s, 0.50) == pytest.approx(0.75, abs=TOL)
    assert op.review_precision(y, s, 0.25) == 1.0
    # Lowest 2: row 3 (negative) plus half of the tied block: (0 + 1/2) / 2.
    assert op.accepted_risk(y, s, 0.50) == pytest.approx(0.25, abs=TOL)


def test_where_positives_sit_inside_a_tie_does_not_matter():
    s = [0.7, 0.7, 0.7, 0.2]
    assert op.review_precision([1, 0, 0, 0], s, 0.25) == op.review_precision([0, 0, 1, 0], s, 0.25)
    assert op.review_precision([1, 0, 0, 0], s, 0.25) == pytest.approx(1 / 3, abs=TOL)


def test_constant_gate_scores_the_base_rate_everywhere():
    y = np.array([1, 0, 0, 1, 0, 0, 0, 1, 0, 0, 0, 0])
    s = np.zeros(y.size)
    np.testing.assert_allclose(op.review_precision_grid(y, s), y.mean(), atol=TOL)
    np.testing.assert_allclose(op.accepted_risk_grid(y, s), y.mean(), atol=TOL)


def test_selecting_everything_gives_the_base_rate():
    y = np.array([1, 0, 0, 1, 1])
    s = np.array([0.1, 0.4, 0.2, 0.9, 0.3])
    assert op.review_precision(y, s, 1.0) == pytest.approx(0.6, abs=TOL)
    assert op.accepted_risk(y, s, 1.0) == pytest.approx(0.6, abs=TOL)


def test_ceil_absorbs_floating_point_error():
    # 0.07 * 100 == 7.000000000000001 in binary floating point; the count must be 7.
    y = np.zeros(100)
    y[7] = 1  # the 8th riskiest row
    s = np.arange(100, 0, -1, dtype=float)
    assert op.review_precision(y, s, 0.07) == 0.0
    assert op.review_precision(y, s, 0.08) == pytest.approx(1 / 8)


def _brute_force(y, s, fraction, *, top):
    """Average over every ordering of the rows, each ranked by score (ties by that order)."""
    y, s = np.asarray(y, float), np.asarray(s, float)
    n = y.size
    m = int(np.ceil(np.round(fraction * n, 9)))
    values = []
    for perm in itertools.permutations(range(n)):
        perm = np.array(perm)
        key = -s[perm] if top else s[perm]
        ranked = perm[np.argsort(key, kind="stable")]
        values.append(y[ranked[:m]].mean())
    return float(np.mean(values))


@settings(max_examples=60, deadline=None)
@given(
    st.lists(st.tuples(st.integers(0, 1), st.integers(0, 2)), min_size=1, max_size=6),
    st.sampled_from([0.05, 0.2, 0.34, 0.5, 0.75, 0.9, 1.0]),
)
def test_tie_rule_is_the_expectation_over_all_tie_orderings(rows, fraction):
    y = [r[0] for r in rows]
    s = [r[1] / 2 for r in rows]
    expected_top = _brute_force(y, s, fraction, top=True)
    expected_low = _brute_force(y, s, fraction, top=False)
    assert op.review_precision(y, s, fraction) == pytest.approx(expected_top, abs=1e-9)
    assert op.accepted_risk(y, s, fraction) == pytest.approx(expected_low, abs=1e-9)


def test_result_does_not_depend_on_row_order():
    rng = np.random.default_rng(5)
    y = rng.integers(0, 2, 300)
    s = rng.integers(0, 6, 300).astype(float)
    perm = rng.permutation(300)
    np.testing.assert_allclose(
        op.review_precision_grid(y, s), op.review_precision_grid(y[perm], s[perm]), atol=TOL
    )
    np.testing.assert_allclose(
        op.accepted_risk_grid(y, s), op.accepted_risk_grid(y[perm], s[perm]), atol=TOL
    )


@settings(max_examples=100, deadline=None)
@given(
    st.lists(st.tuples(st.integers(0, 1), st.integers(0, 3)), min_size=1, max_size=30),
    st.integers(0, 2**32 - 1),
)
def test_weighted_value_equals_value_on_explicitly_duplicated_sample(rows, seed):
    y = np.array([r[0] for r in rows])
    s = np.array([r[1] for r in rows], dtype=float)
    idx = np.random.default_rng(seed).integers(0, y.size, size=(4, y.size))
    weights = indices_to_weights(idx, y.size)
    prec = op.review_precision_grid_batched(y, s, weights, op.RHO_GRID)
    risk = op.accepted_risk_grid_batched(y, s, weights, op.ALPHA_GRID)
    for b in range(4):
        np.testing.assert_allclose(
            prec[b], op.review_precision_grid(y[idx[b]], s[idx[b]], op.RHO_GRID), atol=1e-9
        )
        np.testing.assert_allclose(
            risk[b], op.accepted_risk_grid(y[idx[b]], s[idx[b]], op.ALPHA_GRID), atol=1e-9
        )


def test_single_point_batched_forms_match_grid_columns():
    rng = np.random.default_rng(9)
    y = rng.integers(0, 2, 50)
    s = rng.normal(size=50)
    w = indices_to_weights(rng.integers(0, 50, size=(5, 50)), 50)
    np.testing.assert_array_equal(
        op.review_precision_batched(y, s, w, 0.1),
        op.review_precision_grid_batched(y, s, w, [0.1])[:, 0],
    )
    np.testing.assert_array_equal(
        op.accepted_risk_batched(y, s, w, 0.5), op.accepted_risk_grid_batched(y, s, w, [0.5])[:, 0]
    )


def test_default_grids_sweep_the_protocol_ranges():
    np.testing.assert_allclose(op.RHO_GRID[[0, -1]], [0.05, 0.30])
    np.testing.assert_allclose(op.ALPHA_GRID[[0, -1]], [0.50, 0.90])
    assert op.RHO_GRID.size == 26 and op.ALPHA_GRID.size == 41
    y = np.array([1, 0, 1, 0, 0])
    assert op.review_precision_grid(y, np.arange(5.0)).shape == (26,)
    assert op.accepted_risk_grid(y, np.arange(5.0)).shape == (41,)


@pytest.mark.parametrize("bad", [0.0, -0.1, 1.5, float("nan")])
def test_fraction_outside_zero_one_raises(bad):
    with pytest.raises(ValueError, match=r"rho must lie in \(0, 1\]"):
        op.review_precision([0, 1], [0.1, 0.2], bad)
    with pytest.raises(ValueError, match=r"alpha must lie in \(0, 1\]"):
        op.accepted_risk([0, 1], [0.1, 0.2], bad)


def test_zero_weight_resample_raises():
    with pytest.raises(ValueError, match="zero total weight"):
        op.review_precision_batched([0, 1], [0.1, 0.2], np.zeros((1, 2)), 0.5)
