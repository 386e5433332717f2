"""Ranking metrics: AUROC and average precision, single and batched over resamples.

Why a local implementation rather than scikit-learn: the group bootstrap needs 1,000
resamples × several gates × several scopes, and calling `roc_auc_score` once per resample
is far too slow. Here the scores are sorted once, each tied-score block's positive and
negative mass is summed per resample, and every resample's metric is computed at once.
A bootstrap resample drawn with replacement is a vector of integer multiplicities per
example, so the batched metrics are *weighted* metrics; with integer weights they equal
scikit-learn's value on the explicitly duplicated sample (the tests check this, ties
included).

Definitions (identical to scikit-learn's, ties included):

- AUROC = P(s⁺ > s⁻) + ½ P(s⁺ = s⁻) over positive/negative pairs (the trapezoidal ROC
  area; tied scores count one half).
- AP = Σ_k (R_k − R_{k−1}) · P_k over the distinct score thresholds k in descending order,
  where P_k and R_k are the precision and recall of flagging every example with
  score ≥ threshold k (step-wise, no interpolation).

Both are undefined when the labels hold one class; they then raise ValueError, never
return NaN. Values agree with scikit-learn to floating-point rounding (≤ 1e-12); with
integer weights the AUROC numerator and denominator here are exact.
"""

from __future__ import annotations

from collections.abc import Callable

import numpy as np
from sklearn.metrics import precision_recall_curve, roc_curve

from runner.evaluation._checks import checked_block_masses, describe_rows
from runner.frames import check_labels


def _require_two_classes(pos_total: np.ndarray, neg_total: np.ndarray, metric: str) -> None:
    bad = np.flatnonzero((pos_total <= 0) | (neg_total <= 0))
    if bad.size == 0:
        return
    if pos_total.shape[0] == 1:
        which = "positives" if pos_total[0] <= 0 else "negatives"
        raise ValueError(
            f"{metric} is undefined: the labels hold one class (no {which}); "
            "it needs at least one positive (1) and one negative (0)"
        )
    raise ValueError(
        f"{metric} is undefined for resamples with one class; resample rows {describe_rows(bad)} "
        "have no positives or no negatives (the bootstrap redraws such resamples)"
    )


def indices_to_weights(indices: object, n: int) -> np.ndarray:
    """Turn (B, m) arrays of resampled row indices into (B, n) multiplicity weights.

    Parameters
    ----------
    indices : array of int, shape (B, m)
        Row positions drawn for each resample (with replacement).
    n : int
        Number of rows in the original sample.

    Returns
    -------
    numpy.ndarray of float, shape (B, n)
        How often each row occurs in each resample.
    """
    idx = np.asarray(indices)
    if idx.ndim != 2:
        raise ValueError(f"indices must be a (B, m) matrix, got shape {idx.shape}")
    if not np.issubdtype(idx.dtype, np.integer):
        raise ValueError(f"indices must be integers, got dtype {idx.dtype}")
    if idx.size and (idx.min() < 0 or idx.max() >= n):
        raise ValueError(f"indices must lie in [0, {n}), got range [{idx.min()}, {idx.max()}]")
    b = idx.shape[0]
    flat = (idx + n * np.arange(b)[:, None]).ravel()
    return np.bincount(flat, minlength=b * n).reshape(b, n).astype(np.float64)


def auroc_batched(y: object, s: object, weights: object) -> np.ndarray:
    """Weighted AUROC for every resample at once.

    Parameters
    ----------
    y : array of 0/1, shape (n,)
        Labels, 1 = unfaithful (positive).
    s : array of float, shape (n,)
        Risk scores, larger = more likely positive.
    weights : array, shape (B, n)
        Multiplicity of each example in each resample (see `indices_to_weights`).

    Returns
    -------
    numpy.ndarray, shape (B,)
        AUROC per resample. Raises ValueError if any resample holds one class.
    """
    pos, neg = checked_block_masses(y, s, weights, descending=False)
    pos_total, neg_total = pos.sum(axis=1), neg.sum(axis=1)
    _require_two_classes(pos_total, neg_total, "AUROC")
    neg_below = np.cumsum(neg, axis=1) - neg
    wins = (pos * (neg_below + 0.5 * neg)).sum(axis=1)
    return wins / (pos_total * neg_total)


def average_precision_batched(y: object, s: object, weights: object) -> np.ndarray:
    """Weighted average precision (scikit-learn's step-wise AP) for every resample at once.

    Takes the arguments of `auroc_batched` and returns one AP per resample, shape (B,);
    raises ValueError if any resample holds one class.
    """
    pos, neg = checked_block_masses(y, s, weights, descending=True)
    pos_total, neg_total = pos.sum(axis=1), neg.sum(axis=1)
    _require_two_classes(pos_total, neg_total, "average precision")
    tp = np.cumsum(pos, axis=1)
    flagged = tp + np.cumsum(neg, axis=1)
    # A block with no positive mass adds nothing, so its precision (even if 0/0) is unused.
    precision = np.divide(tp, flagged, out=np.zeros_like(tp), where=flagged > 0)
    return (pos * precision).sum(axis=1) / pos_total


def auroc(y: object, s: object) -> float:
    """Area under the ROC curve, equal to `sklearn.metrics.roc_auc_score(y, s)`.

    Parameters
    ----------
    y : array of 0/1, shape (n,)
        Labels, 1 = unfaithful (positive). Must hold both classes.
    s : array of float, shape (n,)
        Risk scores, larger = more likely positive. Ties count one half.

    Returns
    -------
    float
        AUROC in [0, 1].
    """
    return _unweighted(auroc_batched, y, s)


def average_precision(y: object, s: object) -> float:
    """Average precision, equal to `sklearn.metrics.average_precision_score(y, s)`.

    Arguments as in `auroc`, except that tied scores form one threshold; AP in [0, 1].
    """
    return _unweighted(average_precision_batched, y, s)


def _unweighted(batched: Callable[..., np.ndarray], y: object, s: object) -> float:
    """A batched metric on the sample itself: one resample, every weight 1."""
    y_arr = check_labels(y).astype(np.float64)
    return float(batched(y_arr, s, np.ones((1, y_arr.shape[0])))[0])


def ranking_metrics(y: np.ndarray, s: np.ndarray, weights: np.ndarray) -> dict[str, np.ndarray]:
    """AUROC and AP per resample (weights (B, n)); see `runner.evaluation.metrics`."""
    return {"AUROC": auroc_batched(y, s, weights), "AP": average_precision_batched(y, s, weights)}


def roc_points(y: object, s: object) -> tuple[np.ndarray, np.ndarray]:
    """ROC curve (fpr, tpr), from (0, 0), collinear points dropped (scikit-learn)."""
    fpr, tpr, _ = roc_curve(np.asarray(y), np.asarray(s), drop_intermediate=True)
    return fpr, tpr


def pr_points(y: object, s: object) -> tuple[np.ndarray, np.ndarray]:
    """Precision-recall curve (recall, precision) in increasing recall (scikit-learn)."""
    precision, recall, _ = precision_recall_curve(np.asarray(y), np.asarray(s))
    return recall[::-1], precision[::-1]
