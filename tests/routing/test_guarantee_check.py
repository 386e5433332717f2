"""Calibrate-then-route splits: groups stay whole, the references, the bound on fresh rows."""

from __future__ import annotations

import numpy as np
import pytest
from scipy.stats import binom

from runner.routing import RoutingConf
from runner.routing.guarantee.guarantee_check import (
    group_split,
    hindsight_share,
    oracle_fixed,
    outcomes_frame,
    route_split,
)


def rows(n_groups: int, seed: int, shift: float = 0.0) -> dict:
    """Groups of 4 rows; risk ~ U(0, 1) (+ `shift`), P(hallucinated | risk) = risk / 2
    (clipped), so accepting risk <= t has accepted risk about t / 4."""
    rng = np.random.default_rng(seed)
    group = np.repeat([f"{seed}:{g}" for g in range(n_groups)], 4)
    risk = np.clip(rng.random(group.size) + shift, 0, 1)
    y = (rng.random(group.size) < risk / 2).astype(np.int64)
    return {"y": y, "risk": risk, "group": group, "source": np.full(group.size, "a")}


def take(r: dict, mask: np.ndarray) -> dict:
    return {k: v[mask] for k, v in r.items()}


def test_a_split_keeps_every_group_whole_and_draws_the_share_asked():
    r = rows(300, 0)
    cal = group_split(r["group"], 0.5, np.random.default_rng(1))
    assert not set(r["group"][cal]) & set(r["group"][~cal])
    assert len(set(r["group"][cal])) == 150
    with pytest.raises(ValueError, match="no group on one side"):
        group_split(r["group"][:4], 0.5, np.random.default_rng(1))


def test_hindsight_takes_the_largest_share_whose_risk_stays_at_or_below_alpha():
    y = np.array([0, 0, 1, 0, 1, 1])
    risk = np.array([0.1, 0.2, 0.3, 0.4, 0.5, 0.6])
    # cumulative risk: 0, 0, 1/3, 1/4, 2/5, 1/2
    assert hindsight_share(y, risk, 0.25) == pytest.approx(4 / 6)
    assert hindsight_share(y, risk, 0.0) == pytest.approx(2 / 6)
    tied = np.array([0.1, 0.1, 0.1, 0.4, 0.5, 0.6])  # the first three accepted together
    assert hindsight_share(y, tied, 0.3) == pytest.approx(4 / 6)


def test_the_oracle_is_the_loosest_single_threshold_with_few_enough_violations():
    tests = [(np.array([0, 0, 1]), np.array([0.1, 0.2, 0.3]))] * 9
    tests += [(np.array([0, 1, 1]), np.array([0.1, 0.2, 0.3]))]
    everything = np.array([0.1, 0.2, 0.3])
    best = oracle_fixed(tests, everything, alpha=0.0, delta=0.1)
    # t = 0.2 violates in 1 of 10 splits (allowed), t = 0.3 in all of them
    assert best["threshold"] == pytest.approx(0.2)
    assert best["violation_rate"] == pytest.approx(0.1)
    assert best["accepted_share"] == pytest.approx(2 / 3)


def test_calibrated_on_exchangeable_rows_the_bound_holds_and_no_shift_is_flagged():
    routing = RoutingConf(accept_rule="risk_controlled", max_accepted_risk=0.1, delta=0.1)
    outcomes = []
    for i in range(60):
        # large test sides: the realised risk is close to the rule's true accepted risk
        cal, test = rows(600, 100 + i), rows(6000, 1000 + i)
        outcomes += route_split("in", i, cal, test, routing)
    frame = outcomes_frame(outcomes)
    assert (frame["method"] == "gate").all() and len(frame) == 60
    assert frame["violated"].sum() <= int(binom.ppf(0.99, 60, 0.1))
    assert frame["accepted_share"].mean() > 0.2  # true accepted risk t/4 hits 0.1 at 40 %
    assert frame["ks_flag"].mean() <= 0.1 and not frame["unseen_flag"].any()


def test_routed_rows_that_moved_are_flagged_by_the_ks_test_and_the_unseen_source():
    routing = RoutingConf(accept_rule="risk_controlled", max_accepted_risk=0.1, delta=0.1)
    cal, test = rows(600, 1), rows(600, 2, shift=0.3)
    test["source"] = np.full(test["y"].size, "b")
    (out,) = route_split("shift", 0, cal, test, routing)
    assert out.ks_flag and out.ks_p < 0.01 and out.unseen_flag


def test_with_verifier_scores_the_cascade_is_routed_beside_the_gate():
    routing = RoutingConf(accept_rule="risk_controlled", max_accepted_risk=0.1, delta=0.1)
    cal, test = rows(900, 3), rows(900, 4)
    for r in (cal, test):
        r["verifier"] = r["y"] * 0.8 + 0.1  # a verifier that sees the label
    gate, cascade = route_split("in", 0, cal, test, routing)
    assert (gate.method, cascade.method) == ("gate", "cascade")
    assert cascade.accepted_share > gate.accepted_share
    assert cascade.sent_to_verifier > 0 and cascade.accepted_risk <= 0.1
    # a band row the verifier does not accept stays verify: review is the review rule's rows
    assert cascade.verify_share > 0
    assert (cascade.review_share, cascade.review_precision) == (
        gate.review_share,
        gate.review_precision,
    )
    total = cascade.accepted_share + cascade.verify_share + cascade.review_share
    assert total == pytest.approx(1.0)
    # where the cascade uses it, the label-reading verifier ranks perfectly
    assert cascade.band_auroc == 1.0 and gate.band_auroc is None


def test_the_verifier_auroc_is_read_on_the_verify_band_only():
    from runner.routing.guarantee.guarantee_check import band_auroc

    y = np.array([0, 1, 0, 1, 0, 1])
    verifier = np.array([0.9, 0.1, 0.2, 0.8, 0.3, 0.7])  # wrong on rows 0-1 only
    band = np.array([False, False, True, True, True, True])
    assert band_auroc(y, verifier, band) == 1.0
    assert band_auroc(y, verifier, np.ones(6, bool)) < 1.0
    assert band_auroc(y, verifier, np.array([True, False, True, False, False, False])) is None


def test_a_cascade_whose_verifier_accepts_nothing_sends_it_nothing():
    routing = RoutingConf(accept_rule="risk_controlled", max_accepted_risk=0.1, delta=0.1)
    cal, test = rows(900, 3), rows(900, 4)
    for r in (cal, test):
        r["verifier"] = np.random.default_rng(5).random(r["y"].size)  # knows nothing
    _, cascade = route_split("in", 0, cal, test, routing)
    assert cascade.sent_to_verifier == 0.0 and cascade.verify_share > 0


def test_the_tables_pair_the_cascade_with_the_gate_split_by_split():
    from runner.results import StudyResult
    from runner.routing.guarantee.guarantee_tables import CASCADE_GAIN_GOAL, add_tables

    routing = RoutingConf(accept_rule="risk_controlled", max_accepted_risk=0.1, delta=0.1)
    outcomes = []
    for i in range(20):
        cal, test = rows(900, 30 + i), rows(900, 60 + i)
        for r in (cal, test):
            r["verifier"] = r["y"] * 0.8 + 0.1
        outcomes += route_split("in distribution", i, cal, test, routing)
    table = outcomes_frame(outcomes)
    result = StudyResult()
    oracle = {"accepted_share": 0.5, "violation_rate": 0.0}
    add_tables(result, table, oracle, 0.5, routing, 0.05)
    cells = {(c.table, c.row, c.column): c for c in result.cells}
    gain = cells[("guarantee", "in distribution / cascade - gate alone", "accepted share (points)")]
    paired = table.pivot(index="split", columns="method", values="accepted_share")
    differences = 100 * (paired["cascade"] - paired["gate"])
    assert gain.value == pytest.approx(differences.mean())
    assert gain.ci_low == pytest.approx(np.percentile(differences, 2.5))
    goal = f"cascade accepts at least {CASCADE_GAIN_GOAL:g} points more than the gate alone"
    assert cells[("goals", goal, "value")].value == pytest.approx(differences.mean())
    assert cells[("goals", goal, "met")].value == int(differences.mean() >= CASCADE_GAIN_GOAL)
