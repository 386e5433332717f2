"""Did `route` realise the shares its calibrated cascade's fit expected? Said loudly if not.

Why: `fit_gate` states what share of traffic a calibrated cascade accepts, leaves in
verify, reviews and sends to the verifier (`CascadeCalibration`, each share with an
interval); `route` is where a team sees whether that held. A share that moved beyond what
sampling explains means the traffic, the verifier or how it was applied is not what was
calibrated (issue 44: a fit that printed review 0.100 routed 65 % of rows to review), so
it is said where nobody can miss it: a log warning, ``summary.json`` (``cascade.shares``,
``flagged``), the run tag ``cascade_shares_flagged`` and the ``cascade_shares`` table
(fitted and realised shares with their intervals, also MLflow metrics).

The rule: a share is off when its fitted interval and its realised interval do not
overlap. The fitted one is the fit's (exact 95 %, on the calibration rows' effective
number given their context groups); the realised one is exact 95 % on the routed rows,
counted as independent (a stream does not count context groups). On a week of logs the
realised interval is narrow and the rule is "outside the fit's interval"; on a short file
its own scatter is not flagged.

A model registered before fit_gate kept the intervals still routes: its expected shares are
rebuilt from what it stored (accepted share, the review rule's share, the share sent to the
verifier — none when its threshold is -inf — and the rest in verify), each with an exact
95 % interval on ``training_data.rows`` counted as independent rows (its design effects
were not kept, so that interval can be narrower than a grouped one).
"""

from __future__ import annotations

import logging
import math
from dataclasses import dataclass
from typing import Any

import numpy as np

from runner.results import StudyResult
from runner.routing.contract.cascade import RoutedCascade
from runner.routing.contract.risk_control import SHARE_LEVEL, share_interval

log = logging.getLogger(__name__)

SHARES = {
    "accept": "accepted_share",
    "verify": "verify_share",
    "review": "review_share",
    "sent to verifier": "verifier_share",
}
"""Each compared share: its row in the table and summary, its key in the cascade metadata."""

FITTED = (
    f"exact {SHARE_LEVEL:.0%} (Clopper-Pearson) on the calibration rows, counted by their "
    "effective number given their context groups"
)
REBUILT = (
    f"exact {SHARE_LEVEL:.0%} (Clopper-Pearson) on training_data.rows counted as independent "
    "rows: the model was registered before fit_gate kept the shares' intervals"
)
ROUTED = f"exact {SHARE_LEVEL:.0%} (Clopper-Pearson) on the routed rows, counted as independent"


@dataclass(frozen=True)
class Fitted:
    """The shares a calibrated cascade's fit expects, their intervals, and how they were had."""

    shares: dict[str, float]
    intervals: dict[str, tuple[float, float]]
    basis: str


def fitted(metadata: dict[str, Any]) -> Fitted:
    """The expected shares of a calibrated cascade model (rebuilt for an older model)."""
    cal = metadata["cascade"]
    kept = cal.get("share_intervals")
    if kept:
        shares = {key: float(cal[key]) for key in SHARES.values()}
        intervals = {key: (float(kept[key][0]), float(kept[key][1])) for key in SHARES.values()}
        return Fitted(shares, intervals, FITTED)
    rows = int(metadata["training_data"]["rows"])
    accept = float(cal["accepted_share"])
    review = float(metadata["thresholds"]["review_share"])
    sends = float(cal["verifier_threshold"]) > -math.inf
    shares = {
        "accepted_share": accept,
        "verify_share": max(0.0, 1.0 - accept - review),
        "review_share": review,
        "verifier_share": float(cal["verifier_share"]) if sends else 0.0,
    }
    intervals = {key: share_interval(rows, share * rows) for key, share in shares.items()}
    return Fitted(shares, intervals, REBUILT)


def compare_shares(fit: Fitted, counts: dict[str, int], rows: int) -> dict[str, Any]:
    """Each share fitted beside realised (`counts`: rows per `SHARES` label out of `rows`
    routed), whether their intervals are disjoint, and one line saying which are."""
    shares, off = {}, []
    for label, key in SHARES.items():
        realised = counts[label] / rows
        low, high = share_interval(rows, counts[label])
        fit_low, fit_high = fit.intervals[key]
        gap = bool(high < fit_low or low > fit_high)
        shares[label] = {
            "fitted": fit.shares[key],
            "fitted_interval": [fit_low, fit_high],
            "realised": realised,
            "realised_interval": [low, high],
            "gap_beyond_intervals": gap,
        }
        if gap:
            off.append(
                f"{label} {realised:.3f} [{low:.3f}, {high:.3f}] on {rows:,} routed rows vs "
                f"{fit.shares[key]:.3f} [{fit_low:.3f}, {fit_high:.3f}] fitted"
            )
    why = "; ".join(off) if off else "every share within what the two intervals allow"
    return {
        "compared": True,
        "flagged": bool(off),
        "why": why,
        "fitted_interval": fit.basis,
        "realised_interval": ROUTED,
        "shares": shares,
    }


def route_shares(
    metadata: dict[str, Any], plan: RoutedCascade, final: np.ndarray, rows_sent: int
) -> dict[str, Any]:
    """The ``shares`` block of route's cascade summary: `compare_shares` for a calibrated cascade
    (`final`: each routed row's final decision), else why there is nothing to compare."""
    if not plan.calibrated:
        return {
            "compared": False,
            "flagged": False,
            "why": f"the verifier threshold comes from {plan.source}, not from a calibrated "
            "cascade: the fit states no shares to compare with",
        }
    if final.size == 0:
        return {"compared": False, "flagged": False, "why": "no routed rows"}
    counts = {band: int((final == band).sum()) for band in ("accept", "verify", "review")}
    counts["sent to verifier"] = rows_sent
    return compare_shares(fitted(metadata), counts, int(final.size))


def add_shares(result: StudyResult, block: dict[str, Any]) -> None:
    """The ``cascade_shares`` table and the run tag ``cascade_shares_flagged`` of a compared
    block; a loud warning when a share is off."""
    if not block["compared"]:
        return
    for label, share in block["shares"].items():
        result.add("cascade_shares", label, "fitted", share["fitted"], share["fitted_interval"])
        result.add(
            "cascade_shares", label, "realised", share["realised"], share["realised_interval"]
        )
        gap = float(share["gap_beyond_intervals"])
        result.add("cascade_shares", label, "gap beyond the intervals", gap)
    result.tags["cascade_shares_flagged"] = str(block["flagged"]).lower()
    if block["flagged"]:
        log.warning(
            "CASCADE SHARES OFF THE FIT: %s. This traffic is not routed as the cascade was "
            "calibrated: check the shift block, and that the verifier and its settings are "
            "the ones fit_gate calibrated with",
            block["why"],
        )
