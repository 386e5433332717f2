"""Weight elicitation by the Analytic Hierarchy Process (Saaty), for the HRI dimensions.

Why: seed 001 (section IX) proposes eliciting the dimension weights from experts by AHP
pairwise comparisons when no incident data exist. An expert states, for each pair of
criteria (a, b), how much more important a is than b (Saaty's 1–9 scale, or any positive
ratio); the reciprocal matrix A (a_ab = judgment, a_ba = 1/judgment, a_aa = 1) yields

- weights: the principal right eigenvector of A, normalised to sum to 1;
- λ_max: its eigenvalue; consistency index CI = (λ_max − n) / (n − 1);
- consistency ratio CR = CI / RI(n), with Saaty's random index RI below. Judgments with
  CR above a limit (Saaty: 0.10) are too inconsistent to use and raise `ConfigError`.

For n ≤ 2 every reciprocal matrix is consistent (RI = 0) and CR is reported as 0.

Judgments are given as a nested mapping ``{a: {b: value}}`` with each unordered pair
exactly once (YAML, see `conf/hri/ahp.yaml`); values are positive numbers or fraction
strings such as ``"1/3"``.
"""

from __future__ import annotations

import math
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from fractions import Fraction
from typing import Any

import numpy as np

from runner.errors import ConfigError

#: Saaty's random consistency index RI(n) (Saaty 1980, Table 1.2; n = 1..15).
RANDOM_INDEX: dict[int, float] = {
    1: 0.0,
    2: 0.0,
    3: 0.58,
    4: 0.90,
    5: 1.12,
    6: 1.24,
    7: 1.32,
    8: 1.41,
    9: 1.45,
    10: 1.49,
    11: 1.51,
    12: 1.48,
    13: 1.56,
    14: 1.57,
    15: 1.59,
}


@dataclass(frozen=True)
class AHPResult:
    """Weights and consistency of one pairwise comparison matrix."""

    criteria: tuple[str, ...]
    matrix: np.ndarray
    weights: dict[str, float]
    lambda_max: float
    consistency_index: float
    random_index: float
    consistency_ratio: float
    cr_limit: float

    def to_dict(self) -> dict[str, Any]:
        """JSON-serialisable summary."""
        return {
            "criteria": list(self.criteria),
            "matrix": self.matrix.tolist(),
            "weights": dict(self.weights),
            "lambda_max": self.lambda_max,
            "consistency_index": self.consistency_index,
            "random_index": self.random_index,
            "consistency_ratio": self.consistency_ratio,
            "cr_limit": self.cr_limit,
        }


def pairwise_matrix(
    comparisons: Mapping[str, Mapping[str, Any]], criteria: Sequence[str], key: str = "ahp"
) -> np.ndarray:
    """Build the reciprocal comparison matrix from pairwise judgments.

    Parameters
    ----------
    comparisons : mapping ``{a: {b: value}}``
        How much more important `a` is than `b`; every unordered pair of `criteria`
        exactly once; values positive numbers or fraction strings (``"1/3"``).
    criteria : sequence of str
        Order of the matrix rows and columns.
    key : str
        Config key named in messages.

    Returns
    -------
    numpy.ndarray, shape (n, n)
        A with a_ab = value, a_ba = 1 / value, unit diagonal.
    """
    names = [str(c) for c in criteria]
    index = {c: i for i, c in enumerate(names)}
    if len(index) != len(names):
        raise ConfigError(f"{key}: duplicate criteria in {names}")
    n = len(names)
    a = np.eye(n)
    given: dict[frozenset[str], str] = {}
    for row, cols in comparisons.items():
        if row not in index:
            raise ConfigError(f"{key}.{row}: unknown criterion; criteria are {names}")
        if not isinstance(cols, Mapping):
            raise ConfigError(f"{key}.{row}: must map criteria to judgments, got {cols!r}")
        for col, raw in cols.items():
            where = f"{key}.{row}.{col}"
            if col not in index:
                raise ConfigError(f"{where}: unknown criterion; criteria are {names}")
            if col == row:
                raise ConfigError(f"{where}: a criterion is not compared with itself")
            pair = frozenset((row, col))
            if pair in given:
                raise ConfigError(
                    f"{where}: pair already given as {given[pair]}; give each "
                    "pair once (the reciprocal is implied)"
                )
            given[pair] = where
            value = _judgment(raw, where)
            a[index[row], index[col]] = value
            a[index[col], index[row]] = 1.0 / value
    missing = [
        f"{names[i]}-{names[j]}"
        for i in range(n)
        for j in range(i + 1, n)
        if frozenset((names[i], names[j])) not in given
    ]
    if missing:
        raise ConfigError(f"{key}: missing judgment(s) for pair(s) {missing}")
    return a


CR_LIMIT = 0.10
"""Saaty's limit on the consistency ratio: judgments above it are too inconsistent to use."""


def ahp_weights(
    comparisons: Mapping[str, Mapping[str, Any]] | np.ndarray,
    criteria: Sequence[str],
    cr_limit: float = CR_LIMIT,
    key: str = "ahp",
) -> AHPResult:
    """Principal-eigenvector weights and consistency ratio of pairwise judgments.

    Parameters
    ----------
    comparisons : mapping or ndarray
        Pairwise judgments (see `pairwise_matrix`) or an already built reciprocal matrix.
    criteria : sequence of str
        Criteria (e.g. the HRI dimensions), in matrix order.
    cr_limit : float
        Largest acceptable consistency ratio.
    key : str
        Config key named in messages.

    Returns
    -------
    AHPResult

    Raises
    ------
    ConfigError
        A matrix that is not positive and reciprocal, more than 15 criteria (no random
        index), or CR above `cr_limit`.
    """
    names = tuple(str(c) for c in criteria)
    if isinstance(comparisons, np.ndarray):
        a = np.asarray(comparisons, dtype=np.float64)
        _check_reciprocal(a, len(names), key)
    else:
        a = pairwise_matrix(comparisons, names, key)
    n = len(names)
    if n not in RANDOM_INDEX:
        raise ConfigError(f"{key}: {n} criteria; Saaty's random index is tabulated for 1..15")
    if not (math.isfinite(cr_limit) and cr_limit >= 0):
        raise ConfigError(f"{key}: cr_limit must be a finite number >= 0, got {cr_limit!r}")
    values, vectors = np.linalg.eig(a)
    k = int(np.argmax(values.real))
    lam = float(values[k].real)
    vec = np.abs(vectors[:, k].real)
    weights = vec / vec.sum()
    ri = RANDOM_INDEX[n]
    ci = (lam - n) / (n - 1) if n > 1 else 0.0
    if abs(ci) < 1e-12:  # a consistent matrix; eig may return λ_max a hair below n
        ci = 0.0
    cr = ci / ri if ri > 0 else 0.0
    if cr > cr_limit:
        raise ConfigError(
            f"{key}: judgments too inconsistent: consistency ratio CR = {cr:.4f} exceeds the "
            f"limit {cr_limit:g} (λ_max = {lam:.4f}, CI = {ci:.4f}, RI({n}) = {ri}); revise "
            "the comparisons"
        )
    return AHPResult(
        criteria=names,
        matrix=a,
        weights={c: float(w) for c, w in zip(names, weights, strict=True)},
        lambda_max=lam,
        consistency_index=float(ci),
        random_index=ri,
        consistency_ratio=float(cr),
        cr_limit=float(cr_limit),
    )


def _judgment(raw: Any, where: str) -> float:
    if isinstance(raw, bool):
        raise ConfigError(f"{where}: judgment must be a positive number, got {raw!r}")
    if isinstance(raw, str):
        try:
            value = float(Fraction(raw.strip()))
        except (ValueError, ZeroDivisionError) as exc:
            raise ConfigError(
                f"{where}: cannot read judgment {raw!r} (use e.g. 3 or '1/3')"
            ) from exc
    elif isinstance(raw, (int, float)):
        value = float(raw)
    else:
        raise ConfigError(f"{where}: judgment must be a number or a fraction string, got {raw!r}")
    if not (math.isfinite(value) and value > 0):
        raise ConfigError(f"{where}: judgment must be positive and finite, got {raw!r}")
    return value


def _check_reciprocal(a: np.ndarray, n: int, key: str) -> None:
    if a.shape != (n, n):
        raise ConfigError(f"{key}: matrix must be {n}x{n}, got shape {a.shape}")
    if not (np.isfinite(a).all() and (a > 0).all()):
        raise ConfigError(f"{key}: matrix entries must be positive and finite")
    if not np.allclose(np.diag(a), 1.0):
        raise ConfigError(f"{key}: matrix diagonal must be 1")
    if not np.allclose(a * a.T, 1.0, rtol=1e-9, atol=1e-12):
        i, j = np.argwhere(~np.isclose(a * a.T, 1.0, rtol=1e-9, atol=1e-12))[0]
        raise ConfigError(
            f"{key}: matrix is not reciprocal at ({i}, {j}): {a[i, j]} * {a[j, i]} != 1"
        )
