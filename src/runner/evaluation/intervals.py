"""Confidence intervals every study computes the same way: percentile and Wilson.

Why one module: the group bootstrap (`runner.evaluation.bootstrap`), the HRI calibration
tables and the label-agreement statistics all report percentile intervals of resample
values, and the band tables report outcome rates with Wilson intervals; a second copy of
either would be a second definition of what "95 % interval" means in a table.
"""

from __future__ import annotations

import math
from decimal import Decimal

import numpy as np
from scipy.stats import norm


def percentile_interval(values: np.ndarray, level: float) -> tuple[float, float]:
    """The (1 − level)/2 and (1 + level)/2 quantiles of finite `values` (numpy's linear rule).

    Raises
    ------
    ValueError
        When `level` is not in (0, 1) or `values` is empty or not finite.
    """
    if not 0 < level < 1:
        raise ValueError(f"level must lie in (0, 1), got {level!r}")
    v = np.asarray(values, dtype=np.float64)
    if v.size == 0 or not np.isfinite(v).all():
        raise ValueError("interval needs finite resample values")
    tail = (1.0 - level) / 2.0
    low, high = np.quantile(v, [tail, 1.0 - tail])
    return float(low), float(high)


def wilson_interval(k: int, n: int, level: float) -> tuple[float, float]:
    """Wilson score interval of `k` successes in `n` trials, clipped to [0, 1]."""
    z = float(norm.ppf(0.5 + level / 2.0))
    p = k / n
    denom = 1.0 + z * z / n
    centre = (p + z * z / (2 * n)) / denom
    half = z * math.sqrt(p * (1 - p) / n + z * z / (4 * n * n)) / denom
    return max(0.0, centre - half), min(1.0, centre + half)


def confidence_text(delta: float) -> str:
    """1 - δ as text with the precision it has: ``0.9``, ``0.999999``, ``1 - 1e-09``.

    Why: ``f"{1 - delta:g}"`` prints δ = 1e-9 as "probability 1", a certainty no finite
    sample gives. The exact decimal difference is printed while it is short (up to six
    decimals), else ``1 - δ`` with δ as written (its shortest exact text).
    """
    text = format(Decimal(1) - Decimal(repr(float(delta))), "f")
    return text if len(text) <= len("0.999999") else f"1 - {float(delta)!r}"
