"""Inter-annotator agreement for claim labels: Cohen's kappa and Krippendorff's alpha.

Why: seed 001 asks that claims be labelled by at least two annotators and that agreement
be reported, "since the reliability of HRI depends on the consistency of claim extraction
and labeling"; the claim-verification study (seed 004) needs the same statistics for its
green / yellow / red labels and its judges. Both live here so every study computes them
the same way.

- `cohen_kappa`: two raters, every item labelled by both. κ = (p_o − p_e) / (1 − p_e)
  with chance agreement p_e from the raters' marginals; optional linear or quadratic
  weights for ordered labels (same definition as `sklearn.metrics.cohen_kappa_score`).
- `krippendorff_alpha`: any number of raters, missing ratings allowed (None or NaN).
  α = 1 − D_o / D_e from the coincidence matrix (Krippendorff, *Computing Krippendorff's
  Alpha-Reliability*, 2011); units with fewer than two ratings are not pairable and are
  left out, as the method prescribes (their count is returned). Metrics: nominal, ordinal
  (rank-based, over the given order of values) and interval.

Both raise ValueError, never return NaN, when the statistic is undefined (e.g. every
rating the same value, so chance disagreement is 0).
"""

from __future__ import annotations

import math
from collections.abc import Hashable, Sequence
from dataclasses import dataclass

import numpy as np


def _is_missing(value: object) -> bool:
    return value is None or (isinstance(value, float) and math.isnan(value))


def cohen_kappa(
    rater_a: Sequence[Hashable],
    rater_b: Sequence[Hashable],
    labels: Sequence[Hashable] | None = None,
    weights: str | None = None,
) -> float:
    """Cohen's kappa of two raters over the same items.

    Parameters
    ----------
    rater_a, rater_b : sequences of labels
        One label per item, same length, no missing values.
    labels : sequence, optional
        All categories, in order (the order matters for weighted kappa). Default: the
        sorted union of observed labels. A label outside `labels` is an error.
    weights : None, "linear" or "quadratic"
        Disagreement weights |i − j| or (i − j)² over the label order; None = unweighted.

    Returns
    -------
    float
        κ in [−1, 1].

    Raises
    ------
    ValueError
        Different lengths, no items, missing values, unknown labels or weights, or
        p_e = 1 (both raters always use one and the same label: κ undefined).
    """
    a, b = list(rater_a), list(rater_b)
    if len(a) != len(b):
        raise ValueError(f"raters label different numbers of items: {len(a)} vs {len(b)}")
    if not a:
        raise ValueError("no items to compare")
    for name, seq in (("rater_a", a), ("rater_b", b)):
        bad = [i for i, v in enumerate(seq) if _is_missing(v)]
        if bad:
            raise ValueError(
                f"{name} has missing labels at items {bad[:5]}; Cohen's kappa needs "
                "complete pairs (use krippendorff_alpha for missing data)"
            )
    cats = list(labels) if labels is not None else sorted(set(a) | set(b), key=repr)
    index = {c: i for i, c in enumerate(cats)}
    if len(index) != len(cats):
        raise ValueError(f"duplicate labels in {cats}")
    for name, seq in (("rater_a", a), ("rater_b", b)):
        unknown = sorted({v for v in seq if v not in index}, key=repr)
        if unknown:
            raise ValueError(f"{name} uses label(s) {unknown} not in labels {cats}")
    k = len(cats)
    confusion = np.zeros((k, k))
    np.add.at(confusion, ([index[v] for v in a], [index[v] for v in b]), 1.0)
    n = confusion.sum()
    expected = np.outer(confusion.sum(axis=1), confusion.sum(axis=0)) / n
    grid = np.abs(np.subtract.outer(np.arange(k), np.arange(k))).astype(np.float64)
    if weights is None:
        w = (grid > 0).astype(np.float64)
    elif weights == "linear":
        w = grid
    elif weights == "quadratic":
        w = grid**2
    else:
        raise ValueError(f"weights must be None, 'linear' or 'quadratic', got {weights!r}")
    expected_disagreement = float((w * expected).sum())
    if expected_disagreement == 0:
        raise ValueError(
            "Cohen's kappa is undefined: chance disagreement is 0 (both raters "
            "use a single, identical label)"
        )
    return 1.0 - float((w * confusion).sum()) / expected_disagreement


@dataclass(frozen=True)
class AlphaResult:
    """Krippendorff's alpha with the quantities behind it."""

    alpha: float
    observed_disagreement: float
    expected_disagreement: float
    pairable_values: int
    units: int
    unpairable_units: int
    values: tuple[Hashable, ...]


def krippendorff_alpha(
    ratings: Sequence[Sequence[Hashable]],
    level: str = "nominal",
    values: Sequence[Hashable] | None = None,
) -> AlphaResult:
    """Krippendorff's alpha for a raters × units reliability matrix.

    Parameters
    ----------
    ratings : sequence of sequences
        One row per rater, one column per unit; None or NaN = not rated.
    level : "nominal", "ordinal" or "interval"
        Difference metric δ²: nominal 1 for any two different values; ordinal
        (Σ_{g=c..k} n_g − (n_c + n_k)/2)² over the order of `values`; interval (c − k)²
        (values must be numbers).
    values : sequence, optional
        The value domain in order (needed to fix the order for "ordinal"); default the
        sorted observed values. A rating outside it is an error.

    Returns
    -------
    AlphaResult

    Raises
    ------
    ValueError
        Ragged rows, fewer than two raters, no pairable unit, unknown values or level, or
        zero expected disagreement (one value only: α undefined).
    """
    rows = [list(r) for r in ratings]
    if len(rows) < 2:
        raise ValueError(f"need at least two raters, got {len(rows)}")
    n_units = len(rows[0])
    if any(len(r) != n_units for r in rows):
        raise ValueError(
            f"every rater needs one entry per unit; row lengths {[len(r) for r in rows]}"
        )
    if n_units == 0:
        raise ValueError("no units")
    observed = sorted({v for r in rows for v in r if not _is_missing(v)}, key=_sort_key)
    domain = list(values) if values is not None else observed
    index = {v: i for i, v in enumerate(domain)}
    unknown = [v for v in observed if v not in index]
    if unknown:
        raise ValueError(f"rating(s) {unknown} not in values {domain}")
    k = len(domain)
    coincidence = np.zeros((k, k))
    unpairable = 0
    for u in range(n_units):
        unit = [index[r[u]] for r in rows if not _is_missing(r[u])]
        m = len(unit)
        if m < 2:
            unpairable += 1
            continue
        counts = np.bincount(unit, minlength=k).astype(np.float64)
        coincidence += (np.outer(counts, counts) - np.diag(counts)) / (m - 1)
    n_c = coincidence.sum(axis=1)
    n = float(n_c.sum())
    if n == 0:
        raise ValueError("no unit has two or more ratings: alpha is undefined")
    delta = _metric(level, domain, n_c)
    d_o = float((coincidence * delta).sum()) / n
    d_e = float((np.outer(n_c, n_c) * delta).sum()) / (n * (n - 1))
    if d_e == 0:
        raise ValueError(
            "Krippendorff's alpha is undefined: expected disagreement is 0 (all "
            "pairable ratings have one value)"
        )
    return AlphaResult(
        alpha=1.0 - d_o / d_e,
        observed_disagreement=d_o,
        expected_disagreement=d_e,
        pairable_values=round(n),
        units=n_units,
        unpairable_units=unpairable,
        values=tuple(domain),
    )


def _sort_key(v: object) -> tuple[int, object]:
    return (0, v) if isinstance(v, (int, float)) else (1, repr(v))


def _metric(level: str, domain: list, n_c: np.ndarray) -> np.ndarray:
    k = len(domain)
    if level == "nominal":
        return 1.0 - np.eye(k)
    if level == "interval":
        if not all(isinstance(v, (int, float)) and not isinstance(v, bool) for v in domain):
            raise ValueError("interval alpha needs numeric values")
        x = np.asarray(domain, dtype=np.float64)
        return np.subtract.outer(x, x) ** 2
    if level == "ordinal":
        cum = np.concatenate([[0.0], np.cumsum(n_c)])
        delta = np.zeros((k, k))
        for c in range(k):
            for j in range(c + 1, k):
                # Σ_{g=c..j} n_g − (n_c + n_j) / 2
                value = (cum[j + 1] - cum[c]) - (n_c[c] + n_c[j]) / 2.0
                delta[c, j] = delta[j, c] = value**2
        return delta
    raise ValueError(f"level must be 'nominal', 'ordinal' or 'interval', got {level!r}")
