"""The running audit test (`runner.routing.audit.sequential`): anytime-valid, fast to alarm,
continued across runs with exactly the numbers of one pass."""

from __future__ import annotations

import json

import numpy as np
import pytest
from scipy.stats import beta

from runner.routing.audit import sequential as sq

ALPHA, DELTA = 0.1, 0.1


def bernoulli(p: float, n: int, seed: int) -> np.ndarray:
    return np.random.default_rng(seed).binomial(1, p, n)


def naive_alarm(x: np.ndarray, alpha: float, delta: float) -> bool:
    """A one-sided Clopper-Pearson test at level delta, looked at after every row."""
    k, n = np.cumsum(x), np.arange(1, x.size + 1)
    low = np.where(k > 0, beta.ppf(delta, np.maximum(k, 1), n - k + 1), 0.0)
    return bool((low > alpha).any())


@pytest.mark.parametrize("p", [ALPHA, ALPHA / 2])
def test_under_the_null_the_alarm_fires_in_at_most_delta_of_runs_looking_after_every_row(p):
    runs, rows = 1000, 500
    fired = naive = 0
    for seed in range(runs):
        x = bernoulli(p, rows, seed)
        state, points = sq.update(sq.new_state(ALPHA, DELTA), x)
        fired += state["violated_at"] is not None
        assert [pt["step"] for pt in points] == list(range(1, rows + 1))
        if p == ALPHA:
            naive += naive_alarm(x, ALPHA, DELTA)
    se = (DELTA * (1 - DELTA) / runs) ** 0.5
    assert fired / runs <= DELTA + 3 * se  # Ville: at most delta, whenever one looks
    if p == ALPHA:
        # the contrast: a fixed-sample interval read after every row errs far beyond delta
        assert naive / runs > DELTA + 10 * se, naive / runs


def test_a_risk_well_above_the_target_alarms_within_a_stated_number_of_rows():
    for p, within in ((0.5, 40), (0.3, 150)):
        for seed in range(50):
            state, points = sq.update(sq.new_state(ALPHA, DELTA), bernoulli(p, within, seed))
            assert state["violated_at"] is not None and state["violated_at"] <= within, (p, seed)
            assert sq.verdict(state) == "violated" and points[-1]["alarm"] == 1


def test_a_risk_well_below_the_target_is_certified_and_the_sequence_covers_it():
    for seed in range(30):
        x = bernoulli(0.02, 300, seed)
        state, points = sq.update(sq.new_state(ALPHA, DELTA), x)
        assert sq.verdict(state) == "holds" and state["holds_at"] <= 300
        assert points[-1]["cs_low"] <= 0.02 <= points[-1]["cs_high"] < ALPHA
        highs = [pt["cs_high"] for pt in points]
        assert highs == sorted(highs, reverse=True)  # running intersection


def test_continuing_the_state_across_calls_equals_one_call_bit_for_bit():
    x = bernoulli(0.2, 257, seed=3)
    whole, whole_points = sq.update(sq.new_state(0.15, 0.05), x)
    state = sq.new_state(0.15, 0.05)
    points = []
    for part in (x[:1], x[1:100], x[100:]):
        state = json.loads(json.dumps(state))  # as it travels through the model version tag
        state, more = sq.update(state, part)
        points += more
    assert json.dumps(state, sort_keys=True) == json.dumps(whole, sort_keys=True)
    assert points == whole_points


def test_a_state_is_small_json_whatever_it_has_counted():
    state, _ = sq.update(sq.new_state(ALPHA, DELTA), bernoulli(0.1, 1000, seed=0))
    assert len(json.dumps(state)) < 1000  # no ids: those are the run's COUNTED_FILE
    with pytest.raises(ValueError, match="0/1"):
        sq.update(state, [2])


def test_feeding_counts_each_id_once_in_the_order_it_was_first_given():
    x = dict(zip("abcdefgh", bernoulli(0.3, 8, seed=5).tolist(), strict=True))
    state, counted = sq.new_state(ALPHA, DELTA), sq.counted_rows()
    batches = (["c", "a", "b"], ["b", "a", "c"], ["a", "d", "c", "e"], ["f", "e", "g", "h"])
    for ids in batches:
        state, points, counted = sq.feed(state, counted, ids, [x[i] for i in ids])
    order = ["c", "a", "b", "d", "e", "f", "g", "h"]  # first seen; never twice
    whole, _ = sq.update(sq.new_state(ALPHA, DELTA), [x[i] for i in order])
    assert json.dumps(state, sort_keys=True) == json.dumps(whole, sort_keys=True)
    assert counted["id"].tolist() == sorted(order)  # sorted ids: the same rows, the same bytes
    steps = dict(zip(counted["id"], counted["step"], strict=True))
    assert [steps[i] for i in order] == list(range(1, 9))
    assert dict(zip(counted["id"], counted["label"], strict=True)) == x
    again, points, same = sq.feed(state, counted, ["h", "a"], [x["h"], x["a"]])
    assert (again, points) == (state, []) and same.equals(counted)
    with pytest.raises(ValueError, match="repeat"):
        sq.feed(state, counted, ["z", "z"], [0, 0])


def test_a_label_changed_after_its_row_was_counted_is_found():
    _, _, counted = sq.feed(sq.new_state(ALPHA, DELTA), sq.counted_rows(), ["a", "b"], [0, 1])
    assert sq.changed_labels(counted, ["b", "c", "a"], [1, 1, 0]) == []
    assert sq.changed_labels(counted, ["c", "b", "a"], [0, 0, 1]) == [("b", 1, 0), ("a", 0, 1)]
