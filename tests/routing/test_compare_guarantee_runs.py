"""scripts/compare_guarantee_runs.py: two runs' accepted shares paired split by split."""

from __future__ import annotations

import pandas as pd
import pytest
from tests.conftest import load_script


@pytest.fixture(scope="module")
def compare():
    return load_script("compare_guarantee_runs")


def splits(shares: list[float], method: str = "gate") -> pd.DataFrame:
    rows = [("in distribution", method, i, s) for i, s in enumerate(shares)]
    rows.append(("calibrated on QA, routed on Summary", method, 0, 0.9))  # not compared
    return pd.DataFrame(rows, columns=["scenario", "method", "split", "accepted_share"])


def test_the_gain_is_b_minus_a_on_each_split_in_points(compare):
    a = splits([0.20, 0.25, 0.10])
    b = splits([0.30, 0.24, 0.10]).iloc[[2, 0, 1, 3]]  # order does not matter: by split
    gain = compare.paired_gain(a, b, "gate")
    assert sorted(gain.round(6).tolist()) == [-1.0, 0.0, 10.0]


def test_runs_of_different_splits_or_no_such_method_are_refused(compare):
    with pytest.raises(SystemExit, match="different splits"):
        compare.paired_gain(splits([0.2, 0.3]), splits([0.2]), "gate")
    with pytest.raises(SystemExit, match="method 'mapie'"):
        compare.paired_gain(splits([0.2]), splits([0.2]), "mapie")
