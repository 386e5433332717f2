"""One collection of a calibration study: scopes, the by-construction split, every table.

Why: `runner.studies.hri_calibration` calibrates each collection of a claim frame the same
way; the steps — per-source scopes, bootstrap weights, the by-construction test that
decides headline vs sanity, and the ranking and band tables — live here so the study stays
an orchestrator.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

import numpy as np

from runner.data import Response
from runner.errors import DataError
from runner.evaluation import BootstrapConf, resample_weights
from runner.hri.calibration_tables import (
    Targets,
    band_and_cutoff_cells,
    ranking_cells,
)
from runner.hri.config import HRIConfig
from runner.hri.construction import outcome_construction
from runner.hri.scoring import HRIResult
from runner.results import StudyResult


def calibrate_collection(
    result: StudyResult,
    coll: str,
    responses: list[Response],
    scored: list[HRIResult],
    config: HRIConfig,
    aggregations: Sequence[str],
    baseline: str,
    targets: Targets,
    boot: BootstrapConf,
    seed: list[int],
    summary: dict[str, Any],
) -> dict[str, Any]:
    """Every table of one collection; by-construction scopes go to the sanity table.

    Scopes are the collection and, when it has several sources each holding both
    outcomes, each source (resampling then stratified by source). Each scope is tested
    with `runner.hri.construction`; a collection pooling a by-construction source is
    itself a sanity scope. Band, operating-point, cut-off, sweep and curve tables are
    written only for a collection none of whose scopes is by construction. ``summary``
    collects ``best`` (headline scopes) and ``sanity_scopes``.
    """
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
    weights, redrawn = resample_weights(
        y, boot.n_resamples, seed, strata=sources if stratify else None
    )
    scores = {a: np.array([s.aggregations[a] for s in scored]) for a in aggregations}

    scopes = [(coll, np.arange(y.shape[0]))]
    if stratify:
        scopes += [(f"{coll}:{s}", np.flatnonzero(sources == s)) for s in names]
    severity = {name: spec.contribution for name, spec in config.labels.items()}
    tests = {
        scope: outcome_construction([responses[i] for i in rows], severity)
        for scope, rows in scopes
    }
    by_construction = {scope: t.determined for scope, t in tests.items()}
    if not by_construction[coll] and any(by_construction.values()):
        by_construction[coll] = True
        notes.append(
            f"{coll} pools sources whose outcome is defined from their claim labels "
            f"({[s for s, d in tests.items() if d.determined]}): the pooled ranking is a "
            "sanity row and the collection gets no band tables"
        )
    for scope, rows in scopes:
        data_cells(result, scope, rows, y, responses, scored, tests[scope])
        sub = {a: s[rows] for a, s in scores.items()}
        if by_construction[scope]:
            summary["sanity_scopes"].append(scope)
            ranking_cells(
                result, "hri_sanity_ranking", scope, y[rows], sub, weights[:, rows], boot.level
            )
            continue
        summary["best"][scope] = ranking_cells(
            result,
            "hri_ranking",
            scope,
            y[rows],
            sub,
            weights[:, rows],
            boot.level,
            baseline=baseline,
            delta_table="hri_ranking_delta",
        )
    headline = not by_construction[coll]
    thresholds = (
        band_and_cutoff_cells(result, coll, y, scores, weights, config, targets, boot.level)
        if headline
        else {}
    )
    return {
        "responses": int(y.shape[0]),
        "positives": int(y.sum()),
        "sources": names,
        "stratified_by_source": stratify,
        "n_redrawn": redrawn,
        "headline": headline,
        "construction": {scope: t.to_dict() for scope, t in tests.items()},
        "notes": notes,
        "suggested_cutoffs": thresholds,
    }


def data_cells(
    result: StudyResult,
    scope: str,
    rows: np.ndarray,
    y: np.ndarray,
    responses: list[Response],
    scored: list[HRIResult],
    test: Any,
) -> None:
    result.add("hri_calibration_data", scope, "responses", rows.shape[0])
    result.add("hri_calibration_data", scope, "positives", y[rows].sum())
    result.add("hri_calibration_data", scope, "claims", sum(len(responses[i].claims) for i in rows))
    result.add(
        "hri_calibration_data",
        scope,
        "floor_bound",
        sum(scored[i].binding_floor is not None for i in rows),
    )
    t = "hri_outcome_construction"
    result.add(t, scope, "responses", test.responses)
    result.add(t, scope, "label_multisets", test.label_sets)
    result.add(t, scope, "conflicting_multisets", test.conflicting_sets)
    result.add(t, scope, "best_rule_agreement", test.best_rule_agreement)
    result.add(t, scope, "determined", int(test.determined))
