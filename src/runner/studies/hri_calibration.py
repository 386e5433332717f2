"""Study: calibrate the HRI against labelled outcomes and compare aggregations.

Why: seed 001 marks its bands and constants as provisional and names the way to test them
— score responses whose outcome is known, then use ROC and precision-recall analysis and
cost-sensitive threshold selection (section VIII), and compare additive, max-based and
multiplicative aggregation (section VI, XVI). This study does that for every collection
of the loaded claim frame (``task`` column; Factcheck-Bench: ``factbench``,
``factcheckgpt_gold``, ``factcheckgpt_stance``, see `runner.data.factbench`; any claims
file whose responses carry ``outcome`` works too). Collections are never pooled.

Per collection (and per source within it when it has several, each with both classes):

- ``hri_calibration_data``: responses, positives (outcome 1), claims, responses whose HRI*
  was set by a safety floor.
- ``hri_ranking``: AUROC and AP of each aggregation, bootstrap CIs.
- ``hri_ranking_delta``: each aggregation minus the baseline (paired bootstrap CIs).
- ``hri_band_rates``: per provisional band, responses, positives and the outcome rate
  (Wilson interval at the bootstrap level).
- ``hri_operating_points``: the provisional band cut-offs used as flag rules (flag at
  Medium or worse = caution, High or worse = review, Critical = block) and the
  cost-optimal threshold: cut-off (0–scale), precision, recall, flagged share and expected
  cost per response (cost_missed per missed wrong response, cost_review per needless
  review); for the cost-optimal rule also its out-of-bag cost (threshold chosen on each
  resample, cost measured on the responses that resample left out), a guard against the
  in-sample optimism of choosing and evaluating on the same data.
- ``hri_suggested_cutoffs``: cut-offs the data suggests for the three band boundaries —
  caution: the highest threshold keeping recall ≥ ``caution_recall``; review: the
  cost-optimal threshold; block: the lowest threshold with precision ≥
  ``block_precision`` — on the 0–scale axis with bootstrap CIs, and the provisional band
  each falls in (``<cut>/band``: 1 = Low … 4 = Critical). No value means no threshold
  reaches the target; a CI is left out when some resamples had none
  (``<cut>/no_threshold_share`` says how many).
- ``hri_cost_sweep``: the cost-optimal cut-off for several cost ratios missed : review.
- ``hri_roc_curve`` / ``hri_pr_curve``: curve points per aggregation (columns
  ``fpr@0000``/``tpr@0000``…, ``recall@0000``/``precision@0000``…), for the figures.
- ``hri_label_agreement``: where two collections label the same claims (the two
  factcheckgpt ones: human gold labels vs evidence-stance labels), Cohen's kappa,
  Krippendorff's alpha (nominal), raw agreement, and kappa on the binary
  "flagged" view (label other than SUPPORTED), with response-cluster bootstrap CIs.

Bootstrap: ``cfg.bootstrap.n_resamples`` / ``level`` / ``seed`` (``seed`` null → ``cfg.seed``),
rules in `runner.claims.calibration`. Thresholds are chosen in-sample (there is no
held-out split); read them as what the data suggests, not as validated cut-offs.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import Any

import numpy as np
import pandas as pd
from omegaconf import DictConfig
from scipy.stats import norm

from runner.claims import calibration as cal
from runner.claims.aggregation import AGGREGATIONS
from runner.claims.agreement import cohen_kappa, krippendorff_alpha
from runner.claims.claims_file import responses_from_frame
from runner.claims.hri import HRIResult, Response, band_for, score_response
from runner.claims.hri_config import HRIConfig, load_hri_config
from runner.data.base import LoadedData
from runner.errors import ConfigError, DataError
from runner.results import StudyResult

TITLES = {
    "hri_calibration_data": "HRI calibration data: responses, positives (wrong responses), "
    "claims, responses whose HRI* a safety floor set",
    "hri_ranking": "HRI calibration: AUROC and AP per aggregation (bootstrap 95% CI)",
    "hri_ranking_delta": "HRI calibration: paired difference to the baseline aggregation",
    "hri_band_rates": "HRI calibration: outcomes per provisional band (rate = share of wrong "
    "responses, Wilson CI)",
    "hri_operating_points": "HRI calibration: provisional band cut-offs vs the cost-optimal "
    "threshold (cut-off on the 0-100 axis; cost per response)",
    "hri_suggested_cutoffs": "HRI calibration: band cut-offs suggested by the data (0-100 axis; "
    "band = provisional band the cut-off falls in, 1 = Low)",
    "hri_cost_sweep": "HRI calibration: cost-optimal cut-off (0-100) per cost ratio missed:review",
    "hri_roc_curve": "HRI calibration: ROC curve points (for figures)",
    "hri_pr_curve": "HRI calibration: precision-recall curve points (for figures)",
    "hri_label_agreement": "HRI claim labels: agreement between labelling sources",
}


@dataclass
class Params:
    """Parameters of the calibration study.

    Attributes
    ----------
    aggregations : list of str
        Aggregations to compare (`runner.claims.aggregation.AGGREGATIONS`).
    baseline : str
        Aggregation the deltas are taken against.
    cost_missed, cost_review : float
        Cost of a wrong response that is released unflagged, and of flagging a correct
        response for review (not given by the seed: an assumption to set per deployment).
    cost_ratios : list of float
        cost_missed / cost_review ratios for the sweep.
    caution_recall : float
        Recall the suggested caution cut-off must keep.
    block_precision : float
        Precision the suggested block cut-off must reach.
    explanation_top : int
        Drivers listed per response explanation.
    """

    aggregations: list[str] = field(default_factory=lambda: list(AGGREGATIONS))
    baseline: str = "additive"
    cost_missed: float = 5.0
    cost_review: float = 1.0
    cost_ratios: list[float] = field(default_factory=lambda: [1.0, 2.0, 5.0, 10.0, 20.0])
    caution_recall: float = 0.95
    block_precision: float = 0.95
    explanation_top: int = 5


@dataclass(frozen=True)
class _Boot:
    n_resamples: int
    level: float
    seed: int


def run(cfg: DictConfig, data: LoadedData, params: Params) -> StudyResult:
    """Score every labelled response and measure how well each aggregation ranks them.

    Parameters
    ----------
    cfg : DictConfig
        Composed config; uses ``cfg.hri``, ``cfg.bootstrap`` and ``cfg.seed``.
    data : LoadedData
        Claim-level frame whose responses all have an outcome (``response_label``).
    params : Params

    Returns
    -------
    StudyResult
    """
    _check_params(params)
    if data is None:
        raise ConfigError("hri_calibration needs a dataset: set `override /dataset: factbench`")
    config = load_hri_config(cfg.get("hri"))
    boot = _bootstrap_settings(cfg)
    responses = responses_from_frame(data.frame)
    for r in responses:
        if r.outcome is None:
            raise DataError(
                f"response {r.response_id!r} has no outcome; calibration needs the "
                "known outcome (0/1) of every response",
                file=r.file or None,
                row=r.row if r.row != "" else None,
                field="outcome",
            )
    scored = [score_response(r, config) for r in responses]

    result = StudyResult()
    result.titles.update(TITLES)
    summary: dict[str, Any] = {"collections": {}, "best": {}}
    collections = list(dict.fromkeys(_collection(r) for r in responses))
    for ci, coll in enumerate(collections):
        idx = [i for i, r in enumerate(responses) if _collection(r) == coll]
        summary["collections"][coll] = _calibrate_collection(
            result,
            coll,
            [responses[i] for i in idx],
            [scored[i] for i in idx],
            config,
            params,
            boot,
            seed=[boot.seed, ci],
            best=summary["best"],
        )
    summary["agreement"] = _label_agreement(result, data.frame, boot)
    summary["params"] = {k: getattr(params, k) for k in params.__dataclass_fields__}
    summary["bootstrap"] = {"n_resamples": boot.n_resamples, "level": boot.level, "seed": boot.seed}
    summary["hri"] = config.to_dict()
    summary["data"] = {
        "name": data.name,
        "fingerprint": data.fingerprint,
        "excluded": data.info.get("excluded", {}),
    }
    result.scores = _scores_frame(responses, scored)
    result.extra["hri_explanations.json"] = {
        s.response_id: s.explanation(top=params.explanation_top) for s in scored
    }
    result.extra["hri_calibration_summary.json"] = summary
    return result


# --------------------------------------------------------------------------- helpers


def _check_params(p: Params) -> None:
    unknown = [a for a in p.aggregations if a not in AGGREGATIONS]
    if unknown or not p.aggregations:
        raise ConfigError(
            f"study.params.aggregations: unknown {unknown}; choose from {list(AGGREGATIONS)}"
        )
    if len(set(p.aggregations)) != len(p.aggregations):
        raise ConfigError("study.params.aggregations: duplicates")
    if p.baseline not in p.aggregations:
        raise ConfigError(
            f"study.params.baseline={p.baseline!r} must be one of the aggregations {p.aggregations}"
        )
    for name in ("cost_missed", "cost_review"):
        v = getattr(p, name)
        if not (math.isfinite(v) and v > 0):
            raise ConfigError(f"study.params.{name} must be > 0, got {v!r}")
    if not p.cost_ratios or any(not (math.isfinite(r) and r > 0) for r in p.cost_ratios):
        raise ConfigError(
            f"study.params.cost_ratios must be positive numbers, got {p.cost_ratios!r}"
        )
    for name in ("caution_recall", "block_precision"):
        v = getattr(p, name)
        if not 0 < v <= 1:
            raise ConfigError(f"study.params.{name} must lie in (0, 1], got {v!r}")


def _bootstrap_settings(cfg: DictConfig) -> _Boot:
    node = cfg.get("bootstrap")
    if node is None:
        raise ConfigError(
            "bootstrap: no bootstrap settings (n_resamples, level, seed) in the config"
        )
    seed = node.get("seed")
    if seed is None:
        seed = cfg.get("seed")
    n = node.get("n_resamples")
    level = node.get("level", 0.95)
    if isinstance(n, bool) or not isinstance(n, int) or n < 1:
        raise ConfigError(f"bootstrap.n_resamples must be a positive integer, got {n!r}")
    if not 0 < float(level) < 1:
        raise ConfigError(f"bootstrap.level must lie in (0, 1), got {level!r}")
    if isinstance(seed, bool) or not isinstance(seed, int):
        raise ConfigError(f"bootstrap.seed (or seed) must be an integer, got {seed!r}")
    return _Boot(int(n), float(level), int(seed))


def _collection(r: Response) -> str:
    return r.task or "all"


def _interval(values: np.ndarray, level: float) -> tuple[float, float]:
    return cal.percentile_interval(values, level)


def _wilson(k: int, n: int, level: float) -> tuple[float, float]:
    z = float(norm.ppf(0.5 + level / 2.0))
    p = k / n
    denom = 1.0 + z * z / n
    centre = (p + z * z / (2 * n)) / denom
    half = z * math.sqrt(p * (1 - p) / n + z * z / (4 * n * n)) / denom
    return max(0.0, centre - half), min(1.0, centre + half)


def _scaled(t: float, scale: float) -> float | None:
    return None if math.isinf(t) else t * scale


def _calibrate_collection(
    result: StudyResult,
    coll: str,
    responses: list[Response],
    scored: list[HRIResult],
    config: HRIConfig,
    p: Params,
    boot: _Boot,
    seed: list[int],
    best: dict,
) -> dict[str, Any]:
    notes: list[str] = []
    y = np.array([r.outcome for r in responses], dtype=np.float64)
    if y.sum() == 0 or y.sum() == y.shape[0]:
        raise DataError(
            f"collection {coll!r}: all {y.shape[0]} responses have outcome "
            f"{int(y[0])}; calibration needs both outcomes"
        )
    sources = np.array([r.source or coll for r in responses], dtype=object)
    names = sorted(set(sources.tolist()))
    two_class = [s for s in names if 0 < y[sources == s].sum() < (sources == s).sum()]
    stratify = len(names) > 1 and two_class == names
    if len(names) > 1 and not stratify:
        notes.append(
            f"sources {sorted(set(names) - set(two_class))} hold one class: no "
            "per-source scopes, resampling not stratified by source"
        )
    weights, redrawn = cal.bootstrap_weights(
        y, sources if stratify else None, boot.n_resamples, seed
    )
    ones = np.ones((1, y.shape[0]))
    scores = {a: np.array([s.aggregations[a] for s in scored]) for a in p.aggregations}

    scopes = [(coll, np.arange(y.shape[0]))]
    if stratify:
        scopes += [(f"{coll}:{s}", np.flatnonzero(sources == s)) for s in names]
    for scope, rows in scopes:
        result.add("hri_calibration_data", scope, "responses", rows.shape[0])
        result.add("hri_calibration_data", scope, "positives", y[rows].sum())
        result.add(
            "hri_calibration_data", scope, "claims", sum(len(responses[i].claims) for i in rows)
        )
        result.add(
            "hri_calibration_data",
            scope,
            "floor_bound",
            sum(scored[i].binding_floor is not None for i in rows),
        )
        samples: dict[tuple[str, str], np.ndarray] = {}
        points: dict[tuple[str, str], float] = {}
        for a in p.aggregations:
            s = scores[a][rows]
            boot_m = cal.ranking_metrics(y[rows], s, weights[:, rows])
            at = cal.ranking_metrics(y[rows], s, ones[:, rows])
            for metric in ("AUROC", "AP"):
                samples[a, metric] = boot_m[metric]
                points[a, metric] = float(at[metric][0])
                result.add(
                    "hri_ranking",
                    scope,
                    f"{a}/{metric}",
                    points[a, metric],
                    ci=_interval(boot_m[metric], boot.level),
                )
        for a in p.aggregations:
            if a == p.baseline:
                continue
            for metric in ("AUROC", "AP"):
                diff = samples[a, metric] - samples[p.baseline, metric]
                result.add(
                    "hri_ranking_delta",
                    scope,
                    f"{a}-{p.baseline}/{metric}",
                    points[a, metric] - points[p.baseline, metric],
                    ci=_interval(diff, boot.level),
                )
        best[scope] = _best(points, samples, p.aggregations, boot.level)

    thresholds: dict[str, Any] = {}
    for a in p.aggregations:
        row = f"{coll}/{a}"
        s = scores[a]
        ordinals = np.array([band_for(float(v), config)[1] for v in s])
        _band_rates(result, row, y, ordinals, config, boot.level)
        _operating_points(result, row, y, s, ordinals, weights, config, p, boot.level)
        thresholds[a] = _suggested(result, row, y, s, weights, config, p, boot.level)
        for ratio in p.cost_ratios:
            t, _ = cal.cost_optimal_threshold(y, s, ones, ratio * p.cost_review, p.cost_review)
            result.add(
                "hri_cost_sweep", row, f"missed={ratio:g}x", _scaled(float(t[0]), config.scale)
            )
        fpr, tpr = cal.roc_points(y, s)
        for i, (fx, ty) in enumerate(zip(fpr, tpr, strict=True)):
            result.add("hri_roc_curve", row, f"fpr@{i:04d}", fx)
            result.add("hri_roc_curve", row, f"tpr@{i:04d}", ty)
        rec, prec = cal.pr_points(y, s)
        for i, (rx, py) in enumerate(zip(rec, prec, strict=True)):
            result.add("hri_pr_curve", row, f"recall@{i:04d}", rx)
            result.add("hri_pr_curve", row, f"precision@{i:04d}", py)
    return {
        "responses": int(y.shape[0]),
        "positives": int(y.sum()),
        "sources": names,
        "stratified_by_source": stratify,
        "n_redrawn": redrawn,
        "notes": notes,
        "suggested_cutoffs": thresholds,
    }


def _best(points: dict, samples: dict, aggs: Sequence[str], level: float) -> dict[str, Any]:
    out = {}
    for metric in ("AUROC", "AP"):
        ranked = sorted(aggs, key=lambda a: (-points[a, metric], aggs.index(a)))
        entry: dict[str, Any] = {"best": ranked[0], "value": points[ranked[0], metric]}
        if len(ranked) > 1:
            diff = samples[ranked[0], metric] - samples[ranked[1], metric]
            entry.update(
                {
                    "runner_up": ranked[1],
                    "delta": points[ranked[0], metric] - points[ranked[1], metric],
                    "delta_ci": list(_interval(diff, level)),
                    "tied_with": [a for a in ranked[1:] if points[a, metric] == entry["value"]],
                }
            )
        out[metric] = entry
    return out


def _band_rates(
    result: StudyResult,
    row: str,
    y: np.ndarray,
    ordinals: np.ndarray,
    config: HRIConfig,
    level: float,
) -> None:
    for j, band in enumerate(config.bands, start=1):
        in_band = ordinals == j
        n = int(in_band.sum())
        k = int(y[in_band].sum())
        result.add("hri_band_rates", row, f"{band.name}/responses", n)
        result.add("hri_band_rates", row, f"{band.name}/positives", k)
        if n:
            result.add("hri_band_rates", row, f"{band.name}/rate", k / n, ci=_wilson(k, n, level))
        else:
            result.add("hri_band_rates", row, f"{band.name}/rate", None)


def _add_point(
    result: StudyResult,
    row: str,
    rule: str,
    op: dict[str, np.ndarray],
    at: dict[str, np.ndarray],
    level: float,
) -> None:
    for stat in ("precision", "recall", "flagged", "cost"):
        value = float(at[stat][0])
        if math.isnan(value):
            result.add("hri_operating_points", row, f"{rule}/{stat}", None)
            continue
        values = op[stat]
        ci = None if np.isnan(values).any() else _interval(values, level)
        result.add("hri_operating_points", row, f"{rule}/{stat}", value, ci=ci)


def _operating_points(
    result: StudyResult,
    row: str,
    y: np.ndarray,
    s: np.ndarray,
    ordinals: np.ndarray,
    weights: np.ndarray,
    config: HRIConfig,
    p: Params,
    level: float,
) -> None:
    ones = np.ones((1, y.shape[0]))
    for j in range(1, len(config.bands)):
        rule = f"provisional_{config.bands[j].action}"
        flagged = ordinals >= j + 1
        result.add("hri_operating_points", row, f"{rule}/cutoff", config.bands[j - 1].upper)
        _add_point(
            result,
            row,
            rule,
            cal.operating_point(y, flagged, weights, p.cost_missed, p.cost_review),
            cal.operating_point(y, flagged, ones, p.cost_missed, p.cost_review),
            level,
        )
    t_point, _ = cal.cost_optimal_threshold(y, s, ones, p.cost_missed, p.cost_review)
    t = float(t_point[0])
    flagged = s >= t
    result.add("hri_operating_points", row, "cost_optimal/cutoff", _scaled(t, config.scale))
    _add_point(
        result,
        row,
        "cost_optimal",
        cal.operating_point(y, flagged, weights, p.cost_missed, p.cost_review),
        cal.operating_point(y, flagged, ones, p.cost_missed, p.cost_review),
        level,
    )
    # Out-of-bag: choose the threshold on each resample, pay its cost on the left-out rows.
    t_boot, _ = cal.cost_optimal_threshold(y, s, weights, p.cost_missed, p.cost_review)
    oob = weights == 0
    flag = s[None, :] >= t_boot[:, None]
    miss = (y[None, :] == 1) & ~flag
    needless = (y[None, :] == 0) & flag
    n_oob = oob.sum(axis=1)
    usable = n_oob > 0
    cost = (
        p.cost_missed * (miss & oob).sum(axis=1) + p.cost_review * (needless & oob).sum(axis=1)
    )[usable] / n_oob[usable]
    result.add(
        "hri_operating_points",
        row,
        "cost_optimal/oob_cost",
        float(cost.mean()),
        ci=_interval(cost, level),
    )


def _suggested(
    result: StudyResult,
    row: str,
    y: np.ndarray,
    s: np.ndarray,
    weights: np.ndarray,
    config: HRIConfig,
    p: Params,
    level: float,
) -> dict[str, float | None]:
    ones = np.ones((1, y.shape[0]))
    rules = {
        "caution": lambda w: cal.recall_threshold(y, s, w, p.caution_recall),
        "review": lambda w: cal.cost_optimal_threshold(y, s, w, p.cost_missed, p.cost_review)[0],
        "block": lambda w: cal.precision_threshold(y, s, w, p.block_precision),
    }
    out: dict[str, float | None] = {}
    for name, fn in rules.items():
        t = float(fn(ones)[0])
        values = fn(weights)
        nothing = np.isinf(values)
        ci = None
        if not nothing.any():
            low, high = _interval(values, level)
            ci = (low * config.scale, high * config.scale)
        scaled = _scaled(t, config.scale)
        result.add("hri_suggested_cutoffs", row, name, scaled, ci=None if scaled is None else ci)
        result.add(
            "hri_suggested_cutoffs",
            row,
            f"{name}/band",
            None if math.isinf(t) else band_for(min(t, 1.0), config)[1],
        )
        result.add(
            "hri_suggested_cutoffs", row, f"{name}/no_threshold_share", float(nothing.mean())
        )
        out[name] = scaled
    return out


def _label_agreement(result: StudyResult, frame: pd.DataFrame, boot: _Boot) -> list[dict]:
    keyed = frame.assign(
        _key=frame["file"].astype(str)
        + "|"
        + frame["response_row"].astype(str)
        + "|"
        + frame["local_claim_id"].astype(str)
    )
    tasks = list(dict.fromkeys(keyed["task"].astype(str)))
    out = []
    for i, a in enumerate(tasks):
        for b in tasks[i + 1 :]:
            left = keyed[keyed["task"] == a].set_index("_key")
            right = keyed[keyed["task"] == b].set_index("_key")
            common = [k for k in left.index if k in right.index]
            if not common:
                continue
            la = left.loc[common, "raw_label"].astype(str).to_numpy()
            lb = right.loc[common, "raw_label"].astype(str).to_numpy()
            clusters = left.loc[common, "response_row"].astype(str).to_numpy()
            out.append(_agreement_cells(result, f"{a} vs {b}", la, lb, clusters, boot))
    return out


def _agreement_stats(la: np.ndarray, lb: np.ndarray) -> dict[str, float]:
    fa, fb = la != "SUPPORTED", lb != "SUPPORTED"
    return {
        "agreement": float((la == lb).mean()),
        "kappa": cohen_kappa(la.tolist(), lb.tolist()),
        "alpha": krippendorff_alpha([la.tolist(), lb.tolist()], "nominal").alpha,
        "kappa_flagged": cohen_kappa(fa.tolist(), fb.tolist()),
    }


def _agreement_cells(
    result: StudyResult, row: str, la: np.ndarray, lb: np.ndarray, clusters: np.ndarray, boot: _Boot
) -> dict[str, Any]:
    point = _agreement_stats(la, lb)
    units = sorted(set(clusters.tolist()))
    members = [np.flatnonzero(clusters == u) for u in units]
    rng = np.random.default_rng([boot.seed, 1_000_003])
    draws: dict[str, list[float]] = {k: [] for k in point}
    failed = 0
    for _ in range(boot.n_resamples):
        picks = rng.integers(0, len(units), size=len(units))
        rows = np.concatenate([members[u] for u in picks])
        try:
            stats = _agreement_stats(la[rows], lb[rows])
        except ValueError:
            failed += 1
            continue
        for k, v in stats.items():
            draws[k].append(v)
    result.add("hri_label_agreement", row, "claims", len(la))
    result.add("hri_label_agreement", row, "responses", len(units))
    for k, v in point.items():
        ci = _interval(np.array(draws[k]), boot.level) if draws[k] else None
        result.add("hri_label_agreement", row, k, v, ci=ci)
    confusion = pd.crosstab(pd.Series(la, name="a"), pd.Series(lb, name="b"))
    return {
        "pair": row,
        **point,
        "claims": len(la),
        "undefined_resamples": failed,
        "confusion": {
            str(i): {str(j): int(confusion.loc[i, j]) for j in confusion.columns}
            for i in confusion.index
        },
    }


def _scores_frame(responses: list[Response], scored: list[HRIResult]) -> pd.DataFrame:
    rows = []
    for r, s in zip(responses, scored, strict=True):
        row = {
            "example_id": r.response_id,
            "group_id": r.source or _collection(r),
            "task": _collection(r),
            "label": int(r.outcome),
        }
        row.update({a: s.aggregations[a] for a in AGGREGATIONS})
        row.update(
            {
                "band": s.band,
                "action": s.action,
                "binding_floor": "" if s.binding_floor is None else s.binding_floor.rule,
                "n_claims": len(r.claims),
                "sum_criticality": s.sum_criticality,
            }
        )
        rows.append(row)
    return pd.DataFrame(rows)


# --------------------------------------------------------------------------- figures


def figures(cells: pd.DataFrame) -> dict[str, Any]:
    """ROC and PR curves per aggregation, one figure per collection, from cells alone.

    Parameters
    ----------
    cells : DataFrame
        Long-format cells (``table, row, column, value, ci_low, ci_high``) with the
        ``hri_roc_curve`` and ``hri_pr_curve`` tables (and ``hri_ranking`` for legends).

    Returns
    -------
    dict of str -> matplotlib Figure
        ``hri_roc_pr_<collection>``.
    """
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    roc = _curves(cells, "hri_roc_curve", "fpr", "tpr")
    pr = _curves(cells, "hri_pr_curve", "recall", "precision")
    ranking = cells[cells["table"] == "hri_ranking"]
    metric = {(r.row, r.column): r.value for r in ranking.itertuples(index=False)}
    base = cells[(cells["table"] == "hri_calibration_data") & (cells["column"] == "positives")]
    n_resp = cells[(cells["table"] == "hri_calibration_data") & (cells["column"] == "responses")]
    rate = {
        r.row: r.value / float(n_resp[n_resp["row"] == r.row]["value"].iloc[0])
        for r in base.itertuples(index=False)
    }
    out = {}
    for coll in dict.fromkeys(k.split("/", 1)[0] for k in roc):
        fig, (ax_roc, ax_pr) = plt.subplots(1, 2, figsize=(10, 4.5))
        for key, (x, yv) in roc.items():
            c, agg = key.split("/", 1)
            if c != coll:
                continue
            auc = metric.get((coll, f"{agg}/AUROC"))
            label = agg if auc is None else f"{agg} (AUROC {auc:.3f})"
            ax_roc.plot(x, yv, label=label)
        for key, (x, yv) in pr.items():
            c, agg = key.split("/", 1)
            if c != coll:
                continue
            ap = metric.get((coll, f"{agg}/AP"))
            label = agg if ap is None else f"{agg} (AP {ap:.3f})"
            ax_pr.step(x, yv, where="pre", label=label)
        ax_roc.plot([0, 1], [0, 1], color="grey", linestyle=":", linewidth=1)
        if coll in rate:
            ax_pr.axhline(
                rate[coll],
                color="grey",
                linestyle=":",
                linewidth=1,
                label=f"base rate {rate[coll]:.3f}",
            )
        ax_roc.set(
            xlabel="false positive rate",
            ylabel="true positive rate",
            title=f"ROC: {coll}",
            xlim=(0, 1),
            ylim=(0, 1.02),
        )
        ax_pr.set(
            xlabel="recall",
            ylabel="precision",
            title=f"Precision-recall: {coll}",
            xlim=(0, 1),
            ylim=(0, 1.02),
        )
        ax_roc.legend(fontsize=7, loc="lower right")
        ax_pr.legend(fontsize=7, loc="lower left")
        fig.tight_layout()
        out[f"hri_roc_pr_{coll}"] = fig
    return out


def _curves(
    cells: pd.DataFrame, table: str, xname: str, yname: str
) -> dict[str, tuple[np.ndarray, np.ndarray]]:
    sub = cells[cells["table"] == table]
    out = {}
    for row, part in sub.groupby("row", sort=False):
        pts: dict[str, dict[int, float]] = {xname: {}, yname: {}}
        for rec in part.itertuples(index=False):
            name, _, index = str(rec.column).partition("@")
            if name in pts:
                pts[name][int(index)] = float(rec.value)
        order = sorted(pts[xname])
        out[str(row)] = (
            np.array([pts[xname][i] for i in order]),
            np.array([pts[yname][i] for i in order]),
        )
    return out
