"""Calibrating risk scores against known outcomes: curves, cut-offs, costs, bootstrap.

Why: seed 001 calls its bands "initial design thresholds" and names the tools to replace
them — ROC and precision-recall analysis and cost-sensitive threshold selection against
labelled outcomes. This module holds those tools for any score in [0, 1] with 0/1
outcomes (1 = the response was wrong); `runner.studies.hri_calibration` applies them.

Conventions:

- A threshold t flags every response with score ≥ t. Candidate thresholds are the
  distinct scores, plus "flag nothing", written as `NOTHING` (+∞) and reported as
  "above every score".
- Expected cost per response at t: (cost_missed · FN + cost_review · FP) / n. The
  cost-optimal threshold minimises it; among equal costs the highest threshold (fewest
  reviews) wins.
- Recall target r: the highest threshold whose recall is ≥ r (always exists).
  Precision target p: the lowest threshold whose precision is ≥ p (the most recall at
  that precision), or `NOTHING` when no threshold reaches p.
- Resamples come from the one bootstrap engine, `runner.evaluation.bootstrap`
  (`resample_weights`: each response its own group, drawn within strata); the statistics
  here take its (B, n) multiplicities, so every statistic is computed on the same
  resamples and differences between aggregations are paired.
"""

from __future__ import annotations

import math

import numpy as np
from sklearn.metrics import precision_recall_curve, roc_curve

from runner.evaluation.metrics import auroc_batched, average_precision_batched

NOTHING = math.inf
"""Threshold meaning "flag no response"."""


def ranking_metrics(y: np.ndarray, s: np.ndarray, weights: np.ndarray) -> dict[str, np.ndarray]:
    """AUROC and AP per resample (weights (B, n)); see `runner.evaluation.metrics`."""
    return {"AUROC": auroc_batched(y, s, weights), "AP": average_precision_batched(y, s, weights)}


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


def operating_point(
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


def roc_points(y: object, s: object) -> tuple[np.ndarray, np.ndarray]:
    """ROC curve (fpr, tpr), from (0, 0), collinear points dropped (scikit-learn)."""
    fpr, tpr, _ = roc_curve(np.asarray(y), np.asarray(s), drop_intermediate=True)
    return fpr, tpr


def pr_points(y: object, s: object) -> tuple[np.ndarray, np.ndarray]:
    """Precision-recall curve (recall, precision) in increasing recall (scikit-learn)."""
    precision, recall, _ = precision_recall_curve(np.asarray(y), np.asarray(s))
    return recall[::-1], precision[::-1]
