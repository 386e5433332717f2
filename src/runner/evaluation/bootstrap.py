"""Group bootstrap: confidence intervals and paired deltas that respect context groups.

Why: the six responses to one RAGTruth context share that context, so rows are not
independent; resampling rows would understate the uncertainty. This module is the one
place that decides group identity for intervals: `group_bootstrap` resamples whole groups
with replacement, turns each resample into per-row multiplicities, and evaluates every
gate and metric on the *same* resamples, so a paired delta between two gates is the
interval of their per-resample difference (protocol control 3).

Rules, fixed here so that every table uses the same ones:

- Resampling. Without `strata`, each resample draws G groups with replacement from all
  G groups (scope "pooled"). With `strata` (e.g. the task of each row; every group must
  lie in one stratum), each stratum's groups are drawn within that stratum, keeping its
  group count; scopes are then "pooled" (all rows of the stratified resample), one scope
  per stratum, and "macro" (the unweighted mean of the per-stratum metrics on the same
  resample). For per-task intervals without strata, call the function on that task's
  rows: its groups are then resampled alone.
- Interval. Percentile interval at `level` (default 95 %): the (1−level)/2 and (1+level)/2
  quantiles of the resample values (numpy's default linear interpolation).
- Undefined resamples. AUROC and AP need both classes. A resample in which any reported
  scope holds a single class is *redrawn* (from the same generator, so results stay
  deterministic) until every scope has both classes; the number of redrawn resamples is
  reported as `n_redrawn`. The bootstrap is thus conditional on two-class resamples. A
  metric that still returns a non-finite value raises ValueError: there are no NaNs.
- Determinism. Groups are ordered before drawing, by their smallest `order_key` (the
  example id) when one is given, else by sorted group id; either way the result depends on
  the data and the seed, not on row order, and with `order_key` not on how the groups are
  named either (RAGTruth's two forms name the same context differently; see
  `runner.evaluation.group_order`). Seeded with `numpy.random.default_rng`.

A batched metric is any callable `f(y, s, weights) -> array (B,)` where `weights` is the
(B, n) matrix of per-row multiplicities (see `runner.evaluation.metrics`).
"""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from functools import partial

import numpy as np
import pandas as pd

from runner.errors import DataError
from runner.evaluation._checks import check_bootstrap_settings, check_scores
from runner.evaluation.group_order import group_codes as _ordered_codes
from runner.evaluation.intervals import percentile_interval
from runner.evaluation.metrics import auroc_batched, average_precision_batched
from runner.evaluation.operating import (
    ACCEPT_BUDGET,
    REVIEW_BUDGET,
    accepted_risk_batched,
    review_precision_batched,
)
from runner.frames import check_labels
from runner.settings import SEED

BatchedMetric = Callable[[np.ndarray, np.ndarray, np.ndarray], np.ndarray]

POOLED = "pooled"
MACRO = "macro"
MAX_REDRAW_ROUNDS = 100


def standard_metrics(
    rho: float = REVIEW_BUDGET, alpha: float = ACCEPT_BUDGET
) -> dict[str, BatchedMetric]:
    """The four RAGScope metrics as batched callables: AUROC, AP, Prec_ρ and Risk_α.

    Parameters
    ----------
    rho : float
        Reviewed fraction for "review_precision" (tables: 0.10).
    alpha : float
        Accepted fraction for "accepted_risk" (tables: 0.50).

    Returns
    -------
    dict
        Keys "auroc", "ap", "review_precision", "accepted_risk".
    """
    return {
        "auroc": auroc_batched,
        "ap": average_precision_batched,
        "review_precision": partial(review_precision_batched, rho=rho),
        "accepted_risk": partial(accepted_risk_batched, alpha=alpha),
    }


@dataclass(frozen=True)
class Estimate:
    """A point value with its bootstrap percentile interval."""

    point: float
    low: float
    high: float


@dataclass(frozen=True)
class BootstrapResult:
    """Point values and per-resample values of every (scope, metric, gate).

    Attributes
    ----------
    gates, metrics, scopes : tuple of str
        What was evaluated; scopes are "pooled", then strata (sorted), then "macro".
    point : dict
        (scope, metric, gate) -> value on the original sample.
    samples : dict
        (scope, metric, gate) -> array (n_resamples,) of values on the resamples; every gate
        is evaluated on the same resamples (index i is the same resample for all).
    n_resamples, level, seed : int, float, int
        Settings used.
    n_groups, n_rows : dict
        Scope -> number of groups / rows in the original sample.
    n_redrawn : int
        Resamples redrawn because some scope held a single class.
    """

    gates: tuple[str, ...]
    metrics: tuple[str, ...]
    scopes: tuple[str, ...]
    point: dict[tuple[str, str, str], float]
    samples: dict[tuple[str, str, str], np.ndarray]
    n_resamples: int
    level: float
    seed: int
    n_groups: dict[str, int]
    n_rows: dict[str, int]
    n_redrawn: int

    def _key(self, gate: str, metric: str, scope: str) -> tuple[str, str, str]:
        for value, known, what in (
            (gate, self.gates, "gate"),
            (metric, self.metrics, "metric"),
            (scope, self.scopes, "scope"),
        ):
            if value not in known:
                raise KeyError(f"unknown {what} {value!r}; known: {list(known)}")
        return scope, metric, gate

    def _interval(self, values: np.ndarray) -> tuple[float, float]:
        return percentile_interval(values, self.level)

    def estimate(self, gate: str, metric: str, scope: str = POOLED) -> Estimate:
        """Point value and percentile interval of one gate's metric in one scope."""
        key = self._key(gate, metric, scope)
        return Estimate(self.point[key], *self._interval(self.samples[key]))

    def delta(self, gate: str, baseline: str, metric: str, scope: str = POOLED) -> Estimate:
        """Paired difference `gate − baseline`, its interval taken over the same resamples."""
        a, b = self._key(gate, metric, scope), self._key(baseline, metric, scope)
        diff = self.samples[a] - self.samples[b]
        return Estimate(self.point[a] - self.point[b], *self._interval(diff))

    def to_frame(self) -> pd.DataFrame:
        """Long table: scope, metric, gate, value, ci_low, ci_high, n_resamples, level."""
        rows = []
        for scope in self.scopes:
            for metric in self.metrics:
                for gate in self.gates:
                    est = self.estimate(gate, metric, scope)
                    rows.append((scope, metric, gate, est.point, est.low, est.high))
        frame = pd.DataFrame(
            rows, columns=["scope", "metric", "gate", "value", "ci_low", "ci_high"]
        )
        frame["n_resamples"] = self.n_resamples
        frame["level"] = self.level
        return frame

    def deltas_frame(self, pairs: Sequence[tuple[str, str]]) -> pd.DataFrame:
        """Long table of paired deltas for (gate, baseline) pairs, every scope and metric."""
        rows = []
        for gate, baseline in pairs:
            for scope in self.scopes:
                for metric in self.metrics:
                    est = self.delta(gate, baseline, metric, scope)
                    rows.append((scope, metric, gate, baseline, est.point, est.low, est.high))
        return pd.DataFrame(
            rows, columns=["scope", "metric", "gate", "baseline", "delta", "ci_low", "ci_high"]
        )


def _codes(
    values: object, n: int, what: str, order_key: object | None = None
) -> tuple[np.ndarray, np.ndarray]:
    arr = np.asarray(values, dtype=object) if not isinstance(values, np.ndarray) else values
    if arr.ndim != 1 or arr.shape[0] != n:
        raise ValueError(f"{what} must be 1-D with {n} entries (one per row), got {arr.shape}")
    missing = np.flatnonzero(pd.isna(arr))
    if missing.size:
        raise ValueError(f"{what} is missing at row positions {missing[:5].tolist()}")
    if order_key is not None:
        key = np.asarray(order_key, dtype=object)
        if key.shape != (n,) or pd.isna(key).any():
            raise ValueError(f"order_key must be 1-D with {n} non-missing entries (one per row)")
    return _ordered_codes(arr, order_key)


def _draw(rng: np.random.Generator, b: int, n_groups: int, members: list[np.ndarray]) -> np.ndarray:
    """(b, n_groups) multiplicities; each stratum's groups drawn with replacement within it."""
    counts = np.zeros((b, n_groups), dtype=np.int64)
    for group_ids in members:
        g = group_ids.shape[0]
        draws = rng.integers(0, g, size=(b, g))
        flat = (draws + g * np.arange(b)[:, None]).ravel()
        counts[:, group_ids] = np.bincount(flat, minlength=b * g).reshape(b, g)
    return counts


@dataclass(frozen=True)
class _Plan:
    """How one bootstrap draws: group codes, strata members and the scopes to keep two-class."""

    group_codes: np.ndarray
    n_groups: int
    members: list[np.ndarray]
    strata_names: list[str]
    scope_groups: dict[str, np.ndarray]
    scope_rows: dict[str, np.ndarray]
    group_pos: np.ndarray
    group_size: np.ndarray


def _plan(y: np.ndarray, groups: object, strata: object | None, order_key: object | None) -> _Plan:
    """Number groups and strata, check each group lies in one stratum and each scope has
    both classes."""
    n = y.shape[0]
    group_codes, group_names = _codes(groups, n, "groups", order_key)
    n_groups = group_names.shape[0]
    group_size = np.bincount(group_codes, minlength=n_groups).astype(np.float64)
    group_pos = np.bincount(group_codes, weights=y, minlength=n_groups)

    scope_rows: dict[str, np.ndarray] = {POOLED: np.arange(n)}
    scope_groups: dict[str, np.ndarray] = {POOLED: np.arange(n_groups)}
    if strata is None:
        members = [np.arange(n_groups)]
        strata_names: list[str] = []
    else:
        stratum_codes, stratum_values = _codes(strata, n, "strata")
        strata_names = [str(v) for v in stratum_values]
        clash = {POOLED, MACRO} & set(strata_names)
        if clash:
            raise ValueError(f"strata must not be named {sorted(clash)}: reserved scope names")
        pairs = np.unique(np.stack([group_codes, stratum_codes], axis=1), axis=0)
        split_groups = np.flatnonzero(np.bincount(pairs[:, 0], minlength=n_groups) > 1)
        if split_groups.size:
            names = [str(group_names[g]) for g in split_groups[:5]]
            raise DataError(
                f"{split_groups.size} group(s) span several strata, e.g. {names}; "
                "each group must lie in one stratum (give every row of a group the same "
                "task/source, or group rows so that no group mixes them)",
                field="group_id",
            )
        group_stratum = np.empty(n_groups, dtype=np.int64)
        group_stratum[pairs[:, 0]] = pairs[:, 1]
        members = []
        for code, name in enumerate(strata_names):
            members.append(np.flatnonzero(group_stratum == code))
            scope_groups[name] = members[-1]
            scope_rows[name] = np.flatnonzero(stratum_codes == code)

    for scope, gs in scope_groups.items():
        pos, size = group_pos[gs].sum(), group_size[gs].sum()
        if pos == 0 or pos == size:
            raise DataError(
                f"scope {scope!r} holds one class ({int(pos)} positives among {int(size)} "
                "rows): its AUROC/AP are undefined; label rows of both classes in it, or "
                "leave it out (e.g. drop that task or source from the data)",
                field="label",
            )
    return _Plan(
        group_codes,
        n_groups,
        members,
        strata_names,
        scope_groups,
        scope_rows,
        group_pos,
        group_size,
    )


def _resample_counts(
    plan: _Plan, n_resamples: int, seed: int | Sequence[int]
) -> tuple[np.ndarray, int]:
    """(B, n_groups) multiplicities, every scope two-class; and how many were redrawn."""
    rng = np.random.default_rng(seed)

    def one_class(counts: np.ndarray) -> np.ndarray:
        bad = np.zeros(counts.shape[0], dtype=bool)
        for gs in plan.scope_groups.values():
            pos = counts[:, gs] @ plan.group_pos[gs]
            bad |= (pos == 0) | (pos == counts[:, gs] @ plan.group_size[gs])
        return bad

    counts = _draw(rng, n_resamples, plan.n_groups, plan.members)
    n_redrawn = 0
    for _ in range(MAX_REDRAW_ROUNDS):
        bad = np.flatnonzero(one_class(counts))
        if bad.size == 0:
            return counts, n_redrawn
        n_redrawn += bad.size
        counts[bad] = _draw(rng, bad.size, plan.n_groups, plan.members)
    raise DataError(
        f"after {MAX_REDRAW_ROUNDS} redraw rounds some resamples still hold one class: "
        "too few groups contain positives or negatives for a group bootstrap; label more "
        "groups of the rarer class",
        field="label",
    )


def resample_weights(
    y: object,
    n_resamples: int,
    seed: int | Sequence[int],
    groups: object | None = None,
    strata: object | None = None,
    order_key: object | None = None,
) -> tuple[np.ndarray, int]:
    """Per-row multiplicities of `n_resamples` group resamples, by the rules above.

    For callers that evaluate their own statistics on the resamples (the HRI calibration
    tables). Without `groups` every row is its own group (responses are independent draws);
    with `strata`, groups are drawn within their stratum, keeping its size.

    Returns
    -------
    weights : ndarray, shape (n_resamples, n)
    n_redrawn : int
        Resamples redrawn because the sample or a stratum held one class.
    """
    y_arr = check_labels(y).astype(np.float64)
    check_bootstrap_settings(n_resamples, 0.95)
    n = y_arr.shape[0]
    plan = _plan(y_arr, np.arange(n) if groups is None else groups, strata, order_key)
    counts, n_redrawn = _resample_counts(plan, int(n_resamples), seed)
    return counts[:, plan.group_codes].astype(np.float64), n_redrawn


def group_bootstrap(
    y: object,
    scores: Mapping[str, object],
    groups: object,
    metrics: Mapping[str, BatchedMetric],
    n_resamples: int = 1000,
    seed: int = SEED,
    strata: object | None = None,
    level: float = 0.95,
    order_key: object | None = None,
) -> BootstrapResult:
    """Resample groups with replacement and evaluate every gate on the same resamples.

    Parameters
    ----------
    y : array of 0/1, shape (n,)
        Labels, 1 = unfaithful.
    scores : dict of str -> array (n,)
        Risk scores per gate, aligned with `y`.
    groups : array, shape (n,)
        Group id of each row (RAGTruth: the `(task_type, context)` key).
    metrics : dict of str -> batched metric
        `f(y, s, weights) -> (B,)`; see `standard_metrics`.
    n_resamples : int
        Number of bootstrap resamples B.
    seed : int
        Seed for `numpy.random.default_rng`.
    strata : array, shape (n,), optional
        Stratum of each row (e.g. task); groups are then resampled within strata and
        per-stratum and "macro" scopes are reported.
    level : float
        Coverage of the percentile interval, in (0, 1).
    order_key : array, shape (n,), optional
        Per-row key (the example id) that orders the groups before drawing: each group by
        its smallest key. None: groups are ordered by sorted id.

    Returns
    -------
    BootstrapResult
        Point values, per-resample values and intervals; see the module docstring.
    """
    y_arr = check_labels(y).astype(np.float64)
    n = y_arr.shape[0]
    if not scores:
        raise ValueError("scores is empty: give at least one gate's risk scores")
    if not metrics:
        raise ValueError("metrics is empty: give at least one batched metric")
    score_arr = {
        str(name): check_scores(s, n, name=f"scores[{name!r}]") for name, s in scores.items()
    }
    for name, fn in metrics.items():
        if not callable(fn):
            raise ValueError(f"metric {name!r} is not callable")
    check_bootstrap_settings(n_resamples, level)
    n_resamples = int(n_resamples)

    plan = _plan(y_arr, groups, strata, order_key)
    counts, n_redrawn = _resample_counts(plan, n_resamples, seed)
    group_codes, scope_groups, scope_rows = plan.group_codes, plan.scope_groups, plan.scope_rows
    n_groups, strata_names = plan.n_groups, plan.strata_names

    weights = counts[:, group_codes].astype(np.float64)
    gates, metric_names = tuple(score_arr), tuple(str(m) for m in metrics)
    point: dict[tuple[str, str, str], float] = {}
    samples: dict[tuple[str, str, str], np.ndarray] = {}
    for scope, rows in scope_rows.items():
        w = weights if scope == POOLED else weights[:, rows]
        ys = y_arr[rows]
        ones = np.ones((1, rows.shape[0]))
        for metric, fn in zip(metric_names, metrics.values(), strict=True):
            for gate in gates:
                s = score_arr[gate][rows]
                values = np.asarray(fn(ys, s, w), dtype=np.float64)
                at_point = np.asarray(fn(ys, s, ones), dtype=np.float64)
                if values.shape != (n_resamples,) or at_point.shape != (1,):
                    raise ValueError(
                        f"metric {metric!r} must return one value per resample; got shape "
                        f"{values.shape} for {n_resamples} resamples"
                    )
                if not (np.isfinite(values).all() and np.isfinite(at_point).all()):
                    raise ValueError(
                        f"metric {metric!r} gave a non-finite value for gate {gate!r} in "
                        f"scope {scope!r} on a two-class sample"
                    )
                point[scope, metric, gate] = float(at_point[0])
                samples[scope, metric, gate] = values

    scopes = [POOLED, *strata_names]
    n_groups_by_scope = {scope: int(gs.shape[0]) for scope, gs in scope_groups.items()}
    n_rows_by_scope = {scope: int(rows.shape[0]) for scope, rows in scope_rows.items()}
    if strata_names:
        scopes.append(MACRO)
        n_groups_by_scope[MACRO] = n_groups
        n_rows_by_scope[MACRO] = n
        for metric in metric_names:
            for gate in gates:
                point[MACRO, metric, gate] = float(
                    np.mean([point[s, metric, gate] for s in strata_names])
                )
                samples[MACRO, metric, gate] = np.mean(
                    [samples[s, metric, gate] for s in strata_names], axis=0
                )

    return BootstrapResult(
        gates=gates,
        metrics=metric_names,
        scopes=tuple(scopes),
        point=point,
        samples=samples,
        n_resamples=n_resamples,
        level=float(level),
        seed=int(seed),
        n_groups=n_groups_by_scope,
        n_rows=n_rows_by_scope,
        n_redrawn=n_redrawn,
    )
