"""An accept threshold valid by construction for grouped rows: a betting test per group.

Why: `runner.routing.contract.risk_control` counts answers to one context by an effective number
estimated from the same labels (a plug-in design effect), which makes its level
approximate. This test needs no such estimate. Its unit is the context group, and groups
are taken as independent draws from the population's groups:

- for a candidate set (risk <= t), group g has ``A_g`` accepted rows and ``E_g``
  hallucinated ones among them; the population accepted risk is ``E[E] / E[A]``, so
  "accepted risk > α" is ``E[Z] > 0`` with ``Z_g = E_g - α A_g``;
- ``Z_g`` lies in ``[-α B, (1 - α) B]`` for groups of at most ``B`` rows (``B``: the
  largest group among the calibration rows, taken as the bound for the population);
  ``U_g = (Z_g + α B) / B`` lies in [0, 1] with mean α exactly when the risk is α;
- the wealth ``prod (1 - λ_g (U_g - α))`` with predictable bets λ_g in
  ``[0, c / (1 - α)]`` is a nonnegative supermartingale under "accepted risk >= α", so by
  Ville's inequality it reaches ``1/δ`` with probability at most δ (Waudby-Smith & Ramdas
  2023; the bets are their fixed-sample predictable plug-in, c = 1/2). The wealth is
  averaged over a few fixed orders of the groups (a mean of e-values is an e-value);
- the candidates are nested sets tested in a fixed sequence from `start_rows` times the
  mean group size, as `risk_control` does with rows.

Exact: the level, for independent groups of at most ``B`` rows, at any sample size.
Approximate: nothing, but ``B`` is read from the calibration rows. The price is power: a
betting test pays ``log(1/δ)`` where an exact binomial test pays a normal quantile, so it
needs about two to three times the rows (`guarantee_check` measures it as a reference).
"""

from __future__ import annotations

import math

import numpy as np

from runner.routing.contract import start_rows

BET_CAP = 0.5
ORDERS = 4
"""Fixed orders of the groups the wealth is averaged over (seeded, label-blind)."""


def _wealth(u: np.ndarray, alpha: float, delta: float) -> np.ndarray:
    """Mean over `ORDERS` fixed group orders of each candidate's final wealth.

    `u`: (groups, candidates) in [0, 1]. Bets use the running mean and variance of the
    groups before each one (predictable), the fixed-sample plug-in size
    ``sqrt(2 log(1/δ) / (n σ²))``, and bet only while the running mean is below α.
    """
    n, k = u.shape
    cap = BET_CAP / (1.0 - alpha)
    log_delta = math.log(1.0 / delta)
    rng = np.random.default_rng(0)  # the orders depend on the number of groups alone
    total = np.zeros(k)
    for _ in range(ORDERS):
        x = u[rng.permutation(n)]
        log_w, s1, s2 = np.zeros(k), np.zeros(k), np.zeros(k)
        mu, var = np.full(k, 0.5), np.full(k, 0.25)
        for i in range(n):
            lam = np.where(mu < alpha, np.minimum(np.sqrt(2 * log_delta / (n * var)), cap), 0.0)
            log_w += np.log1p(-lam * (x[i] - alpha))
            s1 += x[i]
            s2 += (x[i] - mu) ** 2
            mu, var = (0.5 + s1) / (i + 2), (0.25 + s2) / (i + 2)
        total += np.exp(log_w)
    return total / ORDERS


def betting_accept_threshold(
    y: np.ndarray,
    risk: np.ndarray,
    groups: np.ndarray,
    alpha: float,
    delta: float,
    grid: int = 100,
) -> float:
    """The accept threshold (risk <= it) certified by the grouped betting test; -inf when
    no candidate is certified."""
    y = np.asarray(y, dtype=np.float64)
    risk = np.asarray(risk, dtype=np.float64)
    codes = np.unique(np.asarray(groups).astype(str), return_inverse=True)[1]
    sizes = np.bincount(codes)
    n, bound = risk.size, int(sizes.max())
    order = np.sort(risk)
    counts = sorted({math.ceil(round(k * n / grid, 9)) for k in range(1, grid + 1)})
    thresholds = np.unique([order[c - 1] for c in counts])
    rows = np.searchsorted(order, thresholds, side="right")
    thresholds = thresholds[rows >= start_rows(alpha, delta) * n / sizes.size]
    if not thresholds.size:
        return -math.inf
    accepted = risk[:, None] <= thresholds[None, :]
    a = np.zeros((sizes.size, thresholds.size))
    e = np.zeros_like(a)
    np.add.at(a, codes, accepted)
    np.add.at(e, codes, accepted * y[:, None])
    u = (e - alpha * a + alpha * bound) / bound
    failed = np.flatnonzero(_wealth(u, alpha, delta) < 1.0 / delta)
    passed = int(failed[0]) if failed.size else thresholds.size
    return float(thresholds[passed - 1]) if passed else -math.inf
