"""Operating points fixed before evaluation: review precision and accepted risk.

Why: a triage gate is used at a budget, not at every threshold. Reviewing the top-risk
fraction ρ of answers, `Prec_ρ` is the share of unfaithful answers among the ⌈ρn⌉
reviewed; accepting the lowest-risk fraction α unreviewed, `Risk_α` is the share of
unfaithful answers among the ⌈αn⌉ accepted (RAGScope protocol control 4; tables use
ρ = 10 %, α = 50 %, figures sweep ρ ∈ 5–30 % and α ∈ 50–90 %).

Tie rule. When the cut-off falls inside a block of tied scores, a gate that emits many
ties must not be helped (or hurt) by the order in which rows happen to arrive. The value
reported is the *expectation over all orderings of the tied rows*: blocks entirely inside
the selection count fully; the block straddling the cut-off contributes
`r · (positives in block / rows in block)` for the `r` rows of it that are taken. A
constant-score gate therefore scores exactly the base rate at every ρ and α. The result
does not depend on row order.

Counts. ⌈ρn⌉ is computed after rounding ρn to 9 decimals (0.07 × 100 → 7). With resample
weights, n is the resample's total weight (its number of rows, duplicates included) and a
tied block is the multiset of its duplicated rows, so a weighted value equals the
unweighted value on the explicitly duplicated sample.

Threshold rules (flagging every response with score ≥ t, for risk scores calibrated against
known outcomes, e.g. the HRI): candidate thresholds are the distinct scores plus "flag
nothing", `NOTHING` (+∞). The cost-optimal threshold minimises (cost_missed · FN +
cost_review · FP) / n, the highest threshold winning ties (fewest reviews); a recall
target r takes the highest threshold with recall ≥ r (always exists); a precision target p
the lowest threshold with precision ≥ p (the most recall at that precision), or `NOTHING`.
All take (B, n) resample weights from `runner.evaluation.bootstrap.resample_weights`, so
every statistic is computed on the same resamples and differences are paired.
"""

from __future__ import annotations

import math

import numpy as np

from runner.evaluation._checks import (
    ceil_count,
    check_fractions,
    checked_block_masses,
)
from runner.frames import check_labels

REVIEW_BUDGET = 0.10
"""ρ of RAGScope's Table VI: review the riskiest 10 %; also the routing contract's default."""
ACCEPT_BUDGET = 0.50
"""α of RAGScope's Table VI: accept the safest 50 %; also the routing contract's default."""

#: ρ grid for the review-precision curve (5 % to 30 % in 1-point steps).
RHO_GRID: np.ndarray = np.arange(5, 31) / 100
#: α grid for the accepted-risk curve (50 % to 90 % in 1-point steps).
ALPHA_GRID: np.ndarray = np.arange(50, 91) / 100


def _selected_positive_share(
    y: object, s: object, weights: object, fractions: np.ndarray, *, top: bool
) -> np.ndarray:
    """Expected share of positives among the first ⌈f·n⌉ rows, ranked by risk; (B, F)."""
    pos, neg = checked_block_masses(y, s, weights, descending=top)
    mass = pos + neg
    total = mass.sum(axis=1)
    empty = np.flatnonzero(total <= 0)
    if empty.size:
        raise ValueError(f"resample rows {empty.tolist()[:5]} have zero total weight")
    b, k = mass.shape
    cum = np.cumsum(mass, axis=1)
    cum_pos = np.cumsum(pos, axis=1)
    m = np.minimum(ceil_count(fractions[None, :], total[:, None]), total[:, None])
    # One searchsorted over all rows: shift row i's cumulative mass by i·(max total + 1).
    offset = (np.arange(b, dtype=np.float64) * (total.max() + 1.0))[:, None]
    flat_cum = (cum + offset).ravel()
    j = np.searchsorted(flat_cum, (m + offset).ravel(), side="left").reshape(m.shape)
    j = np.minimum(j - (np.arange(b) * k)[:, None], k - 1)
    rows = np.arange(b)[:, None]
    mass_j, pos_j = mass[rows, j], pos[rows, j]
    before = cum[rows, j] - mass_j
    pos_before = cum_pos[rows, j] - pos_j
    partial = np.divide((m - before) * pos_j, mass_j, out=np.zeros_like(pos_j), where=mass_j > 0)
    return (pos_before + partial) / m


def review_precision_grid_batched(
    y: object, s: object, weights: object, rhos: object = RHO_GRID
) -> np.ndarray:
    """Review precision for several ρ and every resample at once.

    Parameters
    ----------
    y : array of 0/1, shape (n,)
        Labels, 1 = unfaithful.
    s : array of float, shape (n,)
        Risk scores, larger = riskier (reviewed first).
    weights : array, shape (B, n)
        Multiplicity of each example in each resample.
    rhos : float or array of float in (0, 1]
        Reviewed fractions.

    Returns
    -------
    numpy.ndarray, shape (B, len(rhos))
        Expected share of positives among the top ⌈ρn⌉ (tie rule in the module docstring).
    """
    return _selected_positive_share(y, s, weights, check_fractions(rhos, name="rho"), top=True)


def accepted_risk_grid_batched(
    y: object, s: object, weights: object, alphas: object = ALPHA_GRID
) -> np.ndarray:
    """Accepted risk for several α and every resample at once; shape (B, len(alphas)).

    The mirror of `review_precision_grid_batched`: the same arguments, with `alphas` the
    accepted fractions and the lowest-risk ⌈αn⌉ taken instead of the highest (smaller
    score = safer, accepted first; tie rule in the module docstring).
    """
    return _selected_positive_share(y, s, weights, check_fractions(alphas, name="alpha"), top=False)


def review_precision_batched(y: object, s: object, weights: object, rho: float) -> np.ndarray:
    """Review precision at one ρ for every resample; shape (B,). See the grid version."""
    return review_precision_grid_batched(y, s, weights, [rho])[:, 0]


def accepted_risk_batched(y: object, s: object, weights: object, alpha: float) -> np.ndarray:
    """Accepted risk at one α for every resample; shape (B,). See the grid version."""
    return accepted_risk_grid_batched(y, s, weights, [alpha])[:, 0]


def review_precision_grid(y: object, s: object, rhos: object = RHO_GRID) -> np.ndarray:
    """Review precision at each ρ of `rhos` (default 5–30 %); shape (len(rhos),).

    Parameters
    ----------
    y : array of 0/1, shape (n,)
        Labels, 1 = unfaithful.
    s : array of float, shape (n,)
        Risk scores.
    rhos : float or array of float in (0, 1]
        Reviewed fractions.

    Returns
    -------
    numpy.ndarray
        One review precision per ρ.
    """
    n = check_labels(y).shape[0]
    return review_precision_grid_batched(y, s, np.ones((1, n)), rhos)[0]


def accepted_risk_grid(y: object, s: object, alphas: object = ALPHA_GRID) -> np.ndarray:
    """Accepted risk at each α of `alphas` (default 50–90 %); shape (len(alphas),).

    The unweighted `accepted_risk_grid_batched`; arguments as in `review_precision_grid`.
    """
    n = check_labels(y).shape[0]
    return accepted_risk_grid_batched(y, s, np.ones((1, n)), alphas)[0]


def review_precision(y: object, s: object, rho: float) -> float:
    """Share of positives among the ⌈ρn⌉ highest-risk examples (`Prec_ρ`).

    Parameters
    ----------
    y : array of 0/1, shape (n,)
        Labels, 1 = unfaithful.
    s : array of float, shape (n,)
        Risk scores, larger = riskier.
    rho : float in (0, 1]
        Reviewed fraction.

    Returns
    -------
    float
        Review precision; tied scores at the cut-off count by their block's positive rate.
    """
    return float(review_precision_grid(y, s, [rho])[0])


def accepted_risk(y: object, s: object, alpha: float) -> float:
    """Share of positives among the ⌈αn⌉ lowest-risk examples (`Risk_α`).

    The mirror of `review_precision`: `alpha` in (0, 1] is the accepted fraction and
    smaller scores are safer; tied scores at the cut-off count by their block's positive rate.
    """
    return float(accepted_risk_grid(y, s, [alpha])[0])


# --------------------------------------------------------------------------- threshold rules

NOTHING = math.inf
"""Threshold meaning "flag no response"."""


def _cumulative(
    y: np.ndarray, s: np.ndarray, weights: np.ndarray
) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """Distinct thresholds (descending) and cumulative TP / FP mass for s ≥ each, (B, K)."""
    order = np.argsort(-s, kind="stable")
    sorted_s = s[order]
    starts = np.flatnonzero(np.concatenate([[True], sorted_s[1:] != sorted_s[:-1]]))
    w = weights[:, order]
    ys = y[order]
    tp = np.cumsum(np.add.reduceat(w * ys, starts, axis=1), axis=1)
    fp = np.cumsum(np.add.reduceat(w * (1.0 - ys), starts, axis=1), axis=1)
    return sorted_s[starts], tp, fp


def _check(y: object, s: object, weights: object) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    y_arr = np.asarray(y, dtype=np.float64)
    s_arr = np.asarray(s, dtype=np.float64)
    w = np.atleast_2d(np.asarray(weights, dtype=np.float64))
    if y_arr.ndim != 1 or s_arr.shape != y_arr.shape or w.shape[1] != y_arr.shape[0]:
        raise ValueError(
            f"shapes do not match: y {y_arr.shape}, s {s_arr.shape}, weights {w.shape}"
        )
    if not np.isin(y_arr, (0.0, 1.0)).all():
        raise ValueError("y must hold 0/1 outcomes")
    if not np.isfinite(s_arr).all():
        raise ValueError("scores must be finite")
    return y_arr, s_arr, w


def cost_optimal_threshold(
    y: object, s: object, weights: object, cost_missed: float, cost_review: float
) -> tuple[np.ndarray, np.ndarray]:
    """Per resample, the threshold minimising expected cost per response, and that cost.

    Parameters
    ----------
    y, s : arrays (n,)
        Outcomes (1 = wrong) and risk scores.
    weights : array (B, n)
        Resample multiplicities (a single row of ones for the sample itself).
    cost_missed, cost_review : float
        Cost of a wrong response that is not flagged (FN) and of flagging a correct one
        (FP); both > 0.

    Returns
    -------
    thresholds, costs : arrays (B,)
        `NOTHING` where flagging nothing is cheapest.
    """
    if not (cost_missed > 0 and cost_review > 0):
        raise ValueError(f"costs must be > 0, got missed={cost_missed!r}, review={cost_review!r}")
    y_arr, s_arr, w = _check(y, s, weights)
    thr, tp, fp = _cumulative(y_arr, s_arr, w)
    pos = w @ y_arr
    total = w.sum(axis=1)
    cost = np.concatenate(
        [(cost_missed * pos)[:, None], cost_missed * (pos[:, None] - tp) + cost_review * fp], axis=1
    )
    cost = cost / total[:, None]
    best = np.argmin(cost, axis=1)
    candidates = np.concatenate([[NOTHING], thr])
    return candidates[best], cost[np.arange(cost.shape[0]), best]


def recall_threshold(y: object, s: object, weights: object, target: float) -> np.ndarray:
    """Per resample, the highest threshold with recall ≥ `target` (in (0, 1])."""
    if not 0 < target <= 1:
        raise ValueError(f"recall target must lie in (0, 1], got {target!r}")
    y_arr, s_arr, w = _check(y, s, weights)
    thr, tp, _ = _cumulative(y_arr, s_arr, w)
    recall = tp / (w @ y_arr)[:, None]
    ok = recall >= target - 1e-12
    return thr[np.argmax(ok, axis=1)]


def precision_threshold(y: object, s: object, weights: object, target: float) -> np.ndarray:
    """Per resample, the lowest threshold with precision ≥ `target`, else `NOTHING`."""
    if not 0 < target <= 1:
        raise ValueError(f"precision target must lie in (0, 1], got {target!r}")
    y_arr, s_arr, w = _check(y, s, weights)
    thr, tp, fp = _cumulative(y_arr, s_arr, w)
    flagged = tp + fp
    precision = np.divide(tp, flagged, out=np.zeros_like(tp), where=flagged > 0)
    ok = (precision >= target - 1e-12) & (flagged > 0)
    k = thr.shape[0]
    last = k - 1 - np.argmax(ok[:, ::-1], axis=1)
    return np.where(ok.any(axis=1), thr[last], NOTHING)


def flag_rule_point(
    y: object, flagged: object, weights: object, cost_missed: float, cost_review: float
) -> dict[str, np.ndarray]:
    """Precision, recall, flagged share and cost per response of a fixed flag rule.

    Parameters
    ----------
    y : array (n,)
    flagged : bool array (n,)
        Which responses the rule flags (e.g. band ≥ High).
    weights : array (B, n)

    Returns
    -------
    dict of arrays (B,)
        ``precision`` (NaN where nothing is flagged), ``recall``, ``flagged``, ``cost``.
    """
    y_arr, _, w = _check(y, np.zeros(np.asarray(y).shape[0]), weights)
    f = np.asarray(flagged, dtype=np.float64)
    tp = w @ (y_arr * f)
    fp = w @ ((1.0 - y_arr) * f)
    pos = w @ y_arr
    total = w.sum(axis=1)
    with np.errstate(invalid="ignore", divide="ignore"):
        precision = np.where(tp + fp > 0, tp / (tp + fp), np.nan)
    return {
        "precision": precision,
        "recall": tp / pos,
        "flagged": (tp + fp) / total,
        "cost": (cost_missed * (pos - tp) + cost_review * fp) / total,
    }
