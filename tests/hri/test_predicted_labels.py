"""Predicted claim labels as HRI inputs: verdict map, relabelling, sampling, systems."""

from __future__ import annotations

import numpy as np
import pytest
from tests.studies.test_hri_example import hri_dict

from runner.data.hri_records import Claim, LabelAssignment, Response
from runner.errors import ConfigError
from runner.hri import predicted_labels as pl
from runner.hri.config import load_hri_config
from runner.hri.scoring import score_response


@pytest.fixture(scope="module")
def config():
    return load_hri_config(hri_dict())


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


def test_the_judges_see_a_sample_of_the_responses_s1_labels():
    rs = responses([1] * 15 + [0] * 5, claims_each=2)
    plan = pl.plan_responses(rs, 10, 4, 13, has_s1=True)
    assert plan.s1 == pl.select_responses(rs, 10, 13)
    assert set(plan.judged) <= set(plan.s1) and len(plan.judged) == 4
    assert plan.owner.tolist() == [i for i in range(20) for _ in range(2)]
    assert plan.s1_claims.tolist() == [2 * i + k for i in plan.s1 for k in (0, 1)]
    assert plan.judged_claims.tolist() == [2 * i + k for i in plan.judged for k in (0, 1)]
    judges_only = pl.plan_responses(rs, 10, 4, 13, has_s1=False)
    assert judges_only.s1 == list(range(20))  # no S1: the judges draw from every response
    assert judges_only.judged == pl.select_responses(rs, 4, 14)


def test_every_system_scores_only_the_responses_it_labelled(config):
    rs = responses([0, 1, 1])
    owner = np.array([0, 0, 1, 1, 2, 2])
    systems = {"judge": (np.array([2, 3]), np.array(["red", "red"], dtype=object))}
    scored = pl.score_systems(rs, {"gold": rs}, systems, owner, pl.DEFAULT_VERDICT_LABELS, config)
    assert list(scored) == ["reference: gold labels", "judge"]
    assert list(scored["reference: gold labels"]) == [0, 1, 2]
    assert list(scored["judge"]) == [1]
    relabelled = pl.relabel([rs[1]], ["red", "red"], pl.DEFAULT_VERDICT_LABELS)[0]
    assert scored["judge"][1] == score_response(relabelled, config)
    assert scored["reference: gold labels"][0] == score_response(rs[0], config)
