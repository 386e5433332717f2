"""Aggregation variants: additive, floors, multiplicative, max-based."""

from __future__ import annotations

import numpy as np
import pytest

from runner.hri import aggregation as agg

W = {"F": 0.5, "U": 0.3, "H": 0.2}


def test_additive_is_the_capped_weighted_sum():
    assert agg.additive({"F": 0.4, "U": 1.0, "H": 0.0}, W) == pytest.approx(0.5)
    assert agg.additive({"F": 1.0, "U": 1.0, "H": 1.0}, W) == pytest.approx(1.0)


def test_floors_raise_but_never_lower_the_score():
    assert agg.with_floors(0.2, [0.7, 0.5]) == 0.7
    assert agg.with_floors(0.8, [0.7]) == 0.8
    assert agg.with_floors(0.3, []) == 0.3


def test_multiplicative_is_one_minus_the_product_of_complements():
    s = {"F": 0.4, "U": 1.0, "H": 0.5}
    # 1 - (1 - 0.2)(1 - 0.3)(1 - 0.1) = 1 - 0.504
    assert agg.multiplicative(s, W) == pytest.approx(0.496)


def test_max_variants():
    assert agg.max_dimension({"F": 0.1, "U": 0.6, "H": 0.0}) == 0.6
    assert agg.max_claim([{"F": 0.0, "U": 0.5}, {"F": 1.0, "U": 0.0}]) == 1.0
    assert agg.max_claim([]) == 0.0


def test_multiplicative_never_exceeds_additive_and_all_stay_in_unit_interval():
    rng = np.random.default_rng(0)
    for _ in range(200):
        w = rng.dirichlet(np.ones(3))
        weights = dict(zip("FUH", w, strict=True))
        scores = dict(zip("FUH", rng.uniform(size=3), strict=True))
        add = agg.additive(scores, weights)
        mult = agg.multiplicative(scores, weights)
        assert 0 <= mult <= add + 1e-12 <= 1 + 1e-12
        assert max(weights[k] * scores[k] for k in weights) <= mult + 1e-12
