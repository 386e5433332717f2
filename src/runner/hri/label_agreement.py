"""Agreement between two labellings of the same claims, with response-cluster intervals.

Why: Factcheck-Bench's tree labels every claim twice — by the annotators (gold) and from
the stances of retrieved evidence — and the HRI calibration reads either. How far the two
agree says how much of a calibration result is about the labeller rather than the index.
Statistics: raw agreement, Cohen's kappa, Krippendorff's alpha (nominal) and kappa on the
binary "flagged" view (label other than SUPPORTED). Claims of one response are not
independent, so intervals resample responses (clusters) with replacement.
"""

from __future__ import annotations

from typing import Any

import numpy as np
import pandas as pd

from runner.evaluation import cohen_kappa, krippendorff_alpha, percentile_interval
from runner.results import StudyResult

TABLE = "hri_label_agreement"
SAFE = "SUPPORTED"


def agreement_stats(la: np.ndarray, lb: np.ndarray) -> dict[str, float]:
    """Agreement, kappa, alpha and flagged-view kappa of two label arrays."""
    fa, fb = la != SAFE, lb != SAFE
    return {
        "agreement": float((la == lb).mean()),
        "kappa": cohen_kappa(la.tolist(), lb.tolist()),
        "alpha": krippendorff_alpha([la.tolist(), lb.tolist()], "nominal").alpha,
        "kappa_flagged": cohen_kappa(fa.tolist(), fb.tolist()),
    }


def collection_agreement(
    result: StudyResult, frame: pd.DataFrame, n_resamples: int, level: float, seed: int
) -> list[dict[str, Any]]:
    """Agreement cells for every pair of collections (``task``) that label the same claims.

    Claims are matched by (file, response row, local claim id); pairs without shared
    claims are skipped.
    """
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
            out.append(
                agreement_cells(result, f"{a} vs {b}", la, lb, clusters, n_resamples, level, seed)
            )
    return out


def agreement_cells(
    result: StudyResult,
    row: str,
    la: np.ndarray,
    lb: np.ndarray,
    clusters: np.ndarray,
    n_resamples: int,
    level: float,
    seed: int,
) -> dict[str, Any]:
    """Agreement cells of one pair (row ``row``) and a JSON summary with the confusion."""
    point = agreement_stats(la, lb)
    units = sorted(set(clusters.tolist()))
    members = [np.flatnonzero(clusters == u) for u in units]
    rng = np.random.default_rng([seed, 1_000_003])
    draws: dict[str, list[float]] = {k: [] for k in point}
    failed = 0
    for _ in range(n_resamples):
        picks = rng.integers(0, len(units), size=len(units))
        rows = np.concatenate([members[u] for u in picks])
        try:
            stats = agreement_stats(la[rows], lb[rows])
        except ValueError:
            failed += 1
            continue
        for k, v in stats.items():
            draws[k].append(v)
    result.add(TABLE, row, "claims", len(la))
    result.add(TABLE, row, "responses", len(units))
    for k, v in point.items():
        ci = percentile_interval(np.array(draws[k]), level) if draws[k] else None
        result.add(TABLE, row, k, v, ci=ci)
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
