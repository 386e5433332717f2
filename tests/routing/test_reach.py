"""An infeasible contract's message: the side that binds, and only targets that fit.

Synthetic rows: risk ~ U(0, 1) and P(hallucinated | risk) = risk, so reviewing risk >= t
has precision (1 + t) / 2: a review target below 0.5 certifies every row, and the accept
side, certified below the review threshold, is left nothing whatever its own target.
"""

from __future__ import annotations

import re

import numpy as np

from runner.routing import RoutingConf
from runner.routing.contract import (
    cascade_infeasible_message,
    contract_thresholds,
    infeasible_message,
)
from runner.routing.contract.reach import ACCEPT, REVIEW, closest_fit, side_fits
from runner.routing.contract.risk_control import certify_accept

BOTH = {"accept_rule": "risk_controlled", "review_rule": "precision_controlled"}


def synthetic(n: int = 3000, seed: int = 0) -> tuple[np.ndarray, np.ndarray]:
    rng = np.random.default_rng(seed)
    risk = rng.random(n)
    return (rng.random(n) < risk).astype(np.int64), risk


def suggested(line: str, key: str) -> float:
    """The target the message says fits for `key` (as printed: the printed text is what
    must fit)."""
    return float(re.search(rf"the tightest that fits is routing\.{key}=([0-9.e-]+)", line)[1])


def test_a_review_side_taking_the_accepted_rows_is_named_and_its_targets_that_leave_room_fit():
    y, risk = synthetic()
    conf = RoutingConf(**BOTH, max_accepted_risk=0.45, min_review_precision=0.45)
    assert not contract_thresholds(y, risk, conf)[1].accept.feasible
    assert certify_accept(y, risk, 0.45, 0.05).feasible  # on its own 0.45 fits
    line = infeasible_message(y, risk, conf)
    assert "\n" not in line
    assert "routing.max_accepted_risk=0.45 cannot be guaranteed with probability 0.9" in line
    assert "the review side binds" in line and "taking the rows the accept side would" in line
    assert "on its own the accept side certifies routing.max_accepted_risk=0.45" in line
    # the accept side's own best does not fit beside this review side: no target does
    assert "with routing.min_review_precision=0.45 as configured no routing." in line
    low, high = re.search(r"routing\.min_review_precision from (\S+) to (\S+) fits", line).groups()
    for beta in (float(low), float(high)):
        _, g = contract_thresholds(y, risk, RoutingConf(**BOTH, max_accepted_risk=0.45,
                                                        min_review_precision=beta))  # fmt: skip
        assert g.feasible
    looser = RoutingConf(**BOTH, max_accepted_risk=0.45, min_review_precision=float(low) - 0.001)
    assert not contract_thresholds(y, risk, looser)[1].feasible


def test_a_target_too_tight_for_the_rows_binds_itself_and_the_printed_tightest_fits():
    y, risk = synthetic()
    conf = RoutingConf(**BOTH, max_accepted_risk=0.01, min_review_precision=0.8)
    line = infeasible_message(y, risk, conf)
    assert "the accept side binds: on its own it certifies at best accepted risk <=" in line
    best = suggested(line, "max_accepted_risk")
    assert side_fits(y, risk, RoutingConf(**BOTH, max_accepted_risk=best,
                                          min_review_precision=0.8), ACCEPT)  # fmt: skip
    tighter = RoutingConf(**BOTH, max_accepted_risk=best - 0.001, min_review_precision=0.8)
    assert not side_fits(y, risk, tighter, ACCEPT)


def test_an_accept_budget_taking_the_reviewed_rows_binds_the_review_side():
    y, risk = synthetic()
    conf = RoutingConf(
        review_rule="precision_controlled", min_review_precision=0.6,
        accept_budget=0.999, review_budget=0.001,
    )  # fmt: skip
    line = infeasible_message(y, risk, conf)
    assert "routing.min_review_precision=0.6 cannot be guaranteed" in line
    assert "the accept budget binds: it accepts the rows with risk <=" in line
    assert "with routing.accept_budget=0.999 as configured" in line


def test_the_probability_is_printed_with_the_precision_it_has():
    y, risk = synthetic(200)
    conf = RoutingConf(accept_rule="risk_controlled", max_accepted_risk=0.3, delta=1e-9)
    line = infeasible_message(np.ones_like(y), risk, conf)  # every row wrong: nothing fits
    assert "with probability 1 - 1e-09 on these 200 labelled rows" in line
    assert "at best" not in line and "no routing.max_accepted_risk fits" in line


def test_closest_fit_keeps_the_asked_accepted_risk_by_tightening_the_review_side():
    y, risk = synthetic()
    conf = RoutingConf(**BOTH, max_accepted_risk=0.45, min_review_precision=0.45)
    fit = closest_fit(y, risk, conf)
    assert set(fit) == {"min_review_precision"} and fit["min_review_precision"] > 0.45
    shipped = RoutingConf(**BOTH, max_accepted_risk=0.45, **fit)
    assert contract_thresholds(y, risk, shipped)[1].feasible


def test_closest_fit_of_two_failing_sides_fits_as_one_contract():
    y, risk = synthetic()
    conf = RoutingConf(**BOTH, max_accepted_risk=0.01, min_review_precision=0.99)
    fit = closest_fit(y, risk, conf)
    assert set(fit) == {"max_accepted_risk", "min_review_precision"}
    assert contract_thresholds(y, risk, RoutingConf(**BOTH, **fit))[1].feasible
    assert side_fits(y, risk, RoutingConf(**BOTH, **fit), REVIEW)


def test_the_cascade_message_suggests_an_accepted_risk_the_cascade_certifies():
    y, risk = synthetic(2000, 1)
    verifier = np.random.default_rng(2).random(y.size)  # no skill: the gate carries it
    conf = RoutingConf(accept_rule="risk_controlled", max_accepted_risk=0.01)
    line = cascade_infeasible_message(y, risk, verifier, conf, None, "g -> v")
    assert line.startswith("routing.max_accepted_risk=0.01 cannot be guaranteed for the cascade")
    assert "the cascade's accept side binds" in line and "routing.review_budget=0.1" in line
    alpha = suggested(line, "max_accepted_risk")
    ok = RoutingConf(accept_rule="risk_controlled", max_accepted_risk=alpha)
    assert side_fits(y, risk, ok, ACCEPT, verifier_risk=verifier)
    tighter = RoutingConf(accept_rule="risk_controlled", max_accepted_risk=alpha - 0.001)
    assert not side_fits(y, risk, tighter, ACCEPT, verifier_risk=verifier)
