"""HRI scoring: dimension scores, additive index, safety floors, HRI*, bands, explanations."""

from __future__ import annotations

import math
from datetime import UTC, datetime, timedelta
from pathlib import Path

import pytest
import yaml

from runner.data.hri_records import (
    Claim,
    FeedbackEvent,
    LabelAssignment,
    Response,
    claim_from_mapping,
)
from runner.errors import DataError
from runner.hri.config import HRIConfig, load_hri_config
from runner.hri.scoring import band_for, score_response

CONF = Path(__file__).resolve().parents[2] / "conf"
AS_OF = datetime(2026, 7, 1, tzinfo=UTC)


@pytest.fixture(scope="module")
def config() -> HRIConfig:
    doc = yaml.safe_load((CONF / "hri" / "default.yaml").read_text())
    doc.pop("defaults")
    return load_hri_config(doc)


def claim(
    cid: str,
    *labels: str | tuple[str, tuple[str, ...]],
    v: int = 1,
    feedback: tuple[FeedbackEvent, ...] = (),
) -> Claim:
    assignments = tuple(
        LabelAssignment(lab) if isinstance(lab, str) else LabelAssignment(lab[0], lab[1])
        for lab in labels
    )
    return Claim(
        claim_id=cid,
        labels=assignments,
        criticality=v,
        feedback=feedback,
        file="claims.yaml",
        row=f"claim {cid}",
    )


def response(*claims: Claim, n_reviewed: int = 0) -> Response:
    return Response(
        response_id="r",
        claims=claims,
        as_of=AS_OF,
        n_reviewed=n_reviewed,
        file="claims.yaml",
        row="responses[0]",
    )


def event(days_ago: float, resolved: bool = False, severity: float | None = None) -> FeedbackEvent:
    return FeedbackEvent(
        at=AS_OF - timedelta(days=days_ago),
        validated_by="reviewer",
        severity=severity,
        resolved=resolved,
    )


def test_dimension_scores_are_criticality_weighted_means(config):
    r = score_response(
        response(
            claim("a", "SUPPORTED", v=1), claim("b", "UNSUPPORTED", v=3), claim("c", "PARTIAL", v=2)
        ),
        config,
    )
    assert r.sum_criticality == 6
    assert r.numerators["U"] == pytest.approx(3 * 0.75 + 2 * 0.5)
    assert r.dimension_scores["U"] == pytest.approx((3 * 0.75 + 2 * 0.5) / 6)
    assert all(r.dimension_scores[k] == 0 for k in "FCOSPH")
    assert r.additive == pytest.approx(0.15 * (3.25 / 6))


def test_a_claim_counts_in_several_dimensions_at_once(config):
    r = score_response(
        response(claim("x", ("CONTRADICTED", ("F", "C")), v=2), claim("y", "SUPPORTED", v=2)),
        config,
    )
    assert r.dimension_scores["F"] == pytest.approx(0.5)
    assert r.dimension_scores["C"] == pytest.approx(0.5)
    assert r.additive == pytest.approx(0.25 * 0.5 + 0.20 * 0.5)


def test_several_labels_on_one_claim_feed_their_own_dimensions(config):
    r = score_response(response(claim("x", "UNSUPPORTED", "OUTDATED", "ACCESS_GAP")), config)
    assert r.dimension_scores["U"] == 0.75
    assert r.dimension_scores["O"] == 0.75
    assert r.dimension_scores["P"] == 0.6
    assert r.claims[0].contributions["U"] == 0.75


def test_two_labels_in_one_dimension_take_the_larger_contribution(config):
    r = score_response(response(claim("x", "PARTIAL", "UNSUPPORTED")), config)
    assert r.dimension_scores["U"] == 0.75


def test_labels_use_their_default_dimensions_unless_the_claim_names_others(config):
    default = score_response(response(claim("x", "PARTIAL")), config)
    context = score_response(response(claim("x", ("PARTIAL", ("C",)))), config)
    assert default.dimension_scores["U"] == 0.5 and default.dimension_scores["C"] == 0
    assert context.dimension_scores["C"] == 0.5 and context.dimension_scores["U"] == 0


def test_a_dimension_the_label_may_not_use_is_an_error_naming_the_claim(config):
    with pytest.raises(DataError, match=r"claim 'x'.*cannot count in dimension\(s\) \['O'\]"):
        score_response(response(claim("x", ("CONTRADICTED", ("F", "O")))), config)


def test_unknown_label_is_an_error_naming_claim_and_file(config):
    with pytest.raises(DataError, match=r"file claims\.yaml.*claim 'q'.*unknown label 'WRONG'"):
        score_response(response(claim("q", "WRONG")), config)


@pytest.mark.parametrize("bad", [0, -1, 1.5, True])
def test_criticality_below_one_or_not_an_integer_is_rejected(config, bad):
    with pytest.raises(DataError, match=r"claim 'a': criticality must be an integer >= 1"):
        score_response(response(claim("a", "SUPPORTED", v=bad)), config)
    with pytest.raises(DataError, match=r"row responses\[0\]\.claims\[0\].*criticality"):
        claim_from_mapping(
            {"claim_id": "a", "labels": ["SUPPORTED"], "criticality": bad},
            "f.yaml",
            "responses[0].claims[0]",
        )


# ----------------------------------------------------------------- safety floors


@pytest.mark.parametrize(
    ("labels", "v", "floor", "rule"),
    [
        (("CONTRADICTED",), 3, 0.70, "contradicted_high"),
        (("CONTRADICTED",), 5, 0.70, "contradicted_high"),
        (("CONTRADICTED",), 2, 0.50, "contradicted_medium"),
        (("CONTRADICTED",), 1, 0.0, None),
        (("ACCESS_GAP",), 3, 0.55, "access_gap_high"),
        (("ACCESS_GAP",), 2, 0.0, None),
        (("OUT_OF_SCOPE",), 3, 0.55, "out_of_scope_high"),
        (("OUT_OF_SCOPE",), 2, 0.0, None),
        (("UNSUPPORTED",), 9, 0.0, None),
    ],
)
def test_each_criticality_floor_condition(config, labels, v, floor, rule):
    # Many supported claims dilute the additive score below every floor.
    filler = [claim(f"s{i}", "SUPPORTED", v=5) for i in range(20)]
    r = score_response(response(claim("x", *labels, v=v), *filler), config)
    assert r.floor == floor
    assert r.additive < 0.1
    if rule is None:
        assert r.floor_hits == () and r.binding_floor is None
        assert r.hri_star == r.additive
    else:
        assert r.binding_floor.rule == rule and r.binding_floor.claim_id == "x"
        assert r.hri_star == floor


@pytest.mark.parametrize(
    ("events", "floored"),
    [
        ((event(10, resolved=True), event(20, resolved=True)), True),  # repeated
        ((event(10, resolved=False),), True),  # unresolved
        ((event(10, resolved=True),), False),  # one, resolved
    ],
)
def test_feedback_floor_applies_when_repeated_or_unresolved(config, events, floored):
    filler = [claim(f"s{i}", "SUPPORTED", v=5) for i in range(20)]
    fb = claim("x", "VALIDATED_NEGATIVE_FEEDBACK", feedback=events)
    r = score_response(response(fb, *filler, n_reviewed=50), config)
    assert (r.floor == 0.5) is floored
    assert (r.binding_floor is not None) is floored
    if floored:
        assert r.binding_floor.rule == "feedback_repeated_or_unresolved"


def test_the_largest_matching_floor_wins_and_is_named(config):
    r = score_response(
        response(
            claim("a", "ACCESS_GAP", v=3),
            claim("b", "CONTRADICTED", v=3),
            claim("c", "CONTRADICTED", v=2),
        ),
        config,
    )
    assert sorted(h.rule for h in r.floor_hits) == [
        "access_gap_high",
        "contradicted_high",
        "contradicted_medium",
    ]
    assert r.floor == 0.70
    assert r.binding_floor.claim_id == "b"


def test_a_floor_below_the_additive_score_does_not_bind(config):
    claims = [
        claim(
            f"c{i}",
            ("CONTRADICTED", ("F", "C")),
            "UNSUPPORTED",
            "OUTDATED",
            "OUT_OF_SCOPE",
            "ACCESS_GAP",
            v=2,
        )
        for i in range(3)
    ]
    r = score_response(response(*claims), config)
    assert r.additive > 0.5
    assert r.floor == 0.5
    assert r.binding_floor is None
    assert r.hri_star == r.additive


# ------------------------------------------------------------------------- bands


@pytest.mark.parametrize(
    ("score", "band", "action"),
    [
        (0.0, "Low", "release"),
        (0.2, "Low", "release"),
        (0.2000001, "Medium", "caution"),
        (0.5, "Medium", "caution"),
        (0.51, "High", "review"),
        (0.75, "High", "review"),
        (0.76, "Critical", "block"),
        (1.0, "Critical", "block"),
    ],
)
def test_band_boundaries(config, score, band, action):
    got, _ = band_for(score, config)
    assert (got.name, got.action) == (band, action)


def test_band_rejects_scores_outside_the_unit_interval(config):
    with pytest.raises(ValueError, match=r"\[0, 1\]"):
        band_for(1.2, config)


def test_result_band_is_that_of_hri_star(config):
    r = score_response(response(claim("x", "CONTRADICTED", v=3), claim("y", "SUPPORTED")), config)
    assert r.additive == pytest.approx(0.25 * 3 / 4)
    assert r.hri_star == 0.70
    assert (r.band, r.action, r.band_ordinal) == ("High", "review", 3)
    assert band_for(r.hri_star, config)[0].name == r.band


# ----------------------------------------------------------------- explanations


def test_claim_shares_add_up_to_the_additive_index(config):
    r = score_response(
        response(
            claim("a", "SUPPORTED"),
            claim("b", "UNSUPPORTED", v=2),
            claim("c", ("CONTRADICTED", ("F", "C")), v=3),
            claim("d", "VALIDATED_NEGATIVE_FEEDBACK", feedback=(event(5),)),
        ),
        config,
    )
    assert math.fsum(c.share for c in r.claims) == pytest.approx(r.additive_uncapped)
    for k in r.dimension_scores:
        parts = sum(part for _, part in r.dimension_claims[k])
        assert parts == pytest.approx(r.dimension_scores[k])


def test_explanation_names_drivers_and_the_binding_floor(config):
    r = score_response(
        response(
            claim("a", "SUPPORTED"),
            claim("b", "UNSUPPORTED", v=2),
            claim("c", ("CONTRADICTED", ("F", "C")), v=3),
        ),
        config,
    )
    ex = r.explanation()
    assert ex["driving_claims"][0]["claim_id"] == "c"
    assert ex["driving_dimensions"][0]["dimension"] == "F"
    assert ex["binding_floor"] == {
        "claim_id": "c",
        "rule": "contradicted_high",
        "label": "CONTRADICTED",
        "floor": 0.7,
    }
    assert "contradicted_high" in ex["reason"] and "claim c" in ex["reason"]
    assert set(ex["aggregations"]) == {
        "additive",
        "hri_star",
        "multiplicative",
        "max_dimension",
        "max_claim",
    }


def test_all_aggregations_on_a_hand_computed_response(config):
    # Two claims, v = 1 each: UNSUPPORTED (U 0.75) and CONTRADICTED in F.
    r = score_response(response(claim("a", "UNSUPPORTED"), claim("b", "CONTRADICTED")), config)
    s_u, s_f = 0.375, 0.5
    assert r.aggregations["additive"] == pytest.approx(0.15 * s_u + 0.25 * s_f)
    assert r.aggregations["multiplicative"] == pytest.approx(
        1 - (1 - 0.15 * s_u) * (1 - 0.25 * s_f)
    )
    assert r.aggregations["max_dimension"] == pytest.approx(0.5)
    assert r.aggregations["max_claim"] == 1.0
    assert r.aggregations["hri_star"] == r.additive  # v = 1: no floor


# ------------------------------------------------------------------------ feedback


def test_feedback_feeds_h_with_decay_and_n_reviewed(config):
    ev = (event(30), event(100, severity=0.5))
    r = score_response(
        response(
            claim("a", "VALIDATED_NEGATIVE_FEEDBACK", feedback=ev),
            claim("b", "SUPPORTED"),
            n_reviewed=4,
        ),
        config,
    )
    expected = (math.exp(-0.01 * 30) + 0.5 * math.exp(-0.01 * 100)) / 4
    assert r.dimension_scores["H"] == pytest.approx(expected)
    assert r.weighted["H"] == pytest.approx(0.10 * expected)
    # The claim's own H contribution is its decayed severities, not divided by N.
    assert r.claims[0].contributions["H"] == pytest.approx(4 * expected)


def test_feedback_events_need_the_feedback_label_and_vice_versa(config):
    with pytest.raises(DataError, match=r"claim 'a' has feedback events but not the label"):
        score_response(response(claim("a", "UNSUPPORTED", feedback=(event(1),))), config)
    with pytest.raises(DataError, match=r"claim 'a': label VALIDATED_NEGATIVE_FEEDBACK needs"):
        score_response(response(claim("a", "VALIDATED_NEGATIVE_FEEDBACK")), config)


def test_future_feedback_is_an_error_naming_the_claim(config):
    with pytest.raises(DataError, match=r"claim 'a': feedback\[0\].*future"):
        score_response(
            response(claim("a", "VALIDATED_NEGATIVE_FEEDBACK", feedback=(event(-2),))), config
        )


def test_unvalidated_feedback_is_an_error_naming_the_claim(config):
    bad = FeedbackEvent(at=AS_OF - timedelta(days=1), validated_by=" ")
    with pytest.raises(DataError, match=r"claim 'a': feedback\[0\] has no validator"):
        score_response(response(claim("a", "VALIDATED_NEGATIVE_FEEDBACK", feedback=(bad,))), config)
    with pytest.raises(DataError, match=r"claim 'a'.*validated_by"):
        claim_from_mapping(
            {
                "claim_id": "a",
                "labels": ["VALIDATED_NEGATIVE_FEEDBACK"],
                "feedback": [{"at": "2026-06-01"}],
            },
            "f.yaml",
            "responses[0]",
        )


def test_feedback_without_a_scoring_time_is_an_error(config):
    r = Response(
        response_id="r", claims=(claim("a", "VALIDATED_NEGATIVE_FEEDBACK", feedback=(event(1),)),)
    )
    with pytest.raises(DataError, match="no as_of"):
        score_response(r, config)


def test_duplicate_claim_ids_are_rejected(config):
    with pytest.raises(DataError, match="duplicate claim_id 'a'"):
        score_response(response(claim("a", "SUPPORTED"), claim("a", "UNSUPPORTED")), config)
