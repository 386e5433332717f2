"""RQ5's tables (Table VIII in-domain, a, b, like for like, per source) from the source-shift
results, cell by cell in the order `cells.csv` lists them.

Why apart from `runner.evaluation.source_shift`: that module computes (fits, scores,
resamples); this one only lays the results out as the paper's rows and columns, so the
study reads as its three steps.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

import numpy as np
import pandas as pd

from runner.evaluation import source_shift
from runner.results import StudyResult


def add_in_domain(result: StudyResult, in_domain: pd.DataFrame, gates: Sequence[str]) -> None:
    """Table VIII (in-domain): AUROC and AP of each gate's out-of-fold scores."""
    for gate in gates:
        a, p = source_shift.auroc_ap(in_domain["label"].to_numpy(), in_domain[gate].to_numpy())
        result.add("table8_in_domain", gate, "AUROC", a)
        result.add("table8_in_domain", gate, "AP", p)


def add_leave_source_out(
    result: StudyResult,
    loso: source_shift.SourceShiftScores,
    sources: Sequence[str],
    positive_rate: Mapping[str, float],
    title: str,
) -> None:
    """Table VIII (a): each held-out source's AUROC and AP with their intervals; the title
    names every source's positive rate, which AP follows."""
    for source in sources:
        for setting, label in source_shift.SETTING_LABELS.items():
            for metric, mlabel in (("auroc", "AUROC"), ("ap", "AP")):
                est = loso.boot[source].estimate(setting, metric)
                ci = (est.low, est.high)
                result.add("table8a", source, f"{label} {mlabel}", est.point, ci=ci)
        result.add("table8a", source, "positive rate", positive_rate[source])
    rates = ", ".join(f"{s} {positive_rate[s]:.3f}" for s in sources)
    result.titles["table8a"] = (
        f"{title}. AP follows each source's positive rate ({rates}), so AP "
        "cells are comparable only between sources (or papers) with the same base rate"
    )


def add_adaptation(
    result: StudyResult,
    loso: source_shift.SourceShiftScores,
    same_test: Mapping[str, Mapping[str, tuple[float, float]]],
    target: pd.DataFrame,
    ks: Sequence[int],
    macro_label: Mapping[int, str],
    whole_everywhere: Mapping[int, bool],
) -> None:
    """Table VIII (b) and its like-for-like twin: macro means per setting and per k."""
    for setting, label in source_shift.SETTING_LABELS.items():
        auroc_mean, ap_mean = source_shift.macro_means(loso.full[setting])
        result.add("table8b", label, "AUROC", auroc_mean)
        result.add("table8b", label, "AP", ap_mean)
    zero_test = source_shift.macro_means(same_test["zero-shot"])
    for label, by_source in same_test.items():
        means = source_shift.macro_means(by_source)
        result.add("table8b_same_test_sets", label, "AUROC", means[0])
        result.add("table8b_same_test_sets", label, "AP", means[1])
        result.add("table8b_same_test_sets", label, "Δ AUROC", means[0] - zero_test[0])
        result.add("table8b_same_test_sets", label, "Δ AP", means[1] - zero_test[1])
    metrics = (("auroc", "AUROC", zero_test[0]), ("ap", "AP", zero_test[1]))
    for k in ks:
        row, defined = macro_label[int(k)], not whole_everywhere[int(k)]
        means = {}
        for metric, mlabel, _ in metrics:
            means[metric], se = source_shift.macro_over_seeds(target, k, metric, defined)
            result.add("table8b", row, mlabel, means[metric])
            result.add("table8b", row, f"{mlabel} SE", se)
        for metric, mlabel, z in metrics:
            result.add("table8b_same_test_sets", row, mlabel, means[metric])
            result.add("table8b_same_test_sets", row, f"Δ {mlabel}", means[metric] - z)


def add_per_source(
    result: StudyResult,
    sources: Sequence[str],
    same_test: Mapping[str, Mapping[str, tuple[float, float]]],
    target: pd.DataFrame,
    source_label: Mapping[tuple[str, int], str],
    test_rate: Mapping[str, float],
    src_all: np.ndarray,
) -> None:
    """Per source, on its fixed test set: zero-shot, cross-source and each k's target-only
    mean, with the labels each used."""
    per_source = source_shift.per_source_means(target)
    for source in sources:
        rows = []
        for label in ("zero-shot", "cross-source"):
            used = 0 if label == "zero-shot" else int((src_all != source).sum())
            rows.append((f"{source} {label}", *same_test[label][source], used))
        for rec in per_source[per_source["source"] == source].itertuples(index=False):
            label = f"{source} target-only {source_label[(source, int(rec.k))]}"
            rows.append((label, rec.auroc, rec.ap, rec.k_used))
        for row, a, p, used in rows:
            result.add("table8b_per_source", row, "AUROC", a)
            result.add("table8b_per_source", row, "AP", p)
            result.add("table8b_per_source", row, "labels used", used)
            result.add("table8b_per_source", row, "test positive rate", test_rate[source])


def add_adaptation_titles(
    result: StudyResult,
    titles: Mapping[str, str],
    test_fraction: float,
    src_all: np.ndarray,
    sources: Sequence[str],
    test_sets: Mapping[str, np.ndarray],
    macro_label: Mapping[int, str],
    whole: Mapping[int, bool],
) -> None:
    """Table VIII (b) titles naming the rows each setting was scored on."""
    n_full = "/".join(map(str, sorted({int((src_all == s).sum()) for s in sources})))
    n_test = "/".join(map(str, sorted({int(idx.size) for idx in test_sets.values()})))
    share = f"{test_fraction:.0%}"
    result.titles["table8b"] = (
        f"{titles['table8b']}. zero-shot and cross-source: each source's full rows "
        f"({n_full}); target-only: the fixed {share} test sets ({n_test} rows); "
        "like-for-like rows are in table8b_same_test_sets"
    )
    undefined = [macro_label[k] for k, drawn_whole in whole.items() if drawn_whole]
    if undefined:
        result.titles["table8b"] += (
            f". SE undefined (pool drawn whole) for {', '.join(undefined)}: every "
            "repetition fits the same rows, so these cells are not compared with the paper"
        )
    result.titles["table8b_same_test_sets"] = (
        f"{titles['table8b_same_test_sets']} (each source's {share}, {n_test} rows), "
        "macro over sources; Δ = setting − zero-shot"
    )


def sources_record(
    frame: pd.DataFrame,
    sources: Sequence[str],
    test_sets: Mapping[str, np.ndarray],
    pools: Any,
    unit: str,
    caps: Any,
    overlap: Any,
) -> dict[str, Any]:
    """`sources.json`: which sources the macro rows average over, their sizes, and the caps."""
    y_all = frame["label"].to_numpy()
    return {
        "sources": sources,
        "rows_per_source": {s: int((frame["source"] == s).sum()) for s in sources},
        "positives_per_source": {s: int(y_all[frame["source"] == s].sum()) for s in sources},
        "test_rows_per_source": {s: int(idx.size) for s, idx in test_sets.items()},
        "pool_rows_per_source": pools,
        "in_domain_unit": unit,
        "caps": [{"source": s, "k": k, "k_used": u} for s, k, u in caps],
        "target_test_rows_sharing_a_group_with_their_sample": overlap,
    }
