"""Agreement statistics against scikit-learn and textbook values."""

from __future__ import annotations

import numpy as np
import pytest
from sklearn.metrics import cohen_kappa_score

from runner.evaluation.agreement import cohen_kappa, krippendorff_alpha

N = None
# Krippendorff (2011), "Computing Krippendorff's Alpha-Reliability", section C: 4 observers,
# 12 units, missing values; published alpha: nominal 0.743, ordinal 0.815, interval 0.849.
KRIPPENDORFF_2011 = [
    [1, 2, 3, 3, 2, 1, 4, 1, 2, N, N, N],
    [1, 2, 3, 3, 2, 2, 4, 1, 2, 5, N, 3],
    [N, 3, 3, 3, 2, 3, 4, 2, 2, 5, 1, N],
    [1, 2, 3, 3, 2, 4, 4, 1, 2, 5, 1, N],
]


def test_kappa_textbook_two_by_two():
    # 50 items: both yes 20, a yes / b no 5, a no / b yes 10, both no 15:
    # p_o = 0.7, p_e = 0.5 * 0.6 + 0.5 * 0.4 = 0.5, kappa = 0.4.
    a = ["yes"] * 25 + ["no"] * 25
    b = ["yes"] * 20 + ["no"] * 5 + ["yes"] * 10 + ["no"] * 15
    assert cohen_kappa(a, b) == pytest.approx(0.4)


@pytest.mark.parametrize("weights", [None, "linear", "quadratic"])
@pytest.mark.parametrize("seed", [0, 1, 2])
def test_kappa_equals_sklearn(weights, seed):
    rng = np.random.default_rng(seed)
    labels = ["green", "yellow", "red"]
    a = rng.choice(labels, size=80).tolist()
    b = [x if rng.uniform() < 0.6 else rng.choice(labels) for x in a]
    ours = cohen_kappa(a, b, labels=labels, weights=weights)
    theirs = cohen_kappa_score(a, b, labels=labels, weights=weights)
    assert ours == pytest.approx(theirs, abs=1e-12)


def test_kappa_perfect_and_undefined():
    assert cohen_kappa(["a", "b", "a"], ["a", "b", "a"]) == 1.0
    with pytest.raises(ValueError, match="undefined"):
        cohen_kappa(["a", "a"], ["a", "a"])


@pytest.mark.parametrize(
    ("a", "b", "kwargs", "message"),
    [
        (["x"], ["x", "y"], {}, "different numbers"),
        ([], [], {}, "no items"),
        (["x", None], ["x", "y"], {}, "missing labels"),
        (["x", "z"], ["x", "y"], {"labels": ["x", "y"]}, "not in labels"),
        (["x", "y"], ["x", "y"], {"weights": "cubic"}, "weights must be"),
    ],
)
def test_kappa_bad_input(a, b, kwargs, message):
    with pytest.raises(ValueError, match=message):
        cohen_kappa(a, b, **kwargs)


@pytest.mark.parametrize(
    ("level", "alpha"), [("nominal", 0.743), ("ordinal", 0.815), ("interval", 0.849)]
)
def test_alpha_matches_krippendorff_2011(level, alpha):
    result = krippendorff_alpha(KRIPPENDORFF_2011, level=level)
    assert round(result.alpha, 3) == alpha
    assert result.unpairable_units == 1  # unit 12 has a single rating
    assert result.pairable_values == 40


def test_alpha_nominal_on_strings_with_nan_missing():
    data = [["g", "r", "g", float("nan")], ["g", "r", "y", "r"]]
    result = krippendorff_alpha(data)
    # Units 1-3 pairable: coincidences g-g 2, r-r 2, g-y 1, y-g 1 -> n = 6, n_g = 3, n_r = 2,
    # n_y = 1; D_o = 2/6, D_e = (36 - 9 - 4 - 1) / 30 = 22/30; alpha = 1 - (1/3)/(22/30).
    assert result.alpha == pytest.approx(1 - (1 / 3) / (22 / 30))


def test_alpha_perfect_agreement_is_one_and_constant_data_is_undefined():
    assert krippendorff_alpha([["a", "b"], ["a", "b"]]).alpha == 1.0
    with pytest.raises(ValueError, match="undefined"):
        krippendorff_alpha([["a", "a"], ["a", "a"]])


def test_alpha_bad_input():
    with pytest.raises(ValueError, match="two raters"):
        krippendorff_alpha([[1, 2]])
    with pytest.raises(ValueError, match="one entry per unit"):
        krippendorff_alpha([[1, 2], [1]])
    with pytest.raises(ValueError, match="no unit has two"):
        krippendorff_alpha([[1, N], [N, 2]])
    with pytest.raises(ValueError, match="level must be"):
        krippendorff_alpha([[1, 2], [1, 2]], level="ratio")
