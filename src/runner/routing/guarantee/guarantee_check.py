"""Calibrate-then-route, repeated: does the contract's bound hold on held-out rows?

Why: `runner.routing.contract.risk_control` proves a bound under exchangeability; this module
measures what a team would see. One *split* puts a random share of the context groups in
calibration and routes rows of the others (a group never sits on both sides); the
contract is set on the calibration rows exactly as `fit_gate` sets it
(`contract_thresholds`, and `calibrate_cascade` with a verifier), then applied to the test
rows, whose realised accepted risk either exceeds the target (a *violation*) or not.

Beside each split's outcome: the risk-distribution shift test between the calibration and
the routed risks (`runner.routing.audit.shift`, the same stated test `route` runs) and whether
the routed rows come from a source the calibration rows never had. The references a
calibrated rule is judged against, both chosen with hindsight on the test rows:

- the *oracle fixed threshold*: one gate threshold for every split, the loosest whose
  violation rate over the splits is still <= δ (what the best fixed rule would have done
  had one known all test rows);
- the *per-split hindsight* share: in each split, the largest share of the test rows
  whose realised accepted risk is <= α (no rule can promise it: it has no guarantee).
"""

from __future__ import annotations

from dataclasses import asdict, dataclass
from typing import Any

import numpy as np
import pandas as pd
from scipy.stats import beta as beta_dist

from runner.routing.audit import risk_shift_samples
from runner.routing.contract import (
    calibrate_cascade,
    cascade_masks,
    codes_or_none,
    contract_thresholds,
    decide,
    effective_counts,
)
from runner.routing.guarantee.mapie_reference import mapie_accept_threshold

ORACLE_GRID = np.linspace(0.0, 1.0, 201)[1:]
"""Gate-risk quantiles (0.5 % steps of all rows) the oracle fixed threshold is chosen from."""


@dataclass(frozen=True)
class SplitOutcome:
    """What one calibrate-then-route split gave on its test rows (one method)."""

    scenario: str
    method: str
    split: int
    feasible: bool  # the accept side certified a set (else nothing is accepted)
    accepted_share: float
    accepted_risk: float | None
    violated: bool
    violation_established: bool
    review_share: float
    review_precision: float | None
    review_violated: bool | None
    verify_share: float
    sent_to_verifier: float
    ks_p: float
    ks_flag: bool
    unseen_flag: bool
    band_auroc: float | None = None  # cascade: the verifier's AUROC on the rows sent to it


def group_split(groups: np.ndarray, fraction: float, rng: np.random.Generator) -> np.ndarray:
    """A row mask: True for rows whose group drew into calibration (`fraction` of groups)."""
    unique = np.unique(groups)
    k = round(fraction * unique.size)
    if not 0 < k < unique.size:
        raise ValueError(
            f"calibration_fraction={fraction} leaves no group on one side of {unique.size} groups"
        )
    chosen = rng.choice(unique, size=k, replace=False)
    return np.isin(groups, chosen)


def _realised(
    y: np.ndarray,
    accepted: np.ndarray,
    reviewed: np.ndarray,
    alpha: float,
    beta: float | None,
    codes: np.ndarray | None,
) -> dict[str, Any]:
    """What the decisions gave on the test rows. A violation is *established* when even the
    exact 95 % lower bound of the test rows' accepted risk (their groups counted by their
    effective number) is above α: the test rows prove the bound broke, beyond their own
    sampling noise."""
    risk = float(y[accepted].mean()) if accepted.any() else None
    precision = float(y[reviewed].mean()) if reviewed.any() else None
    established = False
    if risk is not None and risk > alpha:
        m_eff, k_eff, _ = effective_counts(y, accepted, codes)
        established = float(beta_dist.ppf(0.05, k_eff, m_eff - k_eff + 1)) > alpha
    return {
        "accepted_share": float(accepted.mean()),
        "accepted_risk": risk,
        "violated": risk is not None and risk > alpha,
        "violation_established": established,
        "review_share": float(reviewed.mean()),
        "review_precision": precision,
        "review_violated": None if beta is None else precision is not None and precision < beta,
    }


def route_split(
    scenario: str,
    split: int,
    cal: dict[str, np.ndarray],
    test: dict[str, np.ndarray],
    routing: Any,
    reference: bool = False,
) -> list[SplitOutcome]:
    """Set the contract on `cal`, route `test`; the gate alone and, with ``verifier`` scores
    in both, the calibrated cascade; `reference` adds MAPIE's accept threshold (the review
    threshold kept) on the same rows (`runner.routing.guarantee.mapie_reference`).

    `cal` and `test` hold ``y``, ``risk`` (the gate's), ``group`` (context groups),
    ``source`` and optionally ``verifier`` (the verifier's risk).
    """
    alpha = float(routing.max_accepted_risk)
    beta = routing.min_review_precision if routing.review_rule == "precision_controlled" else None
    thresholds, guarantee = contract_thresholds(cal["y"], cal["risk"], routing, cal["group"])
    feasible = guarantee is None or guarantee.accept is None or guarantee.accept.feasible
    ks = risk_shift_samples(cal["risk"], test["risk"], cal["group"], test["group"])
    unseen = bool(set(np.unique(test["source"])) - set(np.unique(cal["source"])))
    flags = {"ks_p": ks.p_value, "ks_flag": ks.flagged, "unseen_flag": unseen}
    bands = decide(test["risk"], thresholds.review_at, thresholds.accept_at)
    codes = codes_or_none(test["group"])
    gate = _realised(test["y"], bands == "accept", bands == "review", alpha, beta, codes)
    verify = float(np.mean(bands == "verify"))
    out = [
        SplitOutcome(
            scenario, "gate", split, feasible, **gate, verify_share=verify,
            sent_to_verifier=0.0, **flags,
        )
    ]  # fmt: skip
    if reference:
        at = mapie_accept_threshold(cal["y"], cal["risk"], alpha, accept_delta(guarantee, routing))
        at = min(at, float(np.nextafter(thresholds.review_at, -np.inf)))
        bands_m = decide(test["risk"], thresholds.review_at, at)
        got = _realised(test["y"], bands_m == "accept", bands_m == "review", alpha, None, codes)
        out.append(
            SplitOutcome(
                scenario, "mapie", split, bool(np.isfinite(at)), **got,
                verify_share=float(np.mean(bands_m == "verify")), sent_to_verifier=0.0, **flags,
            )
        )  # fmt: skip
    if "verifier" in cal:
        delta = accept_delta(guarantee, routing)
        c = calibrate_cascade(
            cal["y"], cal["risk"], cal["verifier"], thresholds.review_at, alpha, delta,
            groups=cal["group"],
        )  # fmt: skip
        masks = cascade_masks(
            test["risk"], test["verifier"], c.accept_at, c.review_at, c.verifier_threshold
        )
        # reviewed rows are the review rule's (a row the verifier does not accept stays
        # verify), so the review bound is judged on the cascade's row as on the gate's
        final = _realised(test["y"], masks.accept, masks.review, alpha, beta, codes)
        out.append(
            SplitOutcome(
                scenario, "cascade", split, c.feasible, **final,
                verify_share=float(masks.verify.mean()),
                sent_to_verifier=float(masks.sent.mean()), **flags,
                band_auroc=band_auroc(test["y"], test["verifier"], bands == "verify"),
            )
        )  # fmt: skip
    return out


def band_auroc(y: np.ndarray, verifier: np.ndarray, band: np.ndarray) -> float | None:
    """The verifier's AUROC on the rows of the gate's verify band (where a cascade uses it);
    None when the band holds one class."""
    from sklearn.metrics import roc_auc_score

    y_band = np.asarray(y)[band]
    if len(np.unique(y_band)) < 2:
        return None
    return float(roc_auc_score(y_band, np.asarray(verifier)[band]))


def accept_delta(guarantee: Any, routing: Any) -> float:
    """The δ the accept side was certified at (δ/2 when the review side is controlled too)."""
    return guarantee.accept.delta if guarantee and guarantee.accept else float(routing.delta)


def hindsight_share(y: np.ndarray, risk: np.ndarray, alpha: float) -> float:
    """Largest share of these rows (cut at a threshold, ties whole) with accepted risk <= α."""
    order = np.argsort(risk, kind="stable")
    r, cum = risk[order], np.cumsum(y[order])
    ends = np.flatnonzero(np.append(r[1:] != r[:-1], True))  # last row of each tie block
    ok = ends[cum[ends] / (ends + 1) <= alpha]
    return float((ok.max() + 1) / r.size) if ok.size else 0.0


def oracle_fixed(
    tests: list[tuple[np.ndarray, np.ndarray]], all_risk: np.ndarray, alpha: float, delta: float
) -> dict[str, float]:
    """The loosest single gate threshold whose violation rate over `tests` is <= δ.

    `tests` holds each split's (y, risk) test rows; candidates are quantiles of
    `all_risk`. Returns its threshold, mean accepted share and violation rate.
    """
    best = {"threshold": -np.inf, "accepted_share": 0.0, "violation_rate": 0.0}
    for t in np.unique(np.quantile(all_risk, ORACLE_GRID, method="inverted_cdf")):
        shares, violated = [], []
        for y, r in tests:
            acc = r <= t
            shares.append(acc.mean())
            violated.append(bool(acc.any()) and y[acc].mean() > alpha)
        rate = float(np.mean(violated))
        if rate <= delta:
            best = {"threshold": float(t), "accepted_share": float(np.mean(shares)),
                    "violation_rate": rate}  # fmt: skip
    return best


def outcomes_frame(outcomes: list[SplitOutcome]) -> pd.DataFrame:
    """One row per (scenario, method, split)."""
    return pd.DataFrame([asdict(o) for o in outcomes])
