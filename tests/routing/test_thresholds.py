"""Contract thresholds: budgets reproduced on the OOF scores; the risk-controlled rule."""

from __future__ import annotations

import math

import numpy as np
import pytest

from runner.routing.thresholds import (
    budget_thresholds,
    contract_thresholds,
    decide,
    risk_controlled_accept,
)


@pytest.mark.parametrize(
    ("n", "rho", "alpha"), [(1000, 0.1, 0.5), (237, 0.15, 0.6), (50, 1.0, 0.0)]
)
def test_budget_thresholds_reproduce_the_budgets_on_the_scores_they_were_set_on(n, rho, alpha):
    risk = np.random.default_rng(n).random(n)
    t = budget_thresholds(risk, rho, alpha)
    decisions = decide(risk, t.review_at, t.accept_at)
    assert (decisions == "review").sum() == math.ceil(rho * n)
    assert (decisions == "accept").sum() == math.ceil(alpha * n)
    assert t.review_share == pytest.approx(math.ceil(rho * n) / n)
    assert t.accept_share == pytest.approx(math.ceil(alpha * n) / n)
    # The riskiest rows are reviewed, the safest accepted.
    order = np.argsort(risk)
    assert set(decisions[order[: math.ceil(alpha * n)]]) <= {"accept"}
    assert set(decisions[order[n - math.ceil(rho * n) :]]) == {"review"}


def test_review_wins_over_accept_and_the_middle_is_verified():
    assert decide(np.array([0.1, 0.5, 0.9]), 0.9, 0.1).tolist() == ["accept", "verify", "review"]
    assert decide(np.array([0.5]), 0.5, 0.5).tolist() == ["review"]


def synthetic(n: int, seed: int) -> tuple[np.ndarray, np.ndarray]:
    """risk ~ U(0, 1) and P(y = 1 | risk) = risk: accepting risk <= t has true risk t / 2."""
    rng = np.random.default_rng(seed)
    risk = rng.random(n)
    return (rng.random(n) < risk).astype(np.int64), risk


def test_risk_controlled_accept_stays_below_the_known_largest_safe_share():
    # Target 0.15: the true accepted risk t/2 reaches 0.15 at t = 0.30 (30 % accepted).
    y, risk = synthetic(20_000, 0)
    rc = risk_controlled_accept(y, risk, max_accepted_risk=0.15, delta=0.1)
    assert rc.threshold / 2 <= 0.15  # the true accepted risk of the chosen threshold
    assert 0.24 < rc.accepted_share <= 0.30  # close to the largest safe share, not timid
    assert rc.empirical_accepted_risk <= 0.15
    assert rc.valid_candidates >= 1


def test_risk_controlled_accept_fails_at_most_delta_of_the_time():
    failures = 0
    reps = 60
    for seed in range(reps):
        y, risk = synthetic(1500, 100 + seed)
        rc = risk_controlled_accept(y, risk, max_accepted_risk=0.15, delta=0.1, grid=50)
        failures += rc.threshold / 2 > 0.15
    assert failures / reps <= 0.1


def test_no_safe_share_accepts_nothing():
    y, risk = synthetic(500, 3)
    rc = risk_controlled_accept(np.ones_like(y), risk, max_accepted_risk=0.05, delta=0.1)
    assert rc.threshold == -math.inf and rc.accepted_share == 0.0
    assert rc.empirical_accepted_risk is None


def test_risk_controlled_contract_keeps_the_review_band():
    y, risk = synthetic(2000, 5)
    t, rc = contract_thresholds(y, risk, 0.1, 0.5, "risk_controlled", 0.15, 0.1)
    assert t.rule == "risk_controlled" and t.accept_at == rc.threshold
    assert t.review_share == pytest.approx(0.1)
    assert t.accept_share == pytest.approx(rc.accepted_share)
