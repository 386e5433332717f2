"""What the verifier cascade buys on labelled rows: gate alone, verifier alone, the cascade.

Why apart from `runner.routing.report.operating_tables`: the cascade needs a verifier's
scores, which the gate-only report never computes; keeping it here leaves the gate-only
report untouched when no verifier is configured. The cascade is scored from its real parts:
the gate's out-of-fold bands at the contract's budgets (``routing.review_budget`` /
``routing.accept_budget``, the thresholds `fit_gate` would set on the same scores), the
verifier called on the verify band only (`runner.routing.contract.cascade.score_band`), and,
for the verifier alone, the same verifier called on every row. Its ranking
(`runner.routing.contract.cascade.cascade_risk`) gets AUROC, AP and the report's budgets
like any gate; ms/example adds the band's share of the verifier's measured per-row cost to
the gate's.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

import numpy as np
import pandas as pd

from runner.evaluation import scopes
from runner.results import StudyResult
from runner.routing.contract import (
    budget_thresholds,
    cascade_risk,
    decide,
    final_decisions,
    score_band,
)
from runner.routing.report.operating_tables import accept_col, review_col
from runner.routing.route import realised

TITLE = "Cascade: gate on every row, verifier on its verify band (Combined, 95 % CI)"


def cascade_name(gate: str, verifier: str) -> str:
    """The cascade's column in ``scores.parquet`` and its row in the tables."""
    return f"{gate} -> {verifier}"


@dataclass(frozen=True)
class CascadeRun:
    """Scores and costs of one gate -> verifier cascade on a labelled frame.

    Attributes
    ----------
    gate, verifier, name : str
        The gate's and the verifier's names, and the cascade's (`cascade_name`).
    threshold : float
        The verifier threshold deciding verified rows (route's rule).
    verifier_alone : ndarray
        The verifier's risk on every row.
    cascade : ndarray
        The cascade's ranking score (`cascade_risk`).
    final : ndarray of str
        accept / review per row, as `route` decides it.
    band_share : float
        Share of rows sent to the verifier.
    ms_band, ms_alone : float
        The verifier's ms per row on the band, and on every row.
    """

    gate: str
    verifier: str
    name: str
    threshold: float
    verifier_alone: np.ndarray
    cascade: np.ndarray
    final: np.ndarray
    band_share: float
    ms_band: float
    ms_alone: float

    def runtime(self) -> dict[str, Any]:
        """The cascade's entry in the run's ``runtime``: who, at what threshold, what share
        went to the verifier, and its cost on the band and alone."""
        return {
            "gate": self.gate,
            "verifier": self.verifier,
            "threshold": self.threshold,
            "share_sent_to_verifier": self.band_share,
            "verifier_ms_per_verified_row": self.ms_band,
            "verifier_alone_ms_per_example": self.ms_alone,
        }


def run_cascade(
    scores: pd.DataFrame,
    frame: pd.DataFrame,
    gate: str,
    verifier_name: str,
    verifier: Any,
    review_budget: float,
    accept_budget: float,
    threshold: float,
) -> CascadeRun:
    """Score the verifier on every row and on the gate's verify band; rank the cascade."""
    if not np.array_equal(scores["example_id"].to_numpy(), frame["example_id"].to_numpy()):
        raise ValueError("scores and frame rows are not in the same order")
    gate_risk = scores[gate].to_numpy(np.float64)
    cut = budget_thresholds(gate_risk, review_budget, accept_budget)
    bands = decide(gate_risk, cut.review_at, cut.accept_at)
    alone = score_band(verifier, frame, np.ones(len(frame), dtype=bool))
    band = score_band(verifier, frame, bands == "verify")
    return CascadeRun(
        gate=gate,
        verifier=verifier_name,
        name=cascade_name(gate, verifier_name),
        threshold=threshold,
        verifier_alone=alone.risk,
        cascade=cascade_risk(gate_risk, band.risk, bands),
        final=final_decisions(bands, band.risk, threshold),
        band_share=band.rows_sent / len(frame),
        ms_band=band.ms_per_row,
        ms_alone=alone.ms_per_row,
    )


def add_cascade_table(
    result: StudyResult,
    stats: scopes.ScopeStats,
    run: CascadeRun,
    labels: np.ndarray,
    review_budgets: Sequence[float],
    accept_budgets: Sequence[float],
    gate_ms: float | None,
) -> None:
    """Rows gate / verifier / cascade: AP and the budgets (with CI), cost, route's decisions."""
    columns = ["AUROC", "AP", *map(review_col, review_budgets)]
    columns += [accept_col(a) for a in accept_budgets if a > 0]
    cascade_ms = None if gate_ms is None else gate_ms + run.band_share * run.ms_band
    rows = (
        (run.gate, gate_ms, 0.0, None),
        (run.verifier, run.ms_alone, 1.0, run.verifier_alone >= run.threshold),
        (run.name, cascade_ms, run.band_share, run.final == "review"),
    )
    for row, ms, share, reviewed in rows:
        for column in columns:
            est = stats.estimate(row, column, scopes.COMBINED)
            result.add("cascade", row, column, est.point, (est.low, est.high))
        result.add("cascade", row, "ms/example", ms)
        result.add("cascade", row, "share sent to verifier", share)
        at = f"@ verifier threshold {run.threshold:g}"
        got = None if reviewed is None else np.where(reviewed, "review", "accept")
        metrics = {} if got is None else realised(labels, got)
        share_reviewed = None if reviewed is None else float(reviewed.mean())
        result.add("cascade", row, f"review share {at}", share_reviewed)
        result.add("cascade", row, f"review precision {at}", metrics.get("review precision"))
        result.add("cascade", row, f"accepted risk {at}", metrics.get("accepted risk"))
