"""Validated feedback: time decay, the s_H formula, and what counts as validated."""

from __future__ import annotations

from datetime import UTC, date, datetime, timedelta

import pytest

from runner.data.hri_records import FeedbackEvent, event_from_mapping, parse_time
from runner.hri.feedback import decay_factor, event_age, feedback_score

AS_OF = datetime(2026, 7, 1, tzinfo=UTC)


def ev(days: float, severity: float | None = None) -> FeedbackEvent:
    return FeedbackEvent(at=AS_OF - timedelta(days=days), validated_by="r", severity=severity)


def test_decay_matches_hand_computed_values():
    # exp(-0.01 * 30) and exp(-0.05 * 10), by hand (calculator): 0.740818..., 0.606530...
    assert decay_factor(30, 0.01) == pytest.approx(0.7408182206817179, abs=1e-15)
    assert decay_factor(10, 0.05) == pytest.approx(0.6065306597126334, abs=1e-15)
    assert decay_factor(0, 0.3) == 1.0
    assert decay_factor(1e6, 0.0) == 1.0


def test_s_h_matches_the_seed_formula_by_hand():
    # (1 * e^-0.3 + 0.5 * e^-1) / max(1, 4) = (0.740818 + 0.183940) / 4
    score = feedback_score([("a", ev(30)), ("b", ev(100, 0.5))], AS_OF, 0.01, 4, 1.0)
    assert score.numerator == pytest.approx(0.7408182206817179 + 0.18393972058572117)
    assert score.value == pytest.approx(0.23118948531685977, abs=1e-15)
    assert [t.claim_id for t in score.terms] == ["a", "b"]
    assert not score.capped


def test_n_reviewed_zero_and_one_are_the_same():
    a = feedback_score([("a", ev(3))], AS_OF, 0.01, 0, 1.0)
    b = feedback_score([("a", ev(3))], AS_OF, 0.01, 1, 1.0)
    assert a.value == b.value == pytest.approx(0.9704455335485082)


def test_default_severity_applies_when_an_event_has_none():
    score = feedback_score([("a", ev(0))], AS_OF, 0.01, 0, 0.4)
    assert score.value == pytest.approx(0.4)


def test_s_h_is_capped_at_one_and_says_so():
    score = feedback_score([("a", ev(0)), ("a", ev(0)), ("b", ev(1))], AS_OF, 0.01, 1, 1.0)
    assert score.uncapped > 1
    assert score.value == 1.0
    assert score.capped


def test_time_unit_scales_the_age():
    e = ev(14)
    assert event_age(e, AS_OF, time_unit_days=7) == pytest.approx(2.0)
    score = feedback_score([("a", e)], AS_OF, 0.5, 0, 1.0, time_unit_days=7)
    assert score.value == pytest.approx(0.36787944117144233)  # e^-1


def test_future_events_and_missing_scoring_time_are_errors():
    with pytest.raises(ValueError, match=r"claim 'a', feedback\[0\].*after the scoring time"):
        feedback_score([("a", ev(-1))], AS_OF, 0.01, 0, 1.0)
    with pytest.raises(ValueError, match="no as_of"):
        feedback_score([("a", ev(1))], None, 0.01, 0, 1.0)


def test_negative_n_reviewed_and_bad_decay_are_errors():
    with pytest.raises(ValueError, match="n_reviewed"):
        feedback_score([], AS_OF, 0.01, -1, 1.0)
    with pytest.raises(ValueError, match="lambda"):
        decay_factor(1, -0.1)


@pytest.mark.parametrize(
    ("value", "expected"),
    [
        ("2026-06-01", datetime(2026, 6, 1, tzinfo=UTC)),
        ("2026-06-01T12:00:00Z", datetime(2026, 6, 1, 12, tzinfo=UTC)),
        ("2026-06-01T14:00:00+02:00", datetime(2026, 6, 1, 12, tzinfo=UTC)),
        (date(2026, 6, 1), datetime(2026, 6, 1, tzinfo=UTC)),
        (datetime(2026, 6, 1, 8), datetime(2026, 6, 1, 8, tzinfo=UTC)),
    ],
)
def test_times_are_read_as_utc(value, expected):
    assert parse_time(value, "x") == expected


def test_bad_time_is_an_error_naming_the_field():
    with pytest.raises(ValueError, match=r"feedback\.at: not an ISO 8601"):
        parse_time("last tuesday", "feedback.at")


def test_event_from_mapping_reads_a_validated_event():
    e = event_from_mapping(
        {
            "at": "2026-06-01",
            "validated_by": "qa-team",
            "severity": 0.5,
            "resolved": True,
            "validated_at": "2026-06-02",
        },
        "feedback[0]",
    )
    assert e.validated_by == "qa-team" and e.severity == 0.5 and e.resolved
    assert e.validated_at == datetime(2026, 6, 2, tzinfo=UTC)
    assert not event_from_mapping({"at": "2026-06-01", "validated_by": "x"}, "f").resolved


@pytest.mark.parametrize(
    ("raw", "message"),
    [
        ({"at": "2026-06-01"}, "validated_by: feedback without validation"),
        ({"at": "2026-06-01", "validated_by": ""}, "validated_by"),
        ({"at": "2026-06-01", "validated_by": "x", "validated": False}, "only validated"),
        ({"validated_by": "x"}, "missing event time"),
        (
            {"at": "2026-06-02", "validated_by": "x", "validated_at": "2026-06-01"},
            "before the event",
        ),
        ({"at": "2026-06-01", "validated_by": "x", "severity": 1.5}, "severity"),
        ({"at": "2026-06-01", "validated_by": "x", "resolved": "no"}, "resolved"),
        ({"at": "2026-06-01", "validated_by": "x", "sevrity": 1}, "unknown key"),
    ],
)
def test_bad_events_are_rejected(raw, message):
    with pytest.raises(ValueError, match=message):
        event_from_mapping(raw, "feedback[0]")
