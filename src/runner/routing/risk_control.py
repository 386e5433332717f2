"""Thresholds that carry a stated risk bound: Learn-Then-Test with exact binomial tests.

Why this and not a budget: a budget says how many rows are accepted, not how many of them
are hallucinated. Here each side of the contract is certified on labelled out-of-fold
scores so that, with probability at least 1 - δ over the calibration rows, the
*population* rate holds for traffic exchangeable with them:

- accept side: the share of hallucinated rows among accepted ones (the accepted risk)
  is <= α (``routing.max_accepted_risk``);
- review side: the share of hallucinated rows among reviewed ones (review precision) is
  >= β (``routing.min_review_precision``), i.e. the faithful share among them <= 1 - β;
- the cascade: the *final* accepted risk (rows the gate accepts plus verify-band rows the
  verifier accepts) is <= α (`calibrate_cascade`).

How (Learn-Then-Test, Angelopoulos et al. 2021): each candidate threshold is a null
hypothesis "this set's error rate > target", tested with the exact binomial p-value
``P(Bin(m, target) <= k)`` for k errors among the m rows the candidate selects (given m,
the selected rows' labels are i.i.d. under exchangeability, so the test is exact). The
candidates are nested sets (1 %, 2 %, ... of rows), tested in a fixed order from small to
large (fixed-sequence testing): every candidate up to the first that fails is certified,
and the family-wise error stays <= δ whatever the order, because the order is fixed before
the labels are seen. The order starts at `start_rows` rows, not at 1 %: a set too small to
certify anything would stop the sequence on its first step. MAPIE's controller
(Bonferroni-Holm over the candidates with Hoeffding-Bentkus p-values) was used before; on
RAGTruth at α = δ = 0.1 it certified about 2 % of rows where this certifies about 18 %.

Two sides at once split δ (a union bound: each side gets δ/2); the cascade splits its δ
between the gate-alone path and the verifier paths (`CASCADE_VERIFIER_SHARE`).
Infeasible targets are not silently turned into "accept nothing": `Certified.feasible`
is False and `best_achievable` says the tightest target these rows can certify.
"""

from __future__ import annotations

import math
from dataclasses import asdict, dataclass

import numpy as np
from scipy.stats import binom

CASCADE_VERIFIER_SHARE = 0.1
"""Share of the cascade's δ spent on the verifier paths (the gate-alone path keeps the rest)."""

CASCADE_ANCHORS = tuple(k / 20 for k in range(0, 11))
"""Gate accept shares (0, 5 %, ..., 50 %) after which a verifier path lets the verifier accept
(at 0 the gate accepts nothing itself and the verifier decides every row below review)."""

VERIFIER_STEPS = tuple(k / 20 for k in range(1, 21))
"""Shares of the verify band (lowest verifier risk first) a verifier path accepts, in order."""


@dataclass(frozen=True)
class Certified:
    """One side's certified set, what it gave on the calibration rows, and the bound.

    ``threshold`` is where the set ends (accept: risk <= threshold; review: risk >=
    threshold); ``-inf`` (accept) / ``+inf`` (review) when nothing is certified.
    ``upper_bound`` is the exact (Clopper-Pearson) upper confidence bound of the set's
    error rate at the level tested; ``feasible`` is False when no candidate was certified.
    The error is a hallucinated row on the accept side and a faithful row on the review
    side, so there ``empirical``/``upper_bound``/``target`` are 1 - review precision.
    """

    side: str
    threshold: float
    share: float
    rows: int
    errors: int
    empirical: float | None
    upper_bound: float | None
    target: float
    delta: float
    start_rows: int
    candidates: int
    certified: int

    @property
    def feasible(self) -> bool:
        """Whether any set was certified."""
        return self.certified > 0

    def to_dict(self) -> dict:
        """JSON-friendly form (infinite thresholds as strings)."""
        out = asdict(self)
        out["threshold"] = _finite_or_str(self.threshold)
        out["feasible"] = self.feasible
        return out


def _finite_or_str(x: float) -> float | str:
    return str(x) if isinstance(x, float) and math.isinf(x) else x


def binomial_pvalue(errors: np.ndarray, rows: np.ndarray, target: float) -> np.ndarray:
    """p-value of "error rate > target" given `errors` among `rows` (exact, one-sided)."""
    rows = np.asarray(rows)
    p = binom.cdf(np.asarray(errors), rows, target)
    return np.where(rows > 0, p, 1.0)


def upper_bound(errors: int, rows: int, delta: float) -> float:
    """Exact (Clopper-Pearson) one-sided 1 - δ upper bound of an error rate."""
    if rows == 0:
        return 1.0
    if errors >= rows:
        return 1.0
    from scipy.stats import beta

    return float(beta.ppf(1.0 - delta, errors + 1, rows - errors))


def start_rows(target: float, delta: float) -> int:
    """Rows the fixed sequence starts at: the smallest set on which a set half as risky as
    the target is certified with probability >= 1 - δ.

    Fixed by (target, δ) alone, before any label is seen, so the order stays fixed. Smaller
    starts stop the sequence on noise at its first steps; larger ones give up small sets.
    """
    half, m = target / 2.0, 1
    while m < 10_000_000:
        k = np.arange(m + 1)
        certifiable = k[binom.cdf(k, m, target) <= delta]
        if certifiable.size and binom.cdf(certifiable[-1], m, half) >= 1.0 - delta:
            return m
        m = max(m + 1, int(m * 1.02))
    return m


def _sequence(errors: np.ndarray, rows: np.ndarray, target: float, delta: float) -> int:
    """How many leading candidates fixed-sequence testing certifies."""
    p = binomial_pvalue(errors, rows, target)
    failed = np.flatnonzero(p > delta)
    return int(failed[0]) if failed.size else int(p.size)


def _nested(y: np.ndarray, key: np.ndarray, grid: int, first: int) -> tuple:
    """Candidate sets {key <= t} growing by 1/grid of the rows, from `first` rows on.

    Returns (thresholds, rows, errors) per candidate, with ties kept whole (a threshold
    selects every row at or below it).
    """
    order = np.sort(key)
    n = order.size
    counts = sorted({math.ceil(round(k * n / grid, 9)) for k in range(1, grid + 1)})
    thresholds = np.unique([order[c - 1] for c in counts])
    rows = np.searchsorted(order, thresholds, side="right")
    keep = rows >= first
    thresholds, rows = thresholds[keep], rows[keep]
    sorted_y = y[np.argsort(key, kind="stable")]
    errors = np.concatenate([[0], np.cumsum(sorted_y)])[rows]
    return thresholds, rows, errors


def _certify(
    side: str, y_error: np.ndarray, key: np.ndarray, target: float, delta: float, grid: int
) -> Certified:
    n = key.size
    first = start_rows(target, delta)
    thresholds, rows, errors = _nested(y_error, key, grid, first)
    certified = _sequence(errors, rows, target, delta)
    if certified == 0:
        return Certified(side, -math.inf, 0.0, 0, 0, None, None, target, delta, first,
                         int(thresholds.size), 0)  # fmt: skip
    i = certified - 1
    m, k = int(rows[i]), int(errors[i])
    return Certified(
        side,
        float(thresholds[i]),
        m / n,
        m,
        k,
        k / m,
        upper_bound(k, m, delta),
        target,
        delta,
        first,
        int(thresholds.size),
        certified,
    )


def _check(y: np.ndarray, risk: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    labels = np.asarray(y, dtype=np.int64)
    r = np.asarray(risk, dtype=np.float64)
    if r.size == 0 or r.shape != labels.shape or not np.isfinite(r).all():
        raise ValueError("risk and labels must be equal-length arrays of finite numbers")
    return labels, r


def certify_accept(
    y: np.ndarray, risk: np.ndarray, max_risk: float, delta: float, grid: int = 100
) -> Certified:
    """The largest low-risk set whose accepted risk is <= `max_risk` with prob. 1 - δ."""
    labels, r = _check(y, risk)
    return _certify("accept", labels, r, float(max_risk), float(delta), grid)


def certify_review(
    y: np.ndarray, risk: np.ndarray, min_precision: float, delta: float, grid: int = 100
) -> Certified:
    """The largest high-risk set whose review precision is >= `min_precision` w.p. 1 - δ.

    The error of a reviewed row is being faithful (a reviewer's wasted look); its target is
    1 - `min_precision`. The threshold is on risk: review when risk >= threshold.
    """
    labels, r = _check(y, risk)
    c = _certify("review", 1 - labels, -r, 1.0 - float(min_precision), float(delta), grid)
    threshold = math.inf if not c.feasible else -c.threshold
    return Certified(**{**asdict(c), "threshold": threshold})


def best_achievable(side: str, y: np.ndarray, risk: np.ndarray, delta: float) -> float | None:
    """The tightest target this side can certify on these rows (None: none in (0, 1)).

    Accept: the smallest α with a certified set; review: the largest β.
    """
    certify = certify_accept if side == "accept" else certify_review
    grid = np.round(np.arange(0.001, 1.0, 0.001), 3)
    feasible = [t for t in grid if certify(y, risk, t, delta).feasible]
    if not feasible:
        return None
    return float(min(feasible)) if side == "accept" else float(max(feasible))


@dataclass(frozen=True)
class CascadeCalibration:
    """The cascade's three thresholds, chosen together, and what they give on calibration.

    A row is accepted when gate risk <= ``accept_at``, or when ``accept_at`` < gate risk <
    ``review_at`` (the verify band) and verifier risk < ``verifier_threshold``; every other
    band row goes to review (`runner.routing.cascade.final_decisions`).
    """

    accept_at: float
    review_at: float
    verifier_threshold: float
    accepted_share: float
    gate_accept_share: float
    verifier_accept_share: float
    verifier_share: float
    accepted_rows: int
    accepted_errors: int
    empirical_accepted_risk: float | None
    upper_bound: float | None
    max_accepted_risk: float
    delta: float
    path: str
    feasible: bool

    def to_dict(self) -> dict:
        """JSON-friendly form (infinite thresholds as strings)."""
        return {k: _finite_or_str(v) for k, v in asdict(self).items()}


def calibrate_cascade(
    y: np.ndarray,
    gate_risk: np.ndarray,
    verifier_risk: np.ndarray,
    review_at: float,
    max_accepted_risk: float,
    delta: float,
    grid: int = 100,
) -> CascadeCalibration:
    """Gate accept threshold and verifier threshold for a final accepted risk <= α w.p. 1 - δ.

    The family is a set of fixed sequences (paths), each tested with fixed-sequence testing
    and the paths combined by a weighted Bonferroni split of δ:

    - the gate-alone path (the verifier accepts nothing), at (1 - `CASCADE_VERIFIER_SHARE`)·δ:
      the gate's accept threshold as `certify_accept` sets it;
    - one verifier path per anchor gate share a in `CASCADE_ANCHORS`: the gate's accept
      shares up to a, then the verifier accepting the lowest-verifier-risk 5 %, 10 %, ...
      of the verify band (gate risk in (accept_at(a), review_at)), each at
      `CASCADE_VERIFIER_SHARE`·δ / len(anchors).

    Among every certified configuration, the one accepting the most rows, then the one
    sending the fewest rows to the verifier (the least verifier cost). The review threshold
    `review_at` is the review side's (set by its own rule) and stays fixed.
    """
    labels, g = _check(y, gate_risk)
    v = np.asarray(verifier_risk, dtype=np.float64)
    if v.shape != g.shape:
        raise ValueError("verifier_risk must have one score per row")
    n = g.size
    alpha, d = float(max_accepted_risk), float(delta)
    below_review = g < review_at
    d_gate = (1.0 - CASCADE_VERIFIER_SHARE) * d
    d_path = CASCADE_VERIFIER_SHARE * d / len(CASCADE_ANCHORS)
    options: list[tuple] = []  # (accepted rows, -band rows, config)

    def config(accept_at: float, vt: float, path: str, level: float) -> tuple:
        gate_acc = g <= accept_at
        band = ~gate_acc & below_review
        ver_acc = band & (v < vt)
        acc = gate_acc | ver_acc
        m, k = int(acc.sum()), int(labels[acc].sum())
        cal = CascadeCalibration(
            accept_at=float(accept_at),
            review_at=float(review_at),
            verifier_threshold=float(vt),
            accepted_share=m / n,
            gate_accept_share=float(gate_acc.mean()),
            verifier_accept_share=float(ver_acc.mean()),
            verifier_share=float(band.mean()),
            accepted_rows=m,
            accepted_errors=k,
            empirical_accepted_risk=k / m if m else None,
            upper_bound=upper_bound(k, m, level) if m else None,
            max_accepted_risk=alpha,
            delta=d,
            path=path,
            feasible=m > 0,
        )
        return (m, -int(band.sum()), cal)

    gate_path = _certify("accept", labels, g, alpha, d_gate, grid)
    gate_at = gate_path.threshold if gate_path.feasible else -math.inf
    options.append(config(min(gate_at, np.nextafter(review_at, -math.inf)), -math.inf,
                          "gate alone", d_gate))  # fmt: skip
    order = np.sort(g)
    first = start_rows(alpha, d_path)
    thresholds, rows, errors = _nested(labels, g, grid, 1)
    for anchor in CASCADE_ANCHORS:
        a_count = math.ceil(round(anchor * n, 9))
        anchor_at = float(order[a_count - 1]) if a_count else -math.inf
        if anchor_at >= review_at:
            continue
        steps = [(t, r, e) for t, r, e in zip(thresholds, rows, errors, strict=True)
                 if r >= first and t <= anchor_at]  # fmt: skip
        band = (g > anchor_at) & below_review
        band_v = np.sort(v[band])
        seq = [(float(t), -math.inf, int(r), int(e)) for t, r, e in steps]
        base_rows = int((g <= anchor_at).sum())
        base_err = int(labels[g <= anchor_at].sum())
        for share in VERIFIER_STEPS if band_v.size else ():
            cut = float(band_v[math.ceil(round(share * band_v.size, 9)) - 1])
            vt = float(np.nextafter(cut, math.inf))
            sel = band & (v < vt)
            seq.append((anchor_at, vt, base_rows + int(sel.sum()),
                        base_err + int(labels[sel].sum())))  # fmt: skip
        if not seq:
            continue
        passed = _sequence(np.array([s[3] for s in seq]), np.array([s[2] for s in seq]),
                           alpha, d_path)  # fmt: skip
        if passed:
            at, vt, _, _ = seq[passed - 1]
            options.append(config(at, vt, f"verifier after gate {100 * anchor:g} %", d_path))
    best = max(options, key=lambda o: (o[0], o[1]))
    return best[2]
