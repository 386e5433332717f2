"""Has routed traffic moved away from the rows the thresholds were calibrated on?

Why a stated test: every guarantee of the contract (`runner.routing.contract.risk_control`) assumes
the routed rows are exchangeable with the calibration rows. Two things break that visibly
without labels: rows from a source the gate never saw, and a gate risk distribution that
no longer looks like the calibration one. The second is a two-sample Kolmogorov-Smirnov
test of the routed risks against the calibration risks, flagged at ``p < SHIFT_P``.

The registered model cannot carry every calibration score, so `risk_profile` keeps the
calibration risks' quantiles (every 0.5 %) and their count; `risk_shift` compares routed
risks with the CDF those quantiles interpolate, using the two-sample statistic's
asymptotic distribution at the effective size ``n·m / (n + m)``. With the full samples at
hand (`guarantee_check`) `risk_shift_samples` computes the statistic from both samples.

Rows of one context group (several answers to one question) have near-identical risks, so
they are not independent draws: with groups known, each side's size is its number of
groups, not rows (a row-count test flags about one in four in-distribution splits of
RAGTruth at p < 0.01). Routed traffic's grouping is unknown; its rows count as they are.
"""

from __future__ import annotations

from dataclasses import asdict, dataclass

import numpy as np

SHIFT_P = 0.01
"""Flag when the KS test's p-value is below this (a stated, fixed level)."""

PROFILE_PROBS = np.linspace(0.0, 1.0, 201)


@dataclass(frozen=True)
class ShiftTest:
    """The KS test of routed risks against the calibration risks, and the flag."""

    statistic: float
    p_value: float
    calibration_rows: int
    routed_rows: int
    level: float
    flagged: bool

    def to_dict(self) -> dict:
        """JSON-friendly form."""
        return asdict(self)


def risk_profile(risk: np.ndarray, groups: np.ndarray | None = None) -> dict:
    """Quantiles (every 0.5 %), row count and effective size (its groups, when given) of the
    calibration risks, for the model's metadata."""
    r = np.asarray(risk, dtype=np.float64)
    if r.size == 0 or not np.isfinite(r).all():
        raise ValueError("risk_profile needs a non-empty array of finite risks")
    size = r.size if groups is None else int(np.unique(np.asarray(groups).astype(str)).size)
    return {
        "rows": int(r.size),
        "effective_rows": int(size),
        "quantiles": [float(q) for q in np.quantile(r, PROFILE_PROBS)],
    }


def risk_shift(profile: dict, risk: np.ndarray, level: float = SHIFT_P) -> ShiftTest:
    """KS test of `risk` against the calibration CDF a `risk_profile` describes."""
    from scipy.special import kolmogorov

    r = np.sort(np.asarray(risk, dtype=np.float64))
    if r.size == 0:
        raise ValueError("risk_shift needs at least one routed risk")
    q = np.asarray(profile["quantiles"], dtype=np.float64)
    n_cal = int(profile.get("effective_rows", profile["rows"]))
    # CDF of the calibration risks, linear between the stored quantiles (flat where tied)
    cdf = np.interp(r, q, PROFILE_PROBS, left=0.0, right=1.0)
    m = r.size
    upper = np.arange(1, m + 1) / m - cdf
    lower = cdf - np.arange(0, m) / m
    stat = float(max(upper.max(), lower.max(), 0.0))
    effective = n_cal * m / (n_cal + m)
    p = float(min(1.0, kolmogorov(np.sqrt(effective) * stat)))
    return ShiftTest(stat, p, n_cal, m, level, p < level)


def risk_shift_samples(
    calibration: np.ndarray,
    routed: np.ndarray,
    calibration_groups: np.ndarray | None = None,
    routed_groups: np.ndarray | None = None,
    level: float = SHIFT_P,
) -> ShiftTest:
    """The two-sample KS test when both samples are at hand; with groups, each side's
    effective size is its number of groups."""
    from scipy.special import kolmogorov

    a = np.sort(np.asarray(calibration, dtype=np.float64))
    b = np.sort(np.asarray(routed, dtype=np.float64))
    if a.size == 0 or b.size == 0:
        raise ValueError("risk_shift_samples needs risks on both sides")
    both = np.concatenate([a, b])
    stat = float(
        np.abs(
            np.searchsorted(a, both, side="right") / a.size
            - np.searchsorted(b, both, side="right") / b.size
        ).max()
    )

    def size(x: np.ndarray, groups: np.ndarray | None) -> int:
        return x.size if groups is None else int(np.unique(np.asarray(groups).astype(str)).size)

    n, m = size(a, calibration_groups), size(b, routed_groups)
    p = float(min(1.0, kolmogorov(np.sqrt(n * m / (n + m)) * stat)))
    return ShiftTest(stat, p, n, m, level, p < level)
