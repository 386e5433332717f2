"""AHP weight elicitation: principal eigenvector and Saaty's consistency ratio."""

from __future__ import annotations

import numpy as np
import pytest

from runner.errors import ConfigError
from runner.hri.ahp import RANDOM_INDEX, ahp_weights, pairwise_matrix


def test_textbook_three_criteria_example():
    # Saaty-style example A = [[1, 3, 5], [1/3, 1, 3], [1/5, 1/3, 1]]: weights about
    # (0.637, 0.258, 0.105), lambda_max about 3.039, CR about 0.033 (RI(3) = 0.58).
    result = ahp_weights({"a": {"b": 3, "c": 5}, "b": {"c": 3}}, ["a", "b", "c"])
    assert [round(result.weights[k], 3) for k in "abc"] == [0.637, 0.258, 0.105]
    assert result.lambda_max == pytest.approx(3.0385, abs=1e-4)
    assert result.random_index == 0.58
    assert result.consistency_ratio == pytest.approx(0.0332, abs=1e-4)


def test_a_consistent_matrix_gives_back_the_ratios_exactly():
    w = np.array([0.4, 0.3, 0.2, 0.1])
    matrix = np.outer(w, 1 / w)
    result = ahp_weights(matrix, ["p", "q", "r", "s"])
    assert list(result.weights.values()) == pytest.approx(w.tolist(), abs=1e-12)
    assert result.consistency_ratio == 0.0


def test_fraction_strings_and_reciprocals():
    a = pairwise_matrix({"x": {"y": "1/3"}}, ["x", "y"])
    assert a[0, 1] == pytest.approx(1 / 3) and a[1, 0] == pytest.approx(3)
    result = ahp_weights({"x": {"y": "1/3"}}, ["x", "y"])
    assert result.weights == pytest.approx({"x": 0.25, "y": 0.75})
    assert result.consistency_ratio == 0.0  # n = 2 is always consistent


def test_inconsistent_judgments_raise_above_the_limit_and_pass_below_a_looser_one():
    judgments = {"a": {"b": 9, "c": "1/9"}, "b": {"c": 9}}
    with pytest.raises(
        ConfigError, match=r"consistency ratio CR = \d+\.\d+ exceeds the limit 0\.1"
    ):
        ahp_weights(judgments, ["a", "b", "c"], cr_limit=0.1)
    loose = ahp_weights(judgments, ["a", "b", "c"], cr_limit=100)
    assert loose.consistency_ratio > 0.1


@pytest.mark.parametrize(
    ("judgments", "message"),
    [
        ({"a": {"b": 2}}, "missing judgment"),
        ({"a": {"b": 2, "c": 1}, "b": {"c": 1}, "c": {"a": 1}}, "pair already given"),
        ({"a": {"b": 0, "c": 1}, "b": {"c": 1}}, "positive"),
        ({"a": {"b": "two", "c": 1}, "b": {"c": 1}}, "cannot read"),
        ({"a": {"z": 1}}, "unknown criterion"),
        ({"a": {"a": 1}}, "not compared with itself"),
    ],
)
def test_bad_judgments_are_rejected_with_the_key(judgments, message):
    with pytest.raises(ConfigError, match=message):
        ahp_weights(judgments, ["a", "b", "c"], key="hri.ahp.comparisons")


def test_a_non_reciprocal_matrix_is_rejected():
    with pytest.raises(ConfigError, match="not reciprocal"):
        ahp_weights(np.array([[1.0, 2.0], [2.0, 1.0]]), ["a", "b"])


def test_random_index_table_is_saatys():
    assert RANDOM_INDEX[7] == 1.32 and RANDOM_INDEX[10] == 1.49
