"""Source-shift evaluation: zero-shot, cross-source (leave one source out) and target-only.

Why here: RQ5 and the operating report (`runner.routing.report.operating_tables`) both ask
"does a learned gate survive a new source?", and they need the same loops, their interval
and standard-error rules and the labels that say how many target rows were really used. The
studies keep their recipes and tables; the loops live here, once (`bootstrap_by_source`,
`fit_target_samples`, `samples_by_source`), and receive built gates and splitters, so this
module depends on no gate or feature code.

Settings, all scored per source:

- zero-shot: a training-free score, no labels at all;
- cross-source: the learned gate fitted on the other sources (`LeaveSourceOut`);
- target-only: the learned gate fitted on k labelled rows of the source only, repeated over
  seeds, on a fixed per-source test set (`TargetAdaptation`).
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Mapping, Sequence
from dataclasses import dataclass
from typing import Any

import numpy as np
import pandas as pd
from sklearn.base import clone
from tqdm.auto import tqdm

from runner.errors import ConfigError
from runner.evaluation.bootstrap import BootstrapResult, group_bootstrap, standard_metrics
from runner.evaluation.metrics import auroc, average_precision
from runner.evaluation.oof import score_gates

ZERO_SHOT, CROSS_SOURCE = "zero_shot", "cross_source"  # score columns of `leave_source_out`
SETTING_LABELS = {ZERO_SHOT: "zero-shot", CROSS_SOURCE: "cross-source"}
NOT_COMPUTABLE = "not computable"
"""How a source's row is marked when its rows cannot give the number (the reason follows)."""
AUROC_AP = {"auroc": auroc, "ap": average_precision}
"""The point metrics of RQ5's target-only runs (column name -> metric(y, s))."""


def auroc_ap(y: np.ndarray, s: np.ndarray) -> tuple[float, float]:
    """AUROC and AP of scores `s` against 0/1 labels `y`."""
    return auroc(y, s), average_precision(y, s)


def in_domain_unit(splitter: Any, group_col: str | None) -> str:
    """The unit no in-domain fold may split: `group_col`, else the split's own group
    column, else ``example_id`` (a row-level CV)."""
    if group_col is not None:
        return group_col
    return getattr(splitter, "group_col", None) or "example_id"


def in_domain_title(splitter: Any, unit: str, frame: pd.DataFrame) -> str:
    """Table title that says how the in-domain CV was split (row-level or grouped)."""
    n = splitter.get_n_splits(frame)
    kind = type(splitter).__name__
    if unit == "example_id":
        how = f"row-level ({kind}; a passage may be on both sides of a fold, as in the paper)"
    else:
        how = f"grouped by {unit!r} ({kind}; no {unit} on both sides of a fold)"
    return f"Table VIII (in-domain): {n}-fold CV on all rows, {how}"


@dataclass(frozen=True)
class SourceShiftScores:
    """Leave-one-source-out scores and their per-source statistics.

    Attributes
    ----------
    scores : pandas.DataFrame
        Out-of-source scores: the id columns, `fold`, `cross_source` and `zero_shot`.
    boot : dict of source -> BootstrapResult
        Within-source context-group bootstrap of AUROC and AP for both settings.
    full : dict of setting -> dict of source -> (AUROC, AP)
        Point metrics on each source's full rows.
    """

    scores: pd.DataFrame
    boot: dict[str, BootstrapResult]
    full: dict[str, dict[str, tuple[float, float]]]


def leave_source_out(
    calibrated: Any,
    zero_shot: Any,
    frame: pd.DataFrame,
    splitter: Any,
    boot: Any,
    sources: Sequence[str],
    progress: bool = False,
) -> SourceShiftScores:
    """Score both settings with each source held out; bootstrap within each source.

    `calibrated` is fitted on the other sources (cross-source); `zero_shot` needs no fit.
    `boot` holds `n_resamples`, `level` and `seed` (`BootstrapConf`).
    """
    scores = score_gates(
        {CROSS_SOURCE: calibrated, ZERO_SHOT: zero_shot}, frame, splitter, progress=progress
    )
    metrics = {k: v for k, v in standard_metrics().items() if k in ("auroc", "ap")}
    settings = (ZERO_SHOT, CROSS_SOURCE)
    by_source = bootstrap_by_source(scores, settings, sources, metrics, boot, "example_id")
    full: dict[str, dict[str, tuple[float, float]]] = {ZERO_SHOT: {}, CROSS_SOURCE: {}}
    for source in sources:
        sub = scores[scores["source"].astype(str) == source]
        y = sub["label"].to_numpy()
        for setting in settings:
            full[setting][source] = auroc_ap(y, sub[setting].to_numpy())
    return SourceShiftScores(scores=scores, boot=by_source, full=full)


def bootstrap_by_source(
    scores: pd.DataFrame,
    columns: Sequence[str],
    sources: Sequence[str],
    metrics: Mapping[str, Any],
    boot: Any,
    order_key: str | None = None,
) -> dict[str, BootstrapResult]:
    """Within-source context-group bootstrap of every score column, one result per source.

    `scores` has `source`, `label`, `group_id` and the `columns`; `metrics` are batched
    (`runner.evaluation.bootstrap`); `boot` holds `n_resamples`, `seed` and `level`.
    `order_key` names the column that orders the groups before drawing (None: sorted id).
    """
    out: dict[str, BootstrapResult] = {}
    for source in sources:
        sub = scores[scores["source"].astype(str) == source]
        out[source] = group_bootstrap(
            sub["label"].to_numpy(),
            {c: sub[c].to_numpy(float) for c in columns},
            sub["group_id"].to_numpy(),
            metrics,
            n_resamples=int(boot.n_resamples),
            seed=int(boot.seed),
            level=float(boot.level),
            order_key=None if order_key is None else sub[order_key].to_numpy(),
        )
    return out


def one_group_sources(frame: pd.DataFrame) -> list[str]:
    """Sources whose rows all share one context group.

    Why: a source-level number needs its groups resampled and split; with a single group
    there is no interval and no test set that leaves a pool, so a report marks such a
    source rather than failing on it.
    """
    groups = frame.groupby(frame["source"].astype(str), sort=True)["group_id"].nunique()
    return [str(s) for s in groups[groups < 2].index]


def samples_by_source(
    sampler: Any, frame: pd.DataFrame, skip: Iterable[str] = ()
) -> tuple[list[tuple[pd.DataFrame, Any]], dict[str, str]]:
    """(the source's rows, record) for every target sample of each source, sampled alone.

    Each source is sampled on its own rows: the test sets and samples depend only on the
    seed, the source and its rows in order, so they are the rows the whole-frame sampler
    would draw, and a source the sampler refuses does not stop the others. Sources in
    `skip` are left out. Returns the samples and ``{source: why}`` for the refused ones.
    """
    out, refused = [], {}
    values = frame["source"].astype(str)
    skipped = set(skip)
    for source in sorted(values.unique()):
        if source in skipped:
            continue
        sub = frame[values == source]
        try:
            records = sampler.records(sub)
        except ConfigError:
            refused[source] = "too few rows of each class for a test set and a labelled pool"
            continue
        out += [(sub, rec) for rec in records]
    return out, refused


def fit_target_samples(
    gates: Mapping[str, Any],
    samples: Iterable[tuple[pd.DataFrame, Any]],
    metrics: Mapping[str, Callable[[np.ndarray, np.ndarray], float]],
    progress: bool = False,
    skip_single_class: bool = False,
) -> tuple[pd.DataFrame, int]:
    """Fit a clone of every gate on each target sample and score its fixed test set.

    `samples` are (rows, record) pairs whose record indexes the rows (`train_idx`,
    `test_idx`, `source`, `k`, `k_used`, `rep`). Returns one row per (sample, gate) with
    ``source, k, k_used, rep, gate`` and each metric, and the number of test rows that
    share a group with their sample (0 with a group-aware pool). With `skip_single_class`
    a sample whose training or test rows hold one class is skipped (a report); without,
    the metrics see it as it is (RQ5 samples preserve prevalence).
    """
    rows, overlap = [], 0
    for frame, rec in tqdm(samples, desc="target-only fits", disable=not progress):
        if np.intersect1d(rec.train_idx, rec.test_idx).size:
            raise ConfigError(
                f"the target sampler put test rows of {rec.source} (k={rec.k}, rep={rec.rep}) "
                "into the labelled sample; target-only scores would be in-sample: set "
                "splits.target to a sampler that draws outside its test sets "
                "(runner.evaluation.splits.TargetAdaptation)"
            )
        train, test = frame.iloc[rec.train_idx], frame.iloc[rec.test_idx]
        if skip_single_class and (train["label"].nunique() < 2 or test["label"].nunique() < 2):
            continue
        overlap += int(test["group_id"].isin(set(train["group_id"])).sum())
        y = test["label"].to_numpy()
        for name, gate in gates.items():
            s = clone(gate).fit(train, train["label"].to_numpy()).score(test)
            row = {"source": rec.source, "k": rec.k, "k_used": rec.k_used, "rep": rec.rep}
            rows.append({**row, "gate": name, **{m: f(y, s) for m, f in metrics.items()}})
    return pd.DataFrame(rows), overlap


def same_test_sets(
    loso: pd.DataFrame, test_sets: Mapping[str, np.ndarray]
) -> dict[str, dict[str, tuple[float, float]]]:
    """Zero-shot and cross-source (AUROC, AP) on each source's fixed target test set.

    `loso` must be in the frame's row order (a partition splitter's `score_gates` output),
    so the test sets' positional indices address it directly.
    """
    y = loso["label"].to_numpy()
    out: dict[str, dict[str, tuple[float, float]]] = {}
    for setting in (ZERO_SHOT, CROSS_SOURCE):
        s = loso[setting].to_numpy()
        out[SETTING_LABELS[setting]] = {
            src: auroc_ap(y[idx], s[idx]) for src, idx in test_sets.items()
        }
    return out


def target_only(
    gate: Any, frame: pd.DataFrame, sampler: Any, progress: bool = False
) -> tuple[pd.DataFrame, int]:
    """Fit a clone of `gate` on every target sample, score its source's fixed test set.

    Returns one row per (source, k, repetition) with `k_used`, `auroc` and `ap`, and the
    number of test rows that share a group with their sample (0 with a group-aware pool).
    """
    samples = [(frame, rec) for rec in sampler.records(frame)]
    runs, overlap = fit_target_samples({"gate": gate}, samples, AUROC_AP, progress)
    return runs.drop(columns="gate", errors="ignore"), overlap


def k_labels(
    runs: pd.DataFrame, pools: Mapping[str, int], sources: Sequence[str]
) -> tuple[dict[int, str], dict[tuple[str, int], str], dict[int, bool]]:
    """Row labels that name the labels actually used.

    Per source: ``k=<used>``, with ``(cap)`` where the pool held fewer than k rows and
    ``(whole pool)`` where k equals the pool. Macro: ``target-only k=<k>``, qualified with
    the per-source caps and whole pools when there are any. Also returns, per k, whether
    every source drew its whole pool (then every repetition fits the same rows and the SE
    over repetitions is undefined rather than 0).
    """
    macro, per_source, whole_everywhere = {}, {}, {}
    for k, sub in runs.groupby("k", sort=True):
        used = sub.groupby("source")["k_used"].first().to_dict()
        capped, whole = [], []
        for source in sources:
            u = int(used[source])
            if u < k:
                capped.append(f"{source} {u}")
                per_source[(source, int(k))] = f"k={u} (cap)"
            elif u == pools[source]:
                per_source[(source, int(k))] = f"k={u} (whole pool)"
            else:
                per_source[(source, int(k))] = f"k={u}"
            if u == pools[source]:
                whole.append(source)
        whole_everywhere[int(k)] = len(whole) == len(sources)
        notes = []
        if capped:
            notes.append(f"capped: {', '.join(capped)}")
        if whole_everywhere[int(k)]:
            notes.append("pool drawn whole in every source")
        elif whole:
            notes.append(f"pool drawn whole: {', '.join(whole)}")
        macro[int(k)] = f"target-only k={k}" + (f" ({'; '.join(notes)})" if notes else "")
    return macro, per_source, whole_everywhere


def macro_means(by_source: Mapping[str, tuple[float, float]]) -> tuple[float, float]:
    """Macro (AUROC, AP): the unweighted mean over sources."""
    return tuple(float(np.mean([v[i] for v in by_source.values()])) for i in (0, 1))


def macro_over_seeds(runs: pd.DataFrame, k: int, metric: str, defined: bool) -> tuple[float, Any]:
    """Mean over repetitions of the macro-over-sources `metric` at `k`, and its standard
    error over repetitions (None where undefined: one repetition, or `defined` false)."""
    macro = runs.groupby(["k", "rep"])[["auroc", "ap"]].mean().reset_index()
    vals = macro[macro["k"] == k][metric].to_numpy()
    n = vals.size
    se = float(vals.std(ddof=1) / np.sqrt(n)) if n > 1 and defined else None
    return float(vals.mean()), se


def per_source_means(runs: pd.DataFrame) -> pd.DataFrame:
    """Target-only AUROC, AP and labels used per (source, k), averaged over repetitions."""
    return runs.groupby(["source", "k"])[["auroc", "ap", "k_used"]].mean().reset_index()
