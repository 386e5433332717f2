"""Validated human feedback and its time-decayed score s_H (seed 001, section V.A).

Why: the seed insists that feedback is not a popularity signal. Only events confirmed by a
reviewer, source check or adjudication count, and their weight decays with age so a
corrected system is not penalised forever:

    s_H = Σ_j q_j · exp(−λ · Δt_j) / max(1, N_reviewed)

with q_j the event's severity (default: the contribution of VALIDATED_NEGATIVE_FEEDBACK,
1.00 "before decay"), Δt_j its age at the scoring time ``as_of`` in units of
``time_unit_days`` days, λ ``hri.feedback.decay_lambda`` and N_reviewed the number of
reviewed responses in the evaluation window. Because every other s_k lies in [0, 1], s_H is
capped at 1 (the cap is reported, never silent).

An event without a validator (``validated_by``) is rejected, as is one dated after
``as_of`` or validated before it happened: there is no way to score unvalidated or future
feedback.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import dataclass
from datetime import UTC, date, datetime
from typing import Any

SECONDS_PER_DAY = 86_400.0


@dataclass(frozen=True)
class FeedbackEvent:
    """One validated negative feedback event on a claim.

    Attributes
    ----------
    at : datetime
        When the feedback was given (timezone-aware, UTC).
    validated_by : str
        Who or what validated it (reviewer, source check, adjudication); required.
    severity : float or None
        q_j in [0, 1]; None means the configured default severity.
    resolved : bool
        Whether the issue was fixed. Unresolved events can trigger a safety floor.
    validated_at : datetime or None
        When it was validated (must not precede `at`).
    note : str
        Free text.
    """

    at: datetime
    validated_by: str
    severity: float | None = None
    resolved: bool = False
    validated_at: datetime | None = None
    note: str = ""

    def to_dict(self) -> dict[str, Any]:
        """JSON-serialisable form (ISO 8601 times)."""
        return {
            "at": self.at.isoformat(),
            "validated_by": self.validated_by,
            "severity": self.severity,
            "resolved": self.resolved,
            "validated_at": None if self.validated_at is None else self.validated_at.isoformat(),
            "note": self.note,
        }


@dataclass(frozen=True)
class FeedbackTerm:
    """One event's term q_j · exp(−λ Δt_j) of the s_H numerator."""

    claim_id: str
    index: int
    age: float
    severity: float
    decay: float
    value: float


@dataclass(frozen=True)
class FeedbackScore:
    """s_H of one response, with every term that produced it."""

    terms: tuple[FeedbackTerm, ...]
    numerator: float
    denominator: float
    uncapped: float
    value: float

    @property
    def capped(self) -> bool:
        """True when the uncapped score exceeded 1 and was cut to 1."""
        return self.uncapped > self.value


def parse_time(value: Any, where: str) -> datetime:
    """Read an ISO 8601 date or datetime (str, date or datetime) as an aware UTC datetime.

    Naive times are taken to be UTC; a bare date means midnight UTC.

    Raises
    ------
    ValueError
        Naming `where` when the value is not a date or time.
    """
    if isinstance(value, datetime):
        dt = value
    elif isinstance(value, date):
        dt = datetime(value.year, value.month, value.day)
    elif isinstance(value, str) and value.strip():
        text = value.strip()
        if text.endswith(("Z", "z")):
            text = text[:-1] + "+00:00"
        try:
            dt = datetime.fromisoformat(text)
        except ValueError as exc:
            raise ValueError(f"{where}: not an ISO 8601 date or time: {value!r}") from exc
    else:
        raise ValueError(f"{where}: expected an ISO 8601 date or time, got {value!r}")
    if dt.tzinfo is None:
        dt = dt.replace(tzinfo=UTC)
    return dt.astimezone(UTC)


def decay_factor(age: float, decay_lambda: float) -> float:
    """exp(−λ · age), the weight of an event `age` time units old.

    Parameters
    ----------
    age : float
        Δt ≥ 0 in the configured time unit.
    decay_lambda : float
        λ ≥ 0.

    Returns
    -------
    float
        In (0, 1]; 1 for a fresh event or λ = 0.
    """
    if not (math.isfinite(age) and age >= 0):
        raise ValueError(f"feedback age must be a finite number >= 0, got {age!r}")
    if not (math.isfinite(decay_lambda) and decay_lambda >= 0):
        raise ValueError(f"decay lambda must be a finite number >= 0, got {decay_lambda!r}")
    return math.exp(-decay_lambda * age)


def event_age(event: FeedbackEvent, as_of: datetime, time_unit_days: float = 1.0) -> float:
    """Δt of an event at `as_of`, in units of `time_unit_days` days."""
    return (as_of - event.at).total_seconds() / (SECONDS_PER_DAY * time_unit_days)


def feedback_score(
    events: Sequence[tuple[str, FeedbackEvent]],
    as_of: datetime | None,
    decay_lambda: float,
    n_reviewed: int,
    default_severity: float,
    time_unit_days: float = 1.0,
) -> FeedbackScore:
    """s_H = min(1, Σ_j q_j exp(−λ Δt_j) / max(1, N_reviewed)).

    Parameters
    ----------
    events : sequence of (claim_id, FeedbackEvent)
        Every validated event of the response's claims.
    as_of : datetime or None
        Scoring time; required when there are events.
    decay_lambda : float
        λ per time unit.
    n_reviewed : int
        Reviewed responses in the evaluation window (0 and 1 are equivalent).
    default_severity : float
        q for events without a severity.
    time_unit_days : float
        Length of λ's time unit in days.

    Returns
    -------
    FeedbackScore

    Raises
    ------
    ValueError
        No `as_of` with events, an event after `as_of`, a severity outside [0, 1] or a
        negative `n_reviewed`.
    """
    if isinstance(n_reviewed, bool) or not isinstance(n_reviewed, int) or n_reviewed < 0:
        raise ValueError(f"n_reviewed must be an integer >= 0, got {n_reviewed!r}")
    terms = []
    if events and as_of is None:
        raise ValueError(
            f"claim {events[0][0]!r} has feedback events but the response has no "
            "as_of time to measure their age against"
        )
    index_in_claim: dict[str, int] = {}
    for claim_id, event in events:
        j = index_in_claim.get(claim_id, 0)
        index_in_claim[claim_id] = j + 1
        assert as_of is not None
        age = event_age(event, as_of, time_unit_days)
        if age < 0:
            raise ValueError(
                f"claim {claim_id!r}, feedback[{j}]: event at {event.at.isoformat()} "
                f"is after the scoring time as_of {as_of.isoformat()}"
            )
        q = default_severity if event.severity is None else event.severity
        if not 0 <= q <= 1:
            raise ValueError(
                f"claim {claim_id!r}, feedback[{j}]: severity must lie in [0, 1], got {q!r}"
            )
        d = decay_factor(age, decay_lambda)
        terms.append(FeedbackTerm(claim_id, j, age, float(q), d, float(q) * d))
    numerator = math.fsum(t.value for t in terms)
    denominator = float(max(1, n_reviewed))
    uncapped = numerator / denominator
    return FeedbackScore(tuple(terms), numerator, denominator, uncapped, min(1.0, uncapped))


EVENT_KEYS = ("at", "validated_by", "validated", "severity", "resolved", "validated_at", "note")


def event_from_mapping(raw: Any, where: str) -> FeedbackEvent:
    """Read one feedback event from a mapping (a claims-file entry).

    Keys: ``at`` (required), ``validated_by`` (required, non-empty), ``validated`` (if
    present must be true), ``severity`` (0–1), ``resolved`` (bool, default false: an event
    is unresolved until someone says otherwise), ``validated_at``, ``note``.

    Raises
    ------
    ValueError
        Naming `where` and the field: unknown keys, a missing or empty validator, an event
        marked not validated, a bad time or severity, validation before the event.
    """
    if not isinstance(raw, dict):
        raise ValueError(f"{where}: a feedback event must be a mapping, got {raw!r}")
    unknown = sorted(set(raw) - set(EVENT_KEYS))
    if unknown:
        raise ValueError(f"{where}: unknown key(s) {unknown}; allowed: {list(EVENT_KEYS)}")
    if "validated" in raw and raw["validated"] is not True:
        raise ValueError(
            f"{where}.validated: only validated feedback may be scored (seed 001, "
            f"V.A), got validated={raw['validated']!r}"
        )
    who = raw.get("validated_by")
    if not isinstance(who, str) or not who.strip():
        raise ValueError(
            f"{where}.validated_by: feedback without validation is not scored; "
            "name the reviewer, source check or adjudication that confirmed it"
        )
    if "at" not in raw:
        raise ValueError(f"{where}.at: missing event time")
    at = parse_time(raw["at"], f"{where}.at")
    validated_at = None
    if raw.get("validated_at") is not None:
        validated_at = parse_time(raw["validated_at"], f"{where}.validated_at")
        if validated_at < at:
            raise ValueError(
                f"{where}.validated_at: validated ({validated_at.isoformat()}) "
                f"before the event happened ({at.isoformat()})"
            )
    severity = raw.get("severity")
    if severity is not None:
        if (
            isinstance(severity, bool)
            or not isinstance(severity, (int, float))
            or not (0 <= severity <= 1)
        ):
            raise ValueError(f"{where}.severity: must be a number in [0, 1], got {severity!r}")
        severity = float(severity)
    resolved = raw.get("resolved", False)
    if not isinstance(resolved, bool):
        raise ValueError(f"{where}.resolved: must be true or false, got {resolved!r}")
    note = raw.get("note", "")
    if not isinstance(note, str):
        raise ValueError(f"{where}.note: must be a string, got {note!r}")
    return FeedbackEvent(
        at=at,
        validated_by=who.strip(),
        severity=severity,
        resolved=resolved,
        validated_at=validated_at,
        note=note,
    )
