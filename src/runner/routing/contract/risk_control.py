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
  verifier accepts) is <= α (`calibrate_cascade`); only those accepts are certified, so a
  band row the verifier does not accept stays ``verify`` (`CascadeCalibration`).

How (Learn-Then-Test, Angelopoulos et al. 2021): each candidate threshold is a null
hypothesis "this set's error rate > target", tested with the exact binomial p-value
``P(Bin(m, target) <= k)`` for k errors among the m rows the candidate selects (given m,
the selected rows' labels are i.i.d. under exchangeability, so the test is exact). The
candidates are nested sets (1 %, 2 %, ... of rows), tested in a fixed order from small to
large (fixed-sequence testing): every candidate up to the first that fails is certified,
and the family-wise error stays <= δ whatever the order, because the order is fixed before
the labels are seen. The order starts at `start_rows` rows, not at 1 %: a set too small to
certify anything would stop the sequence on its first step. MAPIE's controller
(Bonferroni-Holm over the candidates with Hoeffding-Bentkus p-values) was used before; it
pays for every candidate and certifies far smaller sets (`guarantee_check` runs it beside
this one on the same splits: `runner.routing.guarantee.mapie_reference`).

What is exact and what is approximate:

- **exact**: with independent rows (no ``groups``) each candidate's binomial test is exact
  given the number of rows it selects, and fixed-sequence testing keeps the family-wise
  error <= δ; the bound then holds with probability >= 1 - δ for any population the
  calibration rows are exchangeable with.
- **approximate**: answers to one context are not independent (their labels move
  together). Given the rows' groups, counts are divided by a design effect
  (`effective_counts`) estimated from the same calibration labels (a cluster-robust
  variance ratio, floored at 1) and the binomial test is applied to the fractional
  counts. That is a plug-in, large-sample correction, not an exact test: its level rests
  on the estimate. It is measured on the quantity it bounds by `guarantee_check`'s
  population check (a labelled file as the population, its accepted risk known exactly
  for every draw), beside a test valid by construction for grouped rows
  (`runner.routing.guarantee.grouped_betting`), which needs about two to three times the rows for
  the same share.

Two sides at once split δ (a union bound: each side gets δ/2); the cascade splits its δ
between the gate-alone path and the verifier paths (`CASCADE_VERIFIER_SHARE`).
Infeasible targets are not silently turned into "accept nothing": `Certified.feasible`
is False and `best_achievable` says the tightest target these rows can certify.
"""

from __future__ import annotations

import functools
import math
from collections.abc import Callable, Sequence
from dataclasses import asdict, dataclass

import numpy as np
from scipy.special import betainc
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
    error rate at the level tested (on effective counts when rows are grouped, with
    ``design_effect`` the factor they were divided by); ``feasible`` is False when no
    candidate was certified.
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
    design_effect: float = 1.0

    @property
    def feasible(self) -> bool:
        """Whether a set was certified (and, when the other side's threshold limited the
        choice, one short of it)."""
        return self.rows > 0

    def to_dict(self) -> dict:
        """JSON-friendly form (infinite thresholds as strings)."""
        out = asdict(self)
        out["threshold"] = _finite_or_str(self.threshold)
        out["feasible"] = self.feasible
        return out


def _finite_or_str(x: float) -> float | str:
    return str(x) if isinstance(x, float) and math.isinf(x) else x


def binomial_pvalue(errors: np.ndarray, rows: np.ndarray, target: float) -> np.ndarray:
    """p-value of "error rate > target" given `errors` among `rows` (exact, one-sided).

    ``P(Bin(rows, target) <= errors)``, written as the regularised incomplete beta function
    so that effective (non-integer) counts of grouped rows (`effective_counts`) keep the
    same test; for whole counts it is the binomial CDF exactly.
    """
    m = np.asarray(rows, dtype=np.float64)
    k = np.asarray(errors, dtype=np.float64)
    with np.errstate(invalid="ignore", divide="ignore"):
        p = betainc(np.maximum(m - k, 1e-300), k + 1.0, 1.0 - target)
    return np.where((m > 0) & (k < m), p, 1.0)


def effective_counts(
    y: np.ndarray, selected: np.ndarray, codes: np.ndarray | None
) -> tuple[float, float, float]:
    """(effective rows, effective errors, design effect) of the selected rows.

    Rows of one context group (several answers to one question) are not independent: their
    labels move together, so a set of m grouped rows carries less evidence than m
    independent ones. The design effect is the cluster-robust variance of the set's error
    rate over the binomial one (at least 1); counts are divided by it (Kish's effective
    sample size), so the binomial test and bound stay the same functions of the counts.
    Without groups (`codes` None) the design effect is 1.
    """
    m_raw = int(selected.sum())
    k_raw = float(y[selected].sum())
    if codes is None or m_raw == 0:
        return float(m_raw), k_raw, 1.0
    g = codes[selected]
    m_g = np.bincount(g)
    k_g = np.bincount(g, weights=y[selected].astype(np.float64))
    active = m_g > 0
    m_g, k_g = m_g[active], k_g[active]
    p = k_raw / m_raw
    if m_g.size < 2 or p in (0.0, 1.0):
        return float(m_raw), k_raw, 1.0
    var = (m_g.size / (m_g.size - 1)) * np.sum((k_g - p * m_g) ** 2) / m_raw**2
    deff = max(1.0, float(var * m_raw / (p * (1.0 - p))))
    return m_raw / deff, k_raw / deff, deff


def upper_bound(errors: float, rows: float, delta: float) -> float:
    """Exact (Clopper-Pearson) one-sided 1 - δ upper bound of an error rate (effective counts
    of grouped rows are allowed, see `effective_counts`)."""
    if rows <= 0 or errors >= rows:
        return 1.0
    from scipy.stats import beta

    return float(beta.ppf(1.0 - delta, errors + 1, rows - errors))


@functools.lru_cache(maxsize=4096)
def start_rows(target: float, delta: float) -> int:
    """Rows the fixed sequence starts at: the smallest set on which a set half as risky as
    the target is certified with probability >= 1 - δ.

    Fixed by (target, δ) alone, before any label is seen, so the order stays fixed. Smaller
    starts stop the sequence on noise at its first steps; larger ones give up small sets.
    Remembered per (target, δ): a search for the tightest target (`tightest`) asks for the
    same few hundred pairs again and again, and a tight target's start takes a while.
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


def codes_or_none(groups: np.ndarray | None) -> np.ndarray | None:
    """Integer codes of the rows' context groups (None: rows are independent)."""
    if groups is None:
        return None
    return np.unique(np.asarray(groups).astype(str), return_inverse=True)[1]


@dataclass(frozen=True)
class _Candidates:
    """Nested candidate sets {key <= t} with raw and effective counts."""

    thresholds: np.ndarray
    rows: np.ndarray
    errors: np.ndarray
    eff_rows: np.ndarray
    eff_errors: np.ndarray
    deff: np.ndarray


def _nested(
    y: np.ndarray, key: np.ndarray, grid: int, first: int, codes: np.ndarray | None
) -> _Candidates:
    """Candidate sets {key <= t} growing by 1/grid of the rows, from `first` rows on (ties
    kept whole: a threshold selects every row at or below it)."""
    order = np.sort(key)
    n = order.size
    counts = sorted({math.ceil(round(k * n / grid, 9)) for k in range(1, grid + 1)})
    thresholds = np.unique([order[c - 1] for c in counts])
    rows = np.searchsorted(order, thresholds, side="right")
    thresholds, rows = thresholds[rows >= first], rows[rows >= first]
    stats = [effective_counts(y, key <= t, codes) for t in thresholds]
    eff = np.array(stats, dtype=np.float64).reshape(-1, 3)
    errors = np.array([int(y[key <= t].sum()) for t in thresholds], dtype=np.int64)
    return _Candidates(thresholds, rows, errors, eff[:, 0], eff[:, 1], eff[:, 2])


def _certify(
    side: str,
    y_error: np.ndarray,
    key: np.ndarray,
    target: float,
    delta: float,
    grid: int,
    codes: np.ndarray | None,
    limit: float = math.inf,
) -> Certified:
    """Fixed-sequence testing of the nested sets {key <= t}; the largest certified set with
    t < `limit` (every set fixed-sequence testing certifies is covered by its guarantee, so
    stopping short of a limit — the other side's threshold — keeps it)."""
    n = key.size
    first = start_rows(target, delta)
    c = _nested(y_error, key, grid, first, codes)
    certified = _sequence(c.eff_errors, c.eff_rows, target, delta)
    below = np.flatnonzero(c.thresholds[:certified] < limit)
    if below.size == 0:
        return Certified(side, -math.inf, 0.0, 0, 0, None, None, target, delta, first,
                         int(c.thresholds.size), certified)  # fmt: skip
    i = int(below[-1])
    m, k = int(c.rows[i]), int(c.errors[i])
    return Certified(
        side,
        float(c.thresholds[i]),
        m / n,
        m,
        k,
        k / m,
        upper_bound(float(c.eff_errors[i]), float(c.eff_rows[i]), delta),
        target,
        delta,
        first,
        int(c.thresholds.size),
        certified,
        float(c.deff[i]),
    )


def _check(y: np.ndarray, risk: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    labels = np.asarray(y, dtype=np.int64)
    r = np.asarray(risk, dtype=np.float64)
    if r.size == 0 or r.shape != labels.shape or not np.isfinite(r).all():
        raise ValueError("risk and labels must be equal-length arrays of finite numbers")
    return labels, r


def certify_accept(
    y: np.ndarray,
    risk: np.ndarray,
    max_risk: float,
    delta: float,
    grid: int = 100,
    groups: np.ndarray | None = None,
    below: float = math.inf,
) -> Certified:
    """The largest low-risk set whose accepted risk is <= `max_risk` with prob. 1 - δ.

    `groups` (the rows' context groups) makes the test count grouped rows by their
    effective number (`effective_counts`); without it rows are taken as independent.
    `below`: the set must end below this risk (the review threshold: a reviewed row is
    never accepted).
    """
    labels, r = _check(y, risk)
    codes = codes_or_none(groups)
    return _certify("accept", labels, r, float(max_risk), float(delta), grid, codes, below)


def certify_review(
    y: np.ndarray,
    risk: np.ndarray,
    min_precision: float,
    delta: float,
    grid: int = 100,
    groups: np.ndarray | None = None,
    above: float = -math.inf,
) -> Certified:
    """The largest high-risk set whose review precision is >= `min_precision` w.p. 1 - δ.

    The error of a reviewed row is being faithful (a reviewer's wasted look); its target is
    1 - `min_precision`. The threshold is on risk: review when risk >= threshold, which
    must be above `above` (the accept threshold of a budgeted accept side).
    """
    labels, r = _check(y, risk)
    codes = codes_or_none(groups)
    target = 1.0 - float(min_precision)
    c = _certify("review", 1 - labels, -r, target, float(delta), grid, codes, -above)
    threshold = math.inf if not c.feasible else -c.threshold
    return Certified(**{**asdict(c), "threshold": threshold})


TARGET_GRID = np.round(np.arange(0.001, 1.0, 0.001), 3)
"""Targets a search for the tightest one steps through: three decimals, printed exactly."""


def first_fit(candidates: Sequence[float], fits: Callable[[float], bool]) -> float | None:
    """The first of `candidates` that `fits` (None: not even the last).

    Fitting is taken as monotone along `candidates` (once one fits, every later one does),
    so a bisection asks `fits` about log2(n) times; whatever it returns, `fits` said True
    for it: a caller never suggests a target it did not try.
    """
    hi = len(candidates) - 1
    if hi < 0 or not fits(float(candidates[hi])):
        return None
    lo = 0
    if fits(float(candidates[lo])):
        return float(candidates[lo])
    while hi - lo > 1:  # invariant: not fits(candidates[lo]), fits(candidates[hi])
        mid = (lo + hi) // 2
        lo, hi = (lo, mid) if fits(float(candidates[mid])) else (mid, hi)
    return float(candidates[hi])


def tightest(side: str, fits: Callable[[float], bool]) -> float | None:
    """The tightest target on `TARGET_GRID` that `fits` (None: not even the loosest).

    Accept: the smallest α; review: the largest β (looser targets taken to fit more easily).
    """
    return first_fit(TARGET_GRID if side == "accept" else TARGET_GRID[::-1], fits)


def best_achievable(
    side: str, y: np.ndarray, risk: np.ndarray, delta: float, groups: np.ndarray | None = None
) -> float | None:
    """The tightest target this side can certify on these rows on its own, no rows taken by
    the other side (None: none in (0, 1)). Accept: the smallest α; review: the largest β."""
    certify = certify_accept if side == "accept" else certify_review
    return tightest(side, lambda t: certify(y, risk, t, delta, groups=groups).feasible)


SHARE_LEVEL = 0.95
"""Two-sided level of the interval each expected share of a calibrated cascade carries."""


def share_interval(rows: float, count: float, level: float = SHARE_LEVEL) -> tuple[float, float]:
    """Exact (Clopper-Pearson) two-sided `level` interval of a share, `count` of `rows`.

    Effective (non-integer) counts of grouped rows (`effective_counts`) are allowed, as in
    `upper_bound`: the beta quantiles are the binomial interval's for whole counts.
    """
    if rows <= 0:
        return 0.0, 1.0
    from scipy.stats import beta

    tail = (1.0 - level) / 2.0
    low = 0.0 if count <= 0 else float(beta.ppf(tail, count, rows - count + 1))
    high = 1.0 if count >= rows else float(beta.ppf(1.0 - tail, count + 1, rows - count))
    return low, high


@dataclass(frozen=True)
class CascadeMasks:
    """Where a calibrated cascade sends each row: ``accept``, ``verify`` and ``review``
    (exactly one per row) and ``sent`` (the rows the verifier scores)."""

    accept: np.ndarray
    verify: np.ndarray
    review: np.ndarray
    sent: np.ndarray


def cascade_masks(
    gate_risk: np.ndarray,
    verifier_risk: np.ndarray,
    accept_at: float,
    review_at: float,
    verifier_threshold: float,
) -> CascadeMasks:
    """The calibrated cascade's rule, row by row (`CascadeCalibration` says why).

    One function for the calibration, the operating report and the guarantee check, so
    the shares they state are the ones `route` realises (`runner.routing.contract.cascade`
    applies the same rule to the gate's decisions). `verifier_risk` is read only on the
    verify band, and not at all when `verifier_threshold` is -inf.
    """
    g = np.asarray(gate_risk, dtype=np.float64)
    gate_accepts = g <= accept_at
    review = g >= review_at
    band = ~gate_accepts & ~review
    sent = band & (verifier_threshold > -math.inf)
    with np.errstate(invalid="ignore"):
        verifier_accepts = sent & (np.asarray(verifier_risk, dtype=np.float64) < verifier_threshold)
    return CascadeMasks(gate_accepts | verifier_accepts, band & ~verifier_accepts, review, sent)


@dataclass(frozen=True)
class CascadeCalibration:
    """The cascade's three thresholds, chosen together, and what they give on calibration.

    A row is accepted when gate risk <= ``accept_at`` (by the gate), or when it lies in the
    verify band (``accept_at`` < gate risk < ``review_at``) and its verifier risk <
    ``verifier_threshold`` (by the verifier); reviewed when gate risk >= ``review_at`` (the
    review rule's rows, and only those); every other band row stays ``verify``. Why not
    review: the calibration certifies only the verifier's accepts; a band row it does not
    accept is neither certified safe nor certified at the review side's precision, so the
    cascade leaves it where the gate put it (`cascade_masks`; `route` applies the same rule,
    `runner.routing.contract.cascade.RoutedCascade`). A ``verifier_threshold`` of -inf (the
    gate-alone path) sends the verifier nothing.

    Shares are of the calibration rows: ``accepted_share`` (= ``gate_accept_share`` +
    ``verifier_accept_share``), ``verify_share`` and ``review_share`` sum to 1, and
    ``verifier_share`` is the share sent to the verifier (the verify band, or 0 when it
    accepts nothing). ``share_intervals`` maps each of the four to its exact two-sided
    `SHARE_LEVEL` interval (`share_interval`) on the rows' effective number given their
    context groups (`effective_counts` of the share's indicator): the spread of the share
    on traffic like these rows, which `route` compares its realised shares with.
    """

    accept_at: float
    review_at: float
    verifier_threshold: float
    accepted_share: float
    gate_accept_share: float
    verifier_accept_share: float
    verify_share: float
    review_share: float
    verifier_share: float
    share_intervals: dict[str, tuple[float, float]]
    accepted_rows: int
    accepted_errors: int
    empirical_accepted_risk: float | None
    upper_bound: float | None
    design_effect: float
    max_accepted_risk: float
    delta: float
    path: str
    feasible: bool

    def to_dict(self) -> dict:
        """JSON- and YAML-friendly form (infinite thresholds as strings, intervals as lists:
        the model's metadata is written as YAML, which has no tuples)."""
        out = {k: _finite_or_str(v) for k, v in asdict(self).items()}
        out["share_intervals"] = {k: list(v) for k, v in self.share_intervals.items()}
        return out


def _calibration(
    labels: np.ndarray,
    masks: CascadeMasks,
    codes: np.ndarray | None,
    thresholds: tuple[float, float, float],
    target: tuple[float, float, float],
    path: str,
) -> CascadeCalibration:
    """What one configuration gives on the calibration rows: shares with their intervals,
    the accepted rows' risk and its bound at the path's level.

    `thresholds` is (accept_at, review_at, verifier_threshold); `target` is (α, the
    cascade's δ, the level its path was tested at).
    """
    acc = masks.accept
    m, k = int(acc.sum()), int(labels[acc].sum())
    m_eff, k_eff, deff = effective_counts(labels, acc, codes)
    shares = {
        "accepted_share": acc,
        "verify_share": masks.verify,
        "review_share": masks.review,
        "verifier_share": masks.sent,
    }
    every = np.ones(labels.size, dtype=bool)
    intervals = {}
    for key, mask in shares.items():
        rows, count, _ = effective_counts(mask.astype(np.int64), every, codes)
        intervals[key] = share_interval(rows, count)
    alpha, delta, level = target
    return CascadeCalibration(
        accept_at=float(thresholds[0]),
        review_at=float(thresholds[1]),
        verifier_threshold=float(thresholds[2]),
        accepted_share=m / labels.size,
        gate_accept_share=float((acc & ~masks.sent).mean()),
        verifier_accept_share=float((acc & masks.sent).mean()),
        verify_share=float(masks.verify.mean()),
        review_share=float(masks.review.mean()),
        verifier_share=float(masks.sent.mean()),
        share_intervals=intervals,
        accepted_rows=m,
        accepted_errors=k,
        empirical_accepted_risk=k / m if m else None,
        upper_bound=upper_bound(k_eff, m_eff, level) if m else None,
        design_effect=deff,
        max_accepted_risk=alpha,
        delta=delta,
        path=path,
        feasible=m > 0,
    )


def calibrate_cascade(
    y: np.ndarray,
    gate_risk: np.ndarray,
    verifier_risk: np.ndarray,
    review_at: float,
    max_accepted_risk: float,
    delta: float,
    grid: int = 100,
    groups: np.ndarray | None = None,
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
    sending the fewest rows to the verifier (the least verifier cost: a configuration whose
    verifier accepts nothing sends it nothing). The review threshold `review_at` is the
    review side's (set by its own rule) and stays fixed. Only the accepted rows are
    certified: a verify-band row the verifier does not accept stays ``verify``, never
    ``review`` (`CascadeCalibration`), so the final shares are the accepted share, the
    review rule's share and the rest of the band.
    """
    labels, g = _check(y, gate_risk)
    v = np.asarray(verifier_risk, dtype=np.float64)
    if v.shape != g.shape:
        raise ValueError("verifier_risk must have one score per row")
    codes = codes_or_none(groups)
    n = g.size
    alpha, d = float(max_accepted_risk), float(delta)
    below_review = g < review_at
    d_gate = (1.0 - CASCADE_VERIFIER_SHARE) * d
    d_path = CASCADE_VERIFIER_SHARE * d / len(CASCADE_ANCHORS)

    def rank(accept_at: float, vt: float) -> tuple[int, int]:
        masks = cascade_masks(g, v, accept_at, review_at, vt)
        return int(masks.accept.sum()), -int(masks.sent.sum())

    gate_path = _certify("accept", labels, g, alpha, d_gate, grid, codes)
    gate_at = gate_path.threshold if gate_path.feasible else -math.inf
    gate_at = min(gate_at, float(np.nextafter(review_at, -math.inf)))
    options = [(gate_at, -math.inf, "gate alone", d_gate)]
    order = np.sort(g)
    first = start_rows(alpha, d_path)
    steps = _nested(labels, g, grid, first, codes)
    for anchor in CASCADE_ANCHORS:
        a_count = math.ceil(round(anchor * n, 9))
        anchor_at = float(order[a_count - 1]) if a_count else -math.inf
        if anchor_at >= review_at:
            continue
        on_path = steps.thresholds <= anchor_at
        seq_rows = list(steps.eff_rows[on_path])
        seq_errors = list(steps.eff_errors[on_path])
        configs = [(float(t), -math.inf) for t in steps.thresholds[on_path]]
        band = (g > anchor_at) & below_review
        band_v = np.sort(v[band])
        for share in VERIFIER_STEPS if band_v.size else ():
            cut = float(band_v[math.ceil(round(share * band_v.size, 9)) - 1])
            vt = float(np.nextafter(cut, math.inf))
            m_eff, k_eff, _ = effective_counts(labels, (g <= anchor_at) | (band & (v < vt)), codes)
            seq_rows.append(m_eff)
            seq_errors.append(k_eff)
            configs.append((anchor_at, vt))
        passed = _sequence(np.array(seq_errors), np.array(seq_rows), alpha, d_path)
        if passed:
            at, vt = configs[passed - 1]
            options.append((at, vt, f"verifier after gate {100 * anchor:g} %", d_path))
    at, vt, path, level = max(options, key=lambda o: rank(o[0], o[1]))
    masks = cascade_masks(g, v, at, review_at, vt)
    return _calibration(labels, masks, codes, (at, review_at, vt), (alpha, d, level), path)
