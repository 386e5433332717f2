"""The grouped betting test: valid for groups whose answers share one label, and it
certifies a safe set once there are enough groups."""

from __future__ import annotations

import math

import numpy as np
import pytest
from scipy.stats import binomtest

from runner.routing.guarantee.grouped_betting import betting_accept_threshold
from runner.routing.guarantee.population_check import Population


def clustered(n_groups: int, seed: int) -> Population:
    """Groups of 1-6 answers sharing one label drawn at the group's risk: the worst case
    for a test that counts answers as independent."""
    rng = np.random.default_rng(seed)
    sizes = rng.integers(1, 7, n_groups)
    group_risk = rng.uniform(0, 0.6, n_groups)
    label = rng.uniform(size=n_groups) < group_risk
    risk = np.repeat(group_risk, sizes) + rng.normal(0, 0.01, sizes.sum())
    return Population(np.repeat(label, sizes).astype(int), risk,
                      np.repeat(np.arange(n_groups).astype(str), sizes))  # fmt: skip


@pytest.mark.slow
def test_its_population_risk_exceeds_alpha_in_at_most_delta_of_the_draws():
    pop = clustered(4000, seed=1)
    rng = np.random.default_rng(2)
    violated, certified = [], []
    for _ in range(60):
        cal = pop.draw(3000, rng)
        at = betting_accept_threshold(pop.y[cal], pop.risk[cal], pop.groups[cal], 0.2, 0.1)
        certified.append(np.isfinite(at))
        _, risk = pop.accepted(at)
        violated.append(risk is not None and risk > 0.2)
    ci = binomtest(sum(violated), len(violated)).proportion_ci(method="exact")
    assert ci.low <= 0.1
    assert np.mean(certified) > 0.5  # enough groups: it certifies a set in most draws


def test_too_few_rows_certify_nothing():
    pop = clustered(40, seed=3)
    assert betting_accept_threshold(pop.y, pop.risk, pop.groups, 0.1, 0.1) == -math.inf
