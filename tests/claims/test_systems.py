"""Every claim-verification system from S1 and judge verdicts (`runner.claims.systems`)."""

from __future__ import annotations

import numpy as np
import pytest

from runner.claims.ensembles import and_rule, cascade_rule, k_of_n, vote_rule
from runner.claims.systems import system_labels


def test_systems_follow_the_claim_study_rules_and_tag_s1_rows():
    s1 = np.array(["green", "red", "yellow", "green", "red"], dtype=object)
    judged = np.array([1, 2, 3])
    a = np.array(["green", "yellow", "red"], dtype=object)
    b = np.array(["red", "green", "green"], dtype=object)
    got = system_labels(("S1", "random weights (x)", np.arange(5), s1), {"a": a, "b": b}, judged)
    assert list(got["S1 span detector [random weights (x)]"][0]) == [0, 1, 2, 3, 4]
    sub = s1[judged]
    assert list(got["S3 AND / a [S1 random weights (x)]"][1]) == list(and_rule(sub, a))
    assert list(got["S4 vote / b [S1 random weights (x)]"][1]) == list(vote_rule(sub, b))
    assert list(got["S5 cascade / a [S1 random weights (x)]"][1]) == list(cascade_rule(sub, a))
    assert list(got["union(a, b)"][1]) == list(k_of_n([a, b], 1))
    assert list(got["2-of-3(a, b, S1) [S1 random weights (x)]"][1]) == list(k_of_n([a, b, sub], 2))
    for row, (positions, _) in got.items():
        if "S1" in row:
            assert "random weights" in row, row
        if row.startswith(("S2", "S3", "union", "all-agree", "2-of")):
            assert list(positions) == [1, 2, 3]
    assert not any(r.endswith(" alone") for r in got)
    assert "union(a, S1) [S1 random weights (x)]" not in got  # that is S3 AND
    only_judges = system_labels(None, {"a": a}, judged)
    assert list(only_judges) == ["S2 LLM judge / a"]


def test_s1_on_a_sample_must_cover_the_judged_claims():
    s1 = np.array(["green", "red"], dtype=object)
    a = np.array(["yellow", "red"], dtype=object)
    got = system_labels(("S1", "w", np.array([4, 7]), s1), {"a": a}, np.array([4, 7]))
    assert list(got["S1 span detector [w]"][0]) == [4, 7]
    assert list(got["S3 AND / a [S1 w]"][1]) == ["yellow", "red"]
    with pytest.raises(ValueError, match="no S1 label"):
        system_labels(("S1", "w", np.array([4, 7]), s1), {"a": a}, np.array([4, 8]))
