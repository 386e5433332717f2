"""Audit of accepted answers: estimate the accepted risk and judge it against the target.

The labels are loaded (and checked against the route run's decisions) by
`runner.data.audit_labels.load_audit_labels`.

Why exact binomial intervals: the audit sample is a seeded random sample of accepted rows
(`runner.routing.route.traffic.audit_sample`), so the hallucinated count among them is binomial;
Clopper-Pearson holds its coverage at the small sample sizes audits have.

Verdict: ``holds`` when the interval's upper end is at or below the target, ``violated``
when its lower end is above it, ``inconclusive`` otherwise (audit more rows).

This interval holds for one look at one sample. Audits that go on, batch after batch, are
judged by the running test of `runner.routing.audit.sequential` (anytime-valid, continued per
model version); the audit study reports both.
"""

from __future__ import annotations

from dataclasses import dataclass

import pandas as pd


@dataclass(frozen=True)
class AuditEstimate:
    """Accepted risk on the audit sample with its exact interval and the verdict."""

    rows: int
    hallucinated: int
    accepted_risk: float
    ci_low: float
    ci_high: float
    target: float | None
    verdict: str


def estimate(labels: pd.Series, target: float | None, level: float = 0.95) -> AuditEstimate:
    """Clopper-Pearson interval of the hallucinated share and the verdict against `target`."""
    from scipy.stats import binomtest

    n, k = len(labels), int(labels.sum())
    ci = binomtest(k, n).proportion_ci(confidence_level=level, method="exact")
    if target is None:
        verdict = "no target"
    elif ci.high <= target:
        verdict = "holds"
    elif ci.low > target:
        verdict = "violated"
    else:
        verdict = "inconclusive"
    return AuditEstimate(n, k, k / n, float(ci.low), float(ci.high), target, verdict)
