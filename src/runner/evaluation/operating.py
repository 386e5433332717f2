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
"""

from __future__ import annotations

import numpy as np

from runner.evaluation._checks import (
    ceil_count,
    check_fractions,
    check_labels,
    checked_block_masses,
)

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
