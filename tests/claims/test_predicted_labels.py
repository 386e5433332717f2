"""Predicted claim labels as HRI inputs: verdict map, relabelling, sampling, systems."""

from __future__ import annotations

import numpy as np
import pytest
from omegaconf import OmegaConf
from tests.studies.test_hri_example import hri_dict

from runner.claims import predicted_labels as pl
from runner.claims.ensembles import and_rule, cascade_rule, k_of_n, vote_rule
from runner.claims.hri import Claim, LabelAssignment, Response
from runner.claims.hri_config import load_hri_config
from runner.errors import ConfigError


@pytest.fixture(scope="module")
def config():
    return load_hri_config(OmegaConf.create(hri_dict()))


def responses(outcomes: list[int], claims_each: int = 2) -> list[Response]:
    return [
        Response(
            response_id=f"r{i}",
            outcome=y,
            claims=tuple(
                Claim(
                    claim_id=f"c{k}",
                    labels=(LabelAssignment("SUPPORTED"),),
                    criticality=k + 1,
                    text=f"claim {i}.{k}",
                    passages=("p",),
                )
                for k in range(claims_each)
            ),
        )
        for i, y in enumerate(outcomes)
    ]


def test_the_default_verdict_map_and_its_checks(config):
    assert pl.verdict_labels(None, config) == {
        "green": "SUPPORTED",
        "yellow": "PARTIAL",
        "red": "UNSUPPORTED",
    }
    with pytest.raises(ConfigError, match="missing \\['red'\\]"):
        pl.verdict_labels({"green": "SUPPORTED", "yellow": "PARTIAL"}, config)
    with pytest.raises(ConfigError, match=r"not in hri\.labels"):
        pl.verdict_labels({"green": "SUPPORTED", "yellow": "PARTIAL", "red": "WRONG"}, config)


def test_relabel_replaces_labels_and_keeps_everything_else():
    rs = responses([0, 1])
    out = pl.relabel(rs, ["green", "red", "yellow", "green"], pl.DEFAULT_VERDICT_LABELS)
    assert [c.label_names() for r in out for c in r.claims] == [
        ("SUPPORTED",),
        ("UNSUPPORTED",),
        ("PARTIAL",),
        ("SUPPORTED",),
    ]
    assert [c.criticality for r in out for c in r.claims] == [1, 2, 1, 2]
    assert [r.outcome for r in out] == [0, 1] and out[1].claims[0].passages == ("p",)
    with pytest.raises(ValueError, match="3 labels for 4 claims"):
        pl.relabel(rs, ["green"] * 3, pl.DEFAULT_VERDICT_LABELS)


def test_response_sample_is_seeded_and_keeps_outcome_shares():
    rs = responses([1] * 15 + [0] * 5)
    a = pl.select_responses(rs, 8, 13)
    assert a == pl.select_responses(rs, 8, 13) and a == sorted(a)
    assert sum(rs[i].outcome for i in a) == 6  # 8 * 15/20
    assert pl.select_responses(rs, 8, 14) != a
    assert {rs[i].outcome for i in pl.select_responses(rs, 2, 13)} == {0, 1}
    assert pl.select_responses(rs, None, 13) == list(range(20))
    with pytest.raises(ConfigError, match="judge_responses"):
        pl.select_responses(rs, 0, 13)


def test_systems_follow_the_claim_study_rules_and_tag_s1_rows():
    s1 = np.array(["green", "red", "yellow", "green", "red"], dtype=object)
    judged = np.array([1, 2, 3])
    a = np.array(["green", "yellow", "red"], dtype=object)
    b = np.array(["red", "green", "green"], dtype=object)
    got = pl.system_labels(("S1", "random weights (x)", np.arange(5), s1), {"a": a, "b": b}, judged)
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
    only_judges = pl.system_labels(None, {"a": a}, judged)
    assert list(only_judges) == ["S2 LLM judge / a"]


def test_s1_on_a_sample_must_cover_the_judged_claims():
    s1 = np.array(["green", "red"], dtype=object)
    a = np.array(["yellow", "red"], dtype=object)
    got = pl.system_labels(("S1", "w", np.array([4, 7]), s1), {"a": a}, np.array([4, 7]))
    assert list(got["S1 span detector [w]"][0]) == [4, 7]
    assert list(got["S3 AND / a [S1 w]"][1]) == ["yellow", "red"]
    with pytest.raises(ValueError, match="no S1 label"):
        pl.system_labels(("S1", "w", np.array([4, 7]), s1), {"a": a}, np.array([4, 8]))
