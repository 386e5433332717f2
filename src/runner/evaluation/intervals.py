"""Confidence intervals every study computes the same way: percentile and Wilson.

Why one module: the group bootstrap (`runner.evaluation.bootstrap`), the HRI calibration
tables and the label-agreement statistics all report percentile intervals of resample
values, and the band tables report outcome rates with Wilson intervals; a second copy of
either would be a second definition of what "95 % interval" means in a table.
"""

from __future__ import annotations

import math

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
