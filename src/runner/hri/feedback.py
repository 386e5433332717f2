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
from datetime import datetime

from runner.data import FeedbackEvent

SECONDS_PER_DAY = 86_400.0


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
