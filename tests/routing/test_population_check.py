"""The population check: exact population risk of a threshold, whole-group draws, and a
rule whose bound holds on the population it is about."""

from __future__ import annotations

import numpy as np
import pytest

from runner.routing.config import RoutingConf
from runner.routing.guarantee.population_check import Population, draw_outcomes, population_frame


def population(n_groups: int = 600, seed: int = 0) -> Population:
    """Groups of 1-8 answers; a row's label is drawn at its risk (a calibrated gate) plus a
    shared group effect, so answers to one context move together."""
    rng = np.random.default_rng(seed)
    sizes = rng.integers(1, 9, n_groups)
    groups = np.repeat([f"g{k}" for k in range(n_groups)], sizes)
    effect = np.repeat(rng.normal(0, 0.1, n_groups), sizes)
    risk = rng.uniform(0, 1, groups.size)
    y = (rng.uniform(size=groups.size) < np.clip(risk + effect, 0, 1)).astype(int)
    return Population(y, risk, groups)


def test_the_accepted_share_and_risk_of_a_threshold_are_those_of_every_row():
    pop = population()
    for t in (-1.0, 0.05, 0.3, float(np.median(pop.risk)), 2.0):
        share, risk = pop.accepted(t)
        acc = pop.risk <= t
        assert share == acc.mean()
        assert risk == (pop.y[acc].mean() if acc.any() else None)


def test_the_hindsight_share_is_the_largest_cut_whose_risk_is_within_alpha():
    pop = population()
    for alpha in (0.05, 0.1, 0.2):
        best = max(
            (acc.mean() for t in np.unique(pop.risk) if (acc := pop.risk <= t).any()
             and pop.y[acc].mean() <= alpha),
            default=0.0,
        )  # fmt: skip
        assert pop.hindsight_share(alpha) == pytest.approx(best)


def test_a_draw_takes_whole_groups_until_it_has_enough_rows():
    pop = population()
    mask = pop.draw(500, np.random.default_rng(1))
    assert mask.sum() >= 500
    drawn = set(pop.groups[mask])
    assert not drawn & set(pop.groups[~mask])  # no group on both sides
    assert mask.sum() - 500 < 8  # it stops at the first group that reaches N
    with pytest.raises(ValueError, match="calibration rows"):
        pop.draw(pop.rows, np.random.default_rng(1))


@pytest.mark.slow
def test_the_risk_controlled_rule_holds_on_the_population_at_most_delta_of_the_time():
    """200 draws of 1,000 rows: the share of draws whose threshold's *population* accepted
    risk exceeds α stays within δ (its exact 95 % interval reaches δ), and MAPIE's
    controller too."""
    from scipy.stats import binomtest

    pop = population(n_groups=3000, seed=3)
    routing = RoutingConf(accept_rule="risk_controlled", max_accepted_risk=0.2, delta=0.1)
    frame = population_frame(
        draw_outcomes(pop, [1000], [0.2], 200, routing, np.random.default_rng(5))
    )
    for method, sub in frame.groupby("method"):
        k = int(sub["violated"].sum())
        assert binomtest(k, len(sub)).proportion_ci(method="exact").low <= 0.1, method
    gate = frame[frame["method"] == "gate"]
    assert gate["feasible"].mean() > 0.9  # it certifies something in most draws


def test_the_noise_floor_grows_with_calibration_rows_and_stays_below_hindsight():
    pop = population(n_groups=3000, seed=3)
    floors = [pop.noise_floor_share(n, 0.2, 0.1) for n in (300, 1000, 3000, 10_000)]
    assert floors == sorted(floors) and floors[0] < floors[-1]
    assert floors[-1] <= pop.hindsight_share(0.2)
    # the floor's set clears the normal bound on the rows it would be certified on
    share = floors[1]
    _, risk = pop.accepted(np.quantile(pop.risk, share, method="inverted_cdf"))
    assert risk + 1.2816 * np.sqrt(risk * (1 - risk) / (1000 * share)) <= 0.2 + 1e-9
