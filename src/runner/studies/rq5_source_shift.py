"""RQ5: does learned calibration survive source shift, and how many target labels recover it?

Three settings on a data set with a `source` column (HaluBench: `source_ds`; RAGTruth:
the task), all with the calibrated gate (RAGScope-C, no TF-IDF) beside the training-free
uncovered-token score:

1. In-domain 5-fold CV on all rows (Table VIII, in-domain line). The split is the
   experiment's `split`: grouped by passage by default (HaluBench repeats passages, and a
   row-level fold would put the same passage on both sides); `split=kfold` is the paper's
   row-level CV (`in_domain_group_col` says which unit the leakage check guards).
2. Leave-one-source-out: train on the other sources, score the held-out one; AUROC/AP
   with within-source group-bootstrap intervals (Table VIII a).
3. Target-only adaptation: per source a fixed stratified 20 % test set, k labelled rows
   drawn (prevalence-preserving) from the other 80 %, fit on the sample only, repeated
   over seeds; macro mean over sources ± standard error over seeds (Table VIII b). By
   default rows that share a passage with the test set are kept out of the pool (the
   paper samples rows; HaluBench repeats passages), so k is capped where the pool is
   smaller, and the caps are reported in `sources.json` and the per-source table.
   Rows are labelled by the labels actually used (`k=191 (cap)`, `(whole pool)`); where
   every source drew its whole pool the SE over seeds is undefined (written empty), not 0.
   Zero-shot and cross-source are also scored on the same fixed test sets
   (`table8b_same_test_sets`), so the target-only gain is read like for like.

Macro rows average over the sources the data holds; which ones they are is recorded in
`sources.json`, and the published table's other sources are marked missing, not compared.
"""

from __future__ import annotations

from dataclasses import dataclass, field

import numpy as np
import pandas as pd
from hydra.utils import instantiate
from omegaconf import DictConfig
from sklearn.base import clone
from tqdm.auto import tqdm

from runner.errors import ConfigError
from runner.evaluation import scopes as rs
from runner.evaluation.bootstrap import group_bootstrap, standard_metrics
from runner.evaluation.metrics import auroc, average_precision
from runner.evaluation.oof import score_gates
from runner.evaluation.splits import LeaveSourceOut, TargetAdaptation
from runner.features import with_lexical_features
from runner.reporting.reproduction import TITLES_FILE
from runner.results import StudyResult

PAPER = "ragscope"
PAPER_DATASETS = ("halubench",)  # Table VIII is HaluBench; other data sets have no paper row
TITLES = {
    "table8_in_domain": "Table VIII (in-domain): 5-fold CV on all rows",
    "table8a": "Table VIII (a): leave one source out, within-source bootstrap 95 % CI",
    "table8b": "Table VIII (b): macro target adaptation, mean and SE over seeds",
    "table8b_same_test_sets": "Like for like: every setting on the same fixed test sets",
    "table8b_per_source": "Per source, on its fixed test set (target-only: mean over seeds)",
}


@dataclass
class Params:
    """RQ5 parameters."""

    calibrated_gate: str = "ragscope_c"  # the learned gate that is transferred / adapted
    zero_shot_gate: str = "uncovered"  # the training-free reference score
    test_fraction: float = 0.2  # fixed per-source test share for target adaptation
    ks: list[int] = field(default_factory=lambda: [25, 50, 100, 200])  # target label budgets
    n_seeds: int = 10  # repetitions per k (standard errors over these)
    min_sources: int = 2  # leave-source-out needs at least this many sources
    group_aware_pool: bool = True  # keep rows sharing a passage with the test set out of samples
    # Unit of the in-domain CV's leakage check: null = the split's own group column when it
    # has one (grouped_kfold: the passage), else example_id (split=kfold: every row its own
    # unit, the paper's row-level CV, where a passage may sit on both sides of a fold).
    in_domain_group_col: str | None = None


def _metrics(y: np.ndarray, s: np.ndarray) -> tuple[float, float]:
    return auroc(y, s), average_precision(y, s)


def _in_domain_unit(splitter, params: Params) -> str:
    if params.in_domain_group_col is not None:
        return params.in_domain_group_col
    return getattr(splitter, "group_col", None) or "example_id"


def _in_domain_title(splitter, unit: str) -> str:
    n = splitter.get_n_splits()
    kind = type(splitter).__name__
    if unit == "example_id":
        how = f"row-level ({kind}; a passage may be on both sides of a fold, as in the paper)"
    else:
        how = f"grouped by {unit!r} ({kind}; no {unit} on both sides of a fold)"
    return f"Table VIII (in-domain): {n}-fold CV on all rows, {how}"


def _k_labels(
    runs: pd.DataFrame, pools: dict[str, int], sources: list[str]
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


def run(cfg: DictConfig, data, params: Params) -> StudyResult:
    """In-domain CV, leave-one-source-out and target-only adaptation."""
    gates = rs.build_gates(cfg)
    for role, name in (
        ("calibrated_gate", params.calibrated_gate),
        ("zero_shot_gate", params.zero_shot_gate),
    ):
        if name not in gates:
            raise ConfigError(
                f"study.params.{role}={name!r} is not a configured gate "
                f"(configured: {sorted(gates)})"
            )
    frame = with_lexical_features(data.frame, cfg.paths.cache_dir).reset_index(drop=True)
    rs.check_binary_labels(frame, data.name)
    sources = sorted(frame["source"].astype(str).unique())
    if len(sources) < params.min_sources:
        raise ConfigError(
            f"data set {data.name}: {len(sources)} source(s) {sources}; "
            f"leave-source-out needs at least {params.min_sources}"
        )
    cal, zero = params.calibrated_gate, params.zero_shot_gate
    pair = {cal: gates[cal], zero: gates[zero]}
    y_all = frame["label"].to_numpy()
    src_all = frame["source"].astype(str).to_numpy()
    result = StudyResult(titles=dict(TITLES))

    # 1. in-domain CV
    splitter = instantiate(cfg.split)
    unit = _in_domain_unit(splitter, params)
    in_domain = score_gates(pair, frame, splitter, progress=cfg.progress, group_col=unit)
    result.titles["table8_in_domain"] = _in_domain_title(splitter, unit)
    for gate in (cal, zero):
        a, p = _metrics(in_domain["label"].to_numpy(), in_domain[gate].to_numpy())
        result.add("table8_in_domain", gate, "AUROC", a)
        result.add("table8_in_domain", gate, "AP", p)

    # 2. leave one source out
    loso = score_gates(pair, frame, LeaveSourceOut(column="source"), progress=cfg.progress)
    loso = loso.rename(columns={cal: "cross_source", zero: "zero_shot"})
    boot_metrics = {k: v for k, v in standard_metrics().items() if k in ("auroc", "ap")}
    zero_by_source, cross_by_source = {}, {}
    positive_rate = {s: float(y_all[src_all == s].mean()) for s in sources}
    for source in sources:
        sub = loso[loso["source"].astype(str) == source]
        boot = group_bootstrap(
            sub["label"].to_numpy(),
            {
                "zero_shot": sub["zero_shot"].to_numpy(float),
                "cross_source": sub["cross_source"].to_numpy(float),
            },
            sub["group_id"].to_numpy(),
            boot_metrics,
            n_resamples=int(cfg.bootstrap.n_resamples),
            seed=int(cfg.bootstrap.seed),
            level=float(cfg.bootstrap.level),
            order_key=sub["example_id"].to_numpy(),
        )
        for gate, label in (("zero_shot", "zero-shot"), ("cross_source", "cross-source")):
            for metric, mlabel in (("auroc", "AUROC"), ("ap", "AP")):
                est = boot.estimate(gate, metric)
                result.add(
                    "table8a", source, f"{label} {mlabel}", est.point, ci=(est.low, est.high)
                )
        result.add("table8a", source, "positive rate", positive_rate[source])
        zero_by_source[source] = _metrics(sub["label"].to_numpy(), sub["zero_shot"].to_numpy())
        cross_by_source[source] = _metrics(sub["label"].to_numpy(), sub["cross_source"].to_numpy())
    rates = ", ".join(f"{s} {positive_rate[s]:.3f}" for s in sources)
    result.titles["table8a"] = (
        f"{TITLES['table8a']}. AP follows each source's positive rate ({rates}), so AP "
        "cells are comparable only between sources (or papers) with the same base rate"
    )

    # 3. target-only adaptation
    sampler = TargetAdaptation(
        test_fraction=params.test_fraction,
        ks=params.ks,
        n_seeds=params.n_seeds,
        seed=int(cfg.seed),
        column="source",
        group_col="group_id" if params.group_aware_pool else None,
    )
    records = sampler.records(frame)
    pools = sampler.pool_sizes(frame)
    test_sets = sampler.test_sets(frame)
    rows, overlap = [], 0
    for rec in tqdm(records, desc="target-only fits", disable=not cfg.progress):
        if np.intersect1d(rec.train_idx, rec.test_idx).size:
            raise AssertionError(f"{rec.source} k={rec.k} rep={rec.rep}: test row in sample")
        train, test = frame.iloc[rec.train_idx], frame.iloc[rec.test_idx]
        overlap += int(test["group_id"].isin(set(train["group_id"])).sum())
        model = clone(gates[cal]).fit(train, train["label"].to_numpy())
        a, p = _metrics(test["label"].to_numpy(), model.score(test))
        rows.append(
            {
                "source": rec.source,
                "k": rec.k,
                "k_used": rec.k_used,
                "rep": rec.rep,
                "auroc": a,
                "ap": p,
            }
        )
    target = pd.DataFrame(rows)
    macro_label, source_label, whole_everywhere = _k_labels(target, pools, sources)

    # zero-shot and cross-source on the same fixed test sets as target-only (like for like)
    same_test: dict[str, dict[str, tuple[float, float]]] = {"zero-shot": {}, "cross-source": {}}
    for source, idx in test_sets.items():
        y_test = loso["label"].to_numpy()[idx]
        same_test["zero-shot"][source] = _metrics(y_test, loso["zero_shot"].to_numpy()[idx])
        same_test["cross-source"][source] = _metrics(y_test, loso["cross_source"].to_numpy()[idx])

    n_full = sorted({int((src_all == s).sum()) for s in sources})
    n_test = sorted({int(idx.size) for idx in test_sets.values()})
    result.titles["table8b"] = (
        f"{TITLES['table8b']}. zero-shot and cross-source: each source's full rows "
        f"({'/'.join(map(str, n_full))}); target-only: the fixed {params.test_fraction:.0%} "
        f"test sets ({'/'.join(map(str, n_test))} rows); like-for-like rows are in "
        "table8b_same_test_sets"
    )
    undefined = [macro_label[k] for k, whole in whole_everywhere.items() if whole]
    if undefined:
        result.titles["table8b"] += (
            f". SE undefined (pool drawn whole) for {', '.join(undefined)}: every repetition "
            "fits the same rows, so these cells are not compared with the paper"
        )
    result.titles["table8b_same_test_sets"] = (
        f"{TITLES['table8b_same_test_sets']} (each source's {params.test_fraction:.0%}, "
        f"{'/'.join(map(str, n_test))} rows), macro over sources; Δ = setting − zero-shot"
    )
    for label, by_source in (("zero-shot", zero_by_source), ("cross-source", cross_by_source)):
        result.add("table8b", label, "AUROC", float(np.mean([v[0] for v in by_source.values()])))
        result.add("table8b", label, "AP", float(np.mean([v[1] for v in by_source.values()])))
    zero_test = [float(np.mean([v[i] for v in same_test["zero-shot"].values()])) for i in (0, 1)]
    for label, by_source in same_test.items():
        means = [float(np.mean([v[i] for v in by_source.values()])) for i in (0, 1)]
        result.add("table8b_same_test_sets", label, "AUROC", means[0])
        result.add("table8b_same_test_sets", label, "AP", means[1])
        result.add("table8b_same_test_sets", label, "Δ AUROC", means[0] - zero_test[0])
        result.add("table8b_same_test_sets", label, "Δ AP", means[1] - zero_test[1])
    macro = target.groupby(["k", "rep"])[["auroc", "ap"]].mean().reset_index()
    for k in params.ks:
        m = macro[macro["k"] == k]
        n = len(m)
        row = macro_label[int(k)]
        for metric, mlabel in (("auroc", "AUROC"), ("ap", "AP")):
            vals = m[metric].to_numpy()
            defined = n > 1 and not whole_everywhere[int(k)]
            se = float(vals.std(ddof=1) / np.sqrt(n)) if defined else None
            result.add("table8b", row, mlabel, float(vals.mean()))
            result.add("table8b", row, f"{mlabel} SE", se)
        for metric, mlabel, z in (("auroc", "AUROC", zero_test[0]), ("ap", "AP", zero_test[1])):
            mean = float(m[metric].to_numpy().mean())
            result.add("table8b_same_test_sets", row, mlabel, mean)
            result.add("table8b_same_test_sets", row, f"Δ {mlabel}", mean - z)
    test_rate = {s: float(y_all[idx].mean()) for s, idx in test_sets.items()}
    per_source = target.groupby(["source", "k"])[["auroc", "ap", "k_used"]].mean().reset_index()
    for source in sources:
        for label in ("zero-shot", "cross-source"):
            a, p = same_test[label][source]
            used = 0 if label == "zero-shot" else int((src_all != source).sum())
            row = f"{source} {label}"
            result.add("table8b_per_source", row, "AUROC", a)
            result.add("table8b_per_source", row, "AP", p)
            result.add("table8b_per_source", row, "labels used", used)
            result.add("table8b_per_source", row, "test positive rate", test_rate[source])
        for rec in per_source[per_source["source"] == source].itertuples(index=False):
            row = f"{source} target-only {source_label[(source, int(rec.k))]}"
            result.add("table8b_per_source", row, "AUROC", rec.auroc)
            result.add("table8b_per_source", row, "AP", rec.ap)
            result.add("table8b_per_source", row, "labels used", rec.k_used)
            result.add("table8b_per_source", row, "test positive rate", test_rate[source])

    scores = in_domain.rename(columns={cal: f"in_domain_{cal}", zero: f"in_domain_{zero}"})
    scores = scores.merge(loso[["example_id", "cross_source", "zero_shot"]], on="example_id")
    result.scores = scores
    result.extra["sources.json"] = {
        "sources": sources,
        "rows_per_source": {s: int((frame["source"] == s).sum()) for s in sources},
        "positives_per_source": {s: int(y_all[frame["source"] == s].sum()) for s in sources},
        "test_rows_per_source": {s: int(idx.size) for s, idx in test_sets.items()},
        "pool_rows_per_source": pools,
        "in_domain_unit": unit,
        "caps": [{"source": s, "k": k, "k_used": u} for s, k, u in sampler.caps(frame)],
        "target_test_rows_sharing_a_group_with_their_sample": overlap,
    }
    result.extra["target_adaptation_runs.json"] = target.to_dict(orient="records")
    result.extra[TITLES_FILE] = dict(result.titles)  # `make tables` redraws with these
    return result


def figures(cells):
    """Macro target-only AUROC and AP against k, with zero-shot and cross-source lines.

    The lines come from the like-for-like table (same fixed test sets as target-only) when
    the run has it; points whose SE is undefined (pool drawn whole) are drawn hollow.
    """
    import matplotlib.pyplot as plt

    sub = cells[cells["table"] == "table8b"]
    lines = cells[cells["table"] == "table8b_same_test_sets"]
    where = " (same test sets)" if len(lines) else ""
    if not len(lines):
        lines = sub
    fig, axes = plt.subplots(1, 2, figsize=(10, 3.6))
    target = sub[sub["row"].str.startswith("target-only")]
    for ax, metric in zip(axes, ["AUROC", "AP"], strict=True):
        t = target[target["column"] == metric]
        se = target[target["column"] == f"{metric} SE"]["value"].to_numpy(float)
        ks = t["row"].str.extract(r"k=(\d+)")[0].astype(int).to_numpy()
        values = t["value"].to_numpy(float)
        undefined = np.isnan(se)
        ax.errorbar(
            ks,
            values,
            yerr=np.where(undefined, 0.0, se),
            marker="o",
            capsize=3,
            label="target-only (± SE)",
        )
        if undefined.any():
            ax.plot(
                ks[undefined],
                values[undefined],
                "o",
                mfc="white",
                color="tab:blue",
                label="pool drawn whole (SE undefined)",
            )
        for row, style in (("zero-shot", "--"), ("cross-source", ":")):
            v = lines[(lines["row"] == row) & (lines["column"] == metric)]["value"]
            if len(v):
                ax.axhline(
                    float(v.iloc[0]),
                    ls=style,
                    color="gray" if row == "zero-shot" else "tab:red",
                    label=row + where,
                )
        ax.set_xscale("log")
        ax.set_xticks(ks, [str(k) for k in ks])
        ax.set_xlabel("target labels per source (k)")
        ax.set_ylabel(f"macro {metric}")
        ax.grid(alpha=0.3)
    axes[0].legend(fontsize=8)
    fig.suptitle("Target-label adaptation under source shift")
    fig.tight_layout()
    return {"fig_rq5_target_adaptation": fig}
