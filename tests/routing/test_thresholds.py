"""Contract thresholds: budgets reproduced on the OOF scores; the risk-controlled rule."""

from __future__ import annotations

import math

import numpy as np
import pytest
from scipy.stats import binom, binomtest

from runner.routing import RoutingConf
from runner.routing.contract.risk_control import (
    best_achievable,
    binomial_pvalue,
    calibrate_cascade,
    certify_accept,
    certify_review,
    start_rows,
)
from runner.routing.contract.thresholds import (
    budget_thresholds,
    contract_thresholds,
    decide,
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


def at_most_delta(reps: int, delta: float = 0.1) -> int:
    """Failures a procedure failing with probability exactly δ exceeds 1 % of the time."""
    return int(binom.ppf(0.99, reps, delta))


def synthetic(n: int, seed: int) -> tuple[np.ndarray, np.ndarray]:
    """risk ~ U(0, 1) and P(y = 1 | risk) = risk: accepting risk <= t has true risk t / 2."""
    rng = np.random.default_rng(seed)
    risk = rng.random(n)
    return (rng.random(n) < risk).astype(np.int64), risk


def routing(**kw) -> RoutingConf:
    return RoutingConf(**kw)


def test_certified_accept_stays_below_the_known_largest_safe_share():
    # Target 0.15: the true accepted risk t/2 reaches 0.15 at t = 0.30 (30 % accepted).
    y, risk = synthetic(20_000, 0)
    c = certify_accept(y, risk, max_risk=0.15, delta=0.1)
    assert c.threshold / 2 <= 0.15  # the true accepted risk of the chosen threshold
    assert 0.27 < c.share <= 0.30  # close to the largest safe share, not timid
    assert c.empirical <= c.upper_bound <= 0.15
    assert c.feasible and c.side == "accept"


def test_certified_accept_fails_at_most_delta_of_the_time():
    failures = 0
    reps = 100
    for seed in range(reps):
        y, risk = synthetic(1500, 100 + seed)
        c = certify_accept(y, risk, max_risk=0.15, delta=0.1)
        failures += c.threshold / 2 > 0.15
    assert failures <= at_most_delta(reps)


def test_certified_review_keeps_its_precision_and_fails_at_most_delta_of_the_time():
    # Reviewing risk >= t has true precision (1 + t) / 2: precision 0.8 is reached at t = 0.6.
    failures = 0
    for seed in range(100):
        y, risk = synthetic(1500, 300 + seed)
        c = certify_review(y, risk, min_precision=0.8, delta=0.1)
        failures += (1 + c.threshold) / 2 < 0.8
    assert failures <= at_most_delta(100)
    y, risk = synthetic(20_000, 1)
    c = certify_review(y, risk, min_precision=0.8, delta=0.1)
    assert 0.36 < c.share <= 0.40 and c.empirical <= c.upper_bound <= 0.2  # faithful share


def test_the_fixed_sequence_starts_where_a_half_risky_set_is_certified_reliably():
    # Fixed by target and delta alone; tighter targets and smaller delta start later.
    assert start_rows(0.1, 0.1) < start_rows(0.1, 0.05) < start_rows(0.05, 0.05)
    m = start_rows(0.1, 0.1)
    assert binomial_pvalue(0, m, 0.1) <= 0.1


def test_no_safe_share_accepts_nothing_and_the_tightest_target_is_the_first_that_fits():
    y, risk = synthetic(500, 3)
    c = certify_accept(np.ones_like(y), risk, max_risk=0.05, delta=0.1)
    assert c.threshold == -math.inf and c.share == 0.0 and not c.feasible
    assert c.empirical is None
    t, g = contract_thresholds(
        y, risk, routing(accept_rule="risk_controlled", max_accepted_risk=0.01)
    )
    assert not g.feasible and t.accept_share == 0.0
    best = best_achievable("accept", y, risk, 0.1)
    assert certify_accept(y, risk, best, 0.1).feasible
    assert not certify_accept(y, risk, best - 0.001, 0.1).feasible


def test_both_sides_certified_together_split_delta_and_leave_the_middle_to_verify():
    y, risk = synthetic(5000, 5)
    conf = routing(
        accept_rule="risk_controlled",
        max_accepted_risk=0.15,
        review_rule="precision_controlled",
        min_review_precision=0.8,
    )
    t, g = contract_thresholds(y, risk, conf)
    assert t.rule == "risk_controlled+precision_controlled"
    assert g.accept.delta == g.review.delta == pytest.approx(0.05)
    assert (t.accept_at, t.review_at) == (g.accept.threshold, g.review.threshold)
    assert t.accept_share == pytest.approx(g.accept.share)
    assert t.review_share == pytest.approx(g.review.share)
    assert 0 < 1 - t.accept_share - t.review_share < 0.5
    decisions = decide(risk, t.review_at, t.accept_at)
    assert y[decisions == "accept"].mean() <= 0.15
    assert y[decisions == "review"].mean() >= 0.8


def test_a_certified_side_that_would_reach_the_other_stops_at_its_largest_set_short_of_it():
    y, risk = synthetic(5000, 6)
    loose = routing(  # accepting risk <= 0.9 is safe, reviewing risk >= 0.6 too
        accept_rule="risk_controlled",
        max_accepted_risk=0.45,
        review_rule="precision_controlled",
        min_review_precision=0.8,
    )
    t, g = contract_thresholds(y, risk, loose)
    assert g.feasible and t.accept_at < t.review_at
    alone = certify_accept(y, risk, 0.45, 0.05)
    assert alone.threshold >= t.review_at  # unlimited, it would have accepted reviewed rows
    assert g.accept.certified == alone.certified  # the same test, a smaller certified set
    assert g.accept.share < alone.share and g.accept.empirical <= 0.45
    assert t.accept_share + t.review_share <= 1.0
    # a certified review side stops above a budgeted accept side
    budgeted = routing(
        accept_budget=0.9, review_rule="precision_controlled", min_review_precision=0.2
    )
    t, g = contract_thresholds(y, risk, budgeted)
    assert t.review_at > t.accept_at and g.review.feasible


def test_risk_controlled_accept_keeps_the_budgeted_review_band():
    y, risk = synthetic(2000, 5)
    t, g = contract_thresholds(
        y, risk, routing(accept_budget=0.5, accept_rule="risk_controlled", max_accepted_risk=0.15)
    )
    assert t.rule == "risk_controlled" and t.accept_at == g.accept.threshold
    assert g.review is None and g.accept.delta == 0.1
    assert t.review_share == pytest.approx(0.1)
    assert t.accept_share == pytest.approx(g.accept.share)


def cascade_data(n: int, seed: int, verifier_noise: float) -> tuple:
    """Gate risk g ~ U(0, 1); label ~ Bernoulli(z) with z = g for half the rows (the gate
    knows) and z ~ U(0, 1) independent of g for the other half (only the verifier knows)."""
    rng = np.random.default_rng(seed)
    g = rng.random(n)
    hidden = rng.random(n) < 0.5
    z = np.where(hidden, rng.random(n), g)
    y = (rng.random(n) < z).astype(np.int64)
    v = np.clip(z + verifier_noise * rng.standard_normal(n), 0, 1)
    return y, g, v


def test_a_skilled_verifier_lets_the_cascade_accept_more_at_the_same_bound():
    y, g, v = cascade_data(6000, 7, verifier_noise=0.02)
    review_at = float(np.quantile(g, 0.9))
    alone = certify_accept(y, g, 0.1, 0.1)
    cal = calibrate_cascade(y, g, v, review_at, 0.1, 0.1)
    assert cal.feasible and cal.path.startswith("verifier")
    assert cal.accepted_share > alone.share + 0.05
    assert cal.upper_bound <= 0.1 and cal.empirical_accepted_risk <= 0.1
    assert cal.verifier_share == pytest.approx(np.mean((g > cal.accept_at) & (g < review_at)))


def test_a_useless_verifier_leaves_the_gate_alone_and_sends_it_nothing_to_accept():
    y, g, _ = cascade_data(6000, 8, verifier_noise=0.0)
    noise = np.random.default_rng(9).random(len(g))
    review_at = float(np.quantile(g, 0.9))
    cal = calibrate_cascade(y, g, noise, review_at, 0.1, 0.1)
    assert cal.path == "gate alone" and cal.verifier_accept_share == 0.0
    assert cal.verifier_threshold == -math.inf
    # nothing is sent: the whole band stays verify, review is the review rule's rows
    band = (g > cal.accept_at) & (g < review_at)
    assert band.mean() > 0.5 and cal.verifier_share == 0.0
    assert cal.verify_share == pytest.approx(band.mean())
    assert cal.review_share == pytest.approx(np.mean(g >= review_at))
    assert cal.accepted_share == pytest.approx(np.mean(g <= cal.accept_at))


def test_the_calibrated_shares_are_the_final_ones_and_a_rejected_band_row_stays_verify():
    y, g, v = cascade_data(6000, 7, verifier_noise=0.02)
    review_at = float(np.quantile(g, 0.9))
    cal = calibrate_cascade(y, g, v, review_at, 0.1, 0.1)
    assert cal.path.startswith("verifier")
    band = (g > cal.accept_at) & (g < review_at)
    verifier_accepts = band & (v < cal.verifier_threshold)
    assert 0 < verifier_accepts.sum() < band.sum()
    assert cal.verifier_share == pytest.approx(band.mean())
    assert cal.verify_share == pytest.approx(np.mean(band & ~verifier_accepts))
    assert cal.review_share == pytest.approx(np.mean(g >= review_at))
    total = cal.accepted_share + cal.verify_share + cal.review_share
    assert total == pytest.approx(1.0)
    assert cal.accepted_share == pytest.approx(cal.gate_accept_share + cal.verifier_accept_share)


def test_each_calibrated_share_carries_an_exact_interval_wider_for_grouped_rows():
    y, g, v = cascade_data(2000, 11, verifier_noise=0.02)
    review_at = float(np.quantile(g, 0.9))
    independent = calibrate_cascade(y, g, v, review_at, 0.1, 0.1)
    keys = ("accepted_share", "verify_share", "review_share", "verifier_share")
    assert set(independent.share_intervals) == set(keys)
    for key in keys:
        low, high = independent.share_intervals[key]
        assert low <= getattr(independent, key) <= high
        # whole counts: the exact binomial (Clopper-Pearson) 95 % interval
        k = round(getattr(independent, key) * g.size)
        ci = binomtest(k, g.size).proportion_ci(confidence_level=0.95, method="exact")
        assert (low, high) == pytest.approx((ci.low, ci.high))
    # five answers to each context, sorted by gate risk so a context's rows share a band:
    # their shares vary by context, and the interval counts them by their effective number
    order = np.argsort(g)
    groups = np.empty(g.size, dtype=int)
    groups[order] = np.arange(g.size) // 5
    grouped = calibrate_cascade(y, g, v, review_at, 0.1, 0.1, groups=groups)
    low, high = grouped.share_intervals["review_share"]
    wide_low, wide_high = independent.share_intervals["review_share"]
    assert high - low > wide_high - wide_low
    assert grouped.to_dict()["share_intervals"]["review_share"] == [low, high]  # YAML-friendly


def test_the_calibrated_cascade_fails_at_most_delta_of_the_time():
    failures = 0
    for seed in range(60):
        y, g, v = cascade_data(3000, 500 + seed, verifier_noise=0.05)
        cal = calibrate_cascade(y, g, v, float(np.quantile(g, 0.9)), 0.1, 0.1)
        # the population accepted risk of the chosen rule, on fresh rows of the same kind
        yf, gf, vf = cascade_data(200_000, 10_000 + seed, verifier_noise=0.05)
        acc = (gf <= cal.accept_at) | ((gf < cal.review_at) & (vf < cal.verifier_threshold))
        failures += bool(acc.any()) and yf[acc].mean() > 0.1
    assert failures <= at_most_delta(60)
