"""Calibration tables of a response-level risk score: ranking, bands, cut-offs, curves.

Why a module of its own: two studies calibrate an HRI against known outcomes — with the
claim labels a data set ships (`runner.studies.hri_calibration`) and with labels predicted
by claim verifiers (`runner.studies.hri_predicted`) — and both must compute every cell the
same way. The machinery is `runner.evaluation.operating` (threshold rules) and
`runner.evaluation.metrics`; this module turns it into
`StudyResult` cells: AUROC / AP with bootstrap intervals and paired deltas, outcome rates
per provisional band (Wilson intervals), provisional and cost-optimal operating points
(with an out-of-bag cost), data-suggested band cut-offs, a cost-ratio sweep and the curve
points the figures are drawn from.
"""

from __future__ import annotations

import math
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any

import numpy as np

from runner.errors import ConfigError
from runner.evaluation import metrics, operating, percentile_interval, wilson_interval
from runner.hri.config import HRIConfig
from runner.hri.scoring import band_for
from runner.results import StudyResult

METRICS = ("AUROC", "AP")


@dataclass(frozen=True)
class Targets:
    """Costs and targets of the operating points and suggested cut-offs.

    ``cost_missed`` / ``cost_review``: cost of a wrong response released unflagged and of a
    needless review; ``cost_ratios``: missed : review ratios of the sweep;
    ``caution_recall`` / ``block_precision``: targets of the suggested caution and block
    cut-offs.
    """

    cost_missed: float
    cost_review: float
    cost_ratios: tuple[float, ...]
    caution_recall: float
    block_precision: float

    def check(self, prefix: str = "study.params") -> None:
        """Raise ConfigError naming the first bad value."""
        for name in ("cost_missed", "cost_review"):
            v = getattr(self, name)
            if not (math.isfinite(v) and v > 0):
                raise ConfigError(f"{prefix}.{name} must be > 0, got {v!r}")
        if not self.cost_ratios or any(not (math.isfinite(r) and r > 0) for r in self.cost_ratios):
            raise ConfigError(
                f"{prefix}.cost_ratios must be positive numbers, got {list(self.cost_ratios)!r}"
            )
        for name in ("caution_recall", "block_precision"):
            v = getattr(self, name)
            if not 0 < v <= 1:
                raise ConfigError(f"{prefix}.{name} must lie in (0, 1], got {v!r}")


def check_aggregations(aggregations: Sequence[str], baseline: str) -> None:
    """Known, distinct aggregations and a baseline among them (ConfigError otherwise)."""
    from runner.hri.aggregation import AGGREGATIONS

    unknown = [a for a in aggregations if a not in AGGREGATIONS]
    if unknown or not aggregations:
        raise ConfigError(
            f"study.params.aggregations: unknown {unknown}; choose from {list(AGGREGATIONS)}"
        )
    if len(set(aggregations)) != len(aggregations):
        raise ConfigError("study.params.aggregations: duplicates")
    if baseline not in aggregations:
        raise ConfigError(
            f"study.params.baseline={baseline!r} must be one of the aggregations "
            f"{list(aggregations)}"
        )


def scaled(t: float, scale: float) -> float | None:
    """A threshold on the 0–scale axis; None for "flag nothing"."""
    return None if math.isinf(t) else t * scale


# --------------------------------------------------------------------------- ranking


def ranking_cells(
    result: StudyResult,
    table: str,
    row: str,
    y: np.ndarray,
    scores: Mapping[str, np.ndarray],
    weights: np.ndarray,
    level: float,
    baseline: str | None = None,
    delta_table: str | None = None,
    samples_out: dict[tuple[str, str], np.ndarray] | None = None,
) -> dict[str, Any]:
    """AUROC and AP of each score (columns ``<name>/<metric>``), and paired deltas.

    Parameters
    ----------
    result : StudyResult
    table, row : str
        Where the cells go.
    y : array of 0/1
    scores : mapping name -> array
        One score per response for each aggregation (or system).
    weights : ndarray, shape (n_resamples, n)
        Bootstrap multiplicities (`runner.evaluation.bootstrap.resample_weights`), shared
        by every score so differences are paired.
    level : float
    baseline, delta_table : str, optional
        When given, ``<name>-<baseline>/<metric>`` deltas go to ``delta_table``.
    samples_out : dict, optional
        Filled with the bootstrap values per (name, metric), for paired comparisons.

    Returns
    -------
    dict
        The best score per metric (see `best_of`).
    """
    names = list(scores)
    ones = np.ones((1, y.shape[0]))
    samples: dict[tuple[str, str], np.ndarray] = {}
    points: dict[tuple[str, str], float] = {}
    for a in names:
        boot_m = metrics.ranking_metrics(y, scores[a], weights)
        at = metrics.ranking_metrics(y, scores[a], ones)
        for metric in METRICS:
            samples[a, metric] = boot_m[metric]
            points[a, metric] = float(at[metric][0])
            result.add(
                table,
                row,
                f"{a}/{metric}",
                points[a, metric],
                ci=percentile_interval(boot_m[metric], level),
            )
    if baseline is not None and delta_table is not None:
        for a in names:
            if a == baseline:
                continue
            for metric in METRICS:
                diff = samples[a, metric] - samples[baseline, metric]
                result.add(
                    delta_table,
                    row,
                    f"{a}-{baseline}/{metric}",
                    points[a, metric] - points[baseline, metric],
                    ci=percentile_interval(diff, level),
                )
    if samples_out is not None:
        samples_out.update(samples)
    return best_of(points, samples, names, level)


def best_of(points: dict, samples: dict, names: Sequence[str], level: float) -> dict[str, Any]:
    """Per metric: the best name, its value, the runner-up, their paired delta and CI, ties."""
    out = {}
    for metric in METRICS:
        ranked = sorted(names, key=lambda a: (-points[a, metric], names.index(a)))
        entry: dict[str, Any] = {"best": ranked[0], "value": points[ranked[0], metric]}
        if len(ranked) > 1:
            diff = samples[ranked[0], metric] - samples[ranked[1], metric]
            entry.update(
                {
                    "runner_up": ranked[1],
                    "delta": points[ranked[0], metric] - points[ranked[1], metric],
                    "delta_ci": list(percentile_interval(diff, level)),
                    "tied_with": [a for a in ranked[1:] if points[a, metric] == entry["value"]],
                }
            )
        out[metric] = entry
    return out


# --------------------------------------------------------------------------- bands and cut-offs


def band_rates(
    result: StudyResult,
    row: str,
    y: np.ndarray,
    ordinals: np.ndarray,
    config: HRIConfig,
    level: float,
    table: str = "hri_band_rates",
) -> None:
    """Responses, positives and outcome rate (Wilson CI) per provisional band."""
    for j, band in enumerate(config.bands, start=1):
        in_band = ordinals == j
        n = int(in_band.sum())
        k = int(y[in_band].sum())
        result.add(table, row, f"{band.name}/responses", n)
        result.add(table, row, f"{band.name}/positives", k)
        if n:
            result.add(table, row, f"{band.name}/rate", k / n, ci=wilson_interval(k, n, level))
        else:
            result.add(table, row, f"{band.name}/rate", None)


def _add_point(
    result: StudyResult,
    table: str,
    row: str,
    rule: str,
    resampled: dict[str, np.ndarray],
    at: dict[str, np.ndarray],
    level: float,
) -> None:
    for stat in ("precision", "recall", "flagged", "cost"):
        value = float(at[stat][0])
        if math.isnan(value):
            result.add(table, row, f"{rule}/{stat}", None)
            continue
        values = resampled[stat]
        ci = None if np.isnan(values).any() else percentile_interval(values, level)
        result.add(table, row, f"{rule}/{stat}", value, ci=ci)


def operating_points(
    result: StudyResult,
    row: str,
    y: np.ndarray,
    s: np.ndarray,
    ordinals: np.ndarray,
    weights: np.ndarray,
    config: HRIConfig,
    targets: Targets,
    level: float,
    table: str = "hri_operating_points",
) -> None:
    """The provisional band cut-offs as flag rules, the cost-optimal one and its OOB cost."""
    cm, cr = targets.cost_missed, targets.cost_review
    ones = np.ones((1, y.shape[0]))
    for j in range(1, len(config.bands)):
        rule = f"provisional_{config.bands[j].action}"
        flagged = ordinals >= j + 1
        result.add(table, row, f"{rule}/cutoff", config.bands[j - 1].upper)
        _add_point(
            result,
            table,
            row,
            rule,
            operating.flag_rule_point(y, flagged, weights, cm, cr),
            operating.flag_rule_point(y, flagged, ones, cm, cr),
            level,
        )
    t_point, _ = operating.cost_optimal_threshold(y, s, ones, cm, cr)
    t = float(t_point[0])
    flagged = s >= t
    result.add(table, row, "cost_optimal/cutoff", scaled(t, config.scale))
    _add_point(
        result,
        table,
        row,
        "cost_optimal",
        operating.flag_rule_point(y, flagged, weights, cm, cr),
        operating.flag_rule_point(y, flagged, ones, cm, cr),
        level,
    )
    # Out-of-bag: choose the threshold on each resample, pay its cost on the left-out rows.
    t_boot, _ = operating.cost_optimal_threshold(y, s, weights, cm, cr)
    oob = weights == 0
    flag = s[None, :] >= t_boot[:, None]
    miss = (y[None, :] == 1) & ~flag
    needless = (y[None, :] == 0) & flag
    n_oob = oob.sum(axis=1)
    usable = n_oob > 0
    cost = (cm * (miss & oob).sum(axis=1) + cr * (needless & oob).sum(axis=1))[usable] / n_oob[
        usable
    ]
    result.add(
        table, row, "cost_optimal/oob_cost", float(cost.mean()), ci=percentile_interval(cost, level)
    )


def suggested_cutoffs(
    result: StudyResult,
    row: str,
    y: np.ndarray,
    s: np.ndarray,
    weights: np.ndarray,
    config: HRIConfig,
    targets: Targets,
    level: float,
    table: str = "hri_suggested_cutoffs",
) -> dict[str, float | None]:
    """Caution / review / block cut-offs the data suggests, with bootstrap CIs and bands."""
    ones = np.ones((1, y.shape[0]))
    rules = {
        "caution": lambda w: operating.recall_threshold(y, s, w, targets.caution_recall),
        "review": lambda w: operating.cost_optimal_threshold(
            y, s, w, targets.cost_missed, targets.cost_review
        )[0],
        "block": lambda w: operating.precision_threshold(y, s, w, targets.block_precision),
    }
    out: dict[str, float | None] = {}
    for name, fn in rules.items():
        t = float(fn(ones)[0])
        values = fn(weights)
        nothing = np.isinf(values)
        ci = None
        if not nothing.any():
            low, high = percentile_interval(values, level)
            ci = (low * config.scale, high * config.scale)
        value = scaled(t, config.scale)
        result.add(table, row, name, value, ci=None if value is None else ci)
        result.add(
            table,
            row,
            f"{name}/band",
            None if math.isinf(t) else band_for(min(t, 1.0), config)[1],
        )
        result.add(table, row, f"{name}/no_threshold_share", float(nothing.mean()))
        out[name] = value
    return out


def cost_sweep(
    result: StudyResult,
    row: str,
    y: np.ndarray,
    s: np.ndarray,
    config: HRIConfig,
    targets: Targets,
    table: str = "hri_cost_sweep",
) -> None:
    """The cost-optimal cut-off (0–scale) for each missed : review cost ratio."""
    ones = np.ones((1, y.shape[0]))
    for ratio in targets.cost_ratios:
        t, _ = operating.cost_optimal_threshold(
            y, s, ones, ratio * targets.cost_review, targets.cost_review
        )
        result.add(table, row, f"missed={ratio:g}x", scaled(float(t[0]), config.scale))


def curve_cells(
    result: StudyResult,
    row: str,
    y: np.ndarray,
    s: np.ndarray,
    roc_table: str = "hri_roc_curve",
    pr_table: str = "hri_pr_curve",
) -> None:
    """Every ROC and precision-recall point (``fpr@0000``, ``tpr@0000``, ...), for figures."""
    fpr, tpr = metrics.roc_points(y, s)
    for i, (fx, ty) in enumerate(zip(fpr, tpr, strict=True)):
        result.add(roc_table, row, f"fpr@{i:04d}", fx)
        result.add(roc_table, row, f"tpr@{i:04d}", ty)
    rec, prec = metrics.pr_points(y, s)
    for i, (rx, py) in enumerate(zip(rec, prec, strict=True)):
        result.add(pr_table, row, f"recall@{i:04d}", rx)
        result.add(pr_table, row, f"precision@{i:04d}", py)


def band_and_cutoff_cells(
    result: StudyResult,
    coll: str,
    y: np.ndarray,
    scores: Mapping[str, np.ndarray],
    weights: np.ndarray,
    config: HRIConfig,
    targets: Targets,
    level: float,
) -> dict[str, dict[str, float | None]]:
    """Band rates, operating points, suggested cut-offs, cost sweep and curves per score.

    Rows are ``<coll>/<name>``; returns the suggested cut-offs per name.
    """
    out = {}
    for a, s in scores.items():
        row = f"{coll}/{a}"
        ordinals = np.array([band_for(float(v), config)[1] for v in s])
        band_rates(result, row, y, ordinals, config, level)
        operating_points(result, row, y, s, ordinals, weights, config, targets, level)
        out[a] = suggested_cutoffs(result, row, y, s, weights, config, targets, level)
        cost_sweep(result, row, y, s, config, targets)
        curve_cells(result, row, y, s)
    return out
