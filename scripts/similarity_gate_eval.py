"""Option (c) of docs/detector.md: RAGScope-E plus a frozen sentence encoder's similarity
features (``gate=ragscope_e_sim``), measured on RAGTruth.

Why a script: the choice is made on validation rows and only then scored once on test, and
the cost of the recipe is its embeddings, which this measures beside the metrics.

- ``validation``: RAGTruth train split into context groups by the detector's own
  `grouped_split` (seed, 10 %), the validation rows sampled as ``train.val_max_examples``
  samples them (600, the same rows as the detector's validation); the gates are fitted on
  whole context groups of the train part (``--train-rows``: groups drawn until that many
  rows, so contexts repeat and their sentences are encoded once) and scored on validation.
- ``test``: the same fit, scored on RAGTruth test (``--test-rows``: whole context groups
  drawn until that many rows; default all 2,700), with 95 % context-group bootstrap
  intervals and paired deltas from `runner.evaluation` (1,000 resamples, seed 13).

    python scripts/similarity_gate_eval.py validation --out artifacts/similarity_gate
    python scripts/similarity_gate_eval.py test --out artifacts/similarity_gate

Writes ``<stage>.json`` into ``--out``; sentence vectors go to ``--cache-dir``
(``artifacts/cache``, the default ``paths.cache_dir``), so a second run encodes nothing.
"""

from __future__ import annotations

import argparse
import json
import time
from pathlib import Path

import numpy as np
import pandas as pd

ROOT = Path(__file__).resolve().parents[1]
ZERO_SHOT = "unsupported_share_075"


def group_sample(frame: pd.DataFrame, rows: int | None, seed: int, salt: int) -> pd.DataFrame:
    """Whole context groups in a seeded order until at least `rows` rows (None: all)."""
    if rows is None or rows >= len(frame):
        return frame.reset_index(drop=True)
    groups = np.array(sorted(frame["group_id"].astype(str).unique()))
    order = groups[np.random.default_rng([seed, salt]).permutation(len(groups))]
    sizes = frame["group_id"].astype(str).value_counts()
    taken = order[: int(np.searchsorted(np.cumsum(sizes[order].to_numpy()), rows)) + 1]
    mask = frame["group_id"].astype(str).isin(set(taken)).to_numpy()
    return frame[mask].reset_index(drop=True)


def with_features(frame: pd.DataFrame, cache_dir: str) -> tuple[pd.DataFrame, dict]:
    """Lexical + similarity columns, and the similarity features' embedding cost."""
    from runner.features import (
        DEFAULT_ENCODER,
        sentence_vectors,
        similarity_features,
        with_lexical_features,
    )

    lexical = with_lexical_features(frame, cache_dir)
    store = sentence_vectors(DEFAULT_ENCODER, cache_dir)
    encoded, hits = store.encoded, store.hits
    start = time.perf_counter()
    similarity = similarity_features(frame, DEFAULT_ENCODER, cache_dir)
    seconds = time.perf_counter() - start
    new, found = store.encoded - encoded, store.hits - hits
    cost = {
        "rows": len(frame),
        "distinct_sentences": new + found,
        "encoded": new,
        "cache_hit_share": found / max(new + found, 1),
        "seconds": seconds,
        "sentences_per_s": new / seconds if new else None,
        "ms_per_example": 1000.0 * seconds / len(frame),
    }
    return pd.concat([lexical, similarity], axis=1), cost


def gates(seed: int) -> dict:
    """The two gates as ``gate=ragscope_e`` and ``gate=ragscope_e_sim`` compose them."""
    from runner.gates import ENHANCED_FEATURES, LogitGate

    base = {"features": list(ENHANCED_FEATURES), "tfidf": True, "random_state": seed}
    return {
        "ragscope_e": LogitGate(**base),
        "ragscope_e_sim": LogitGate(**base, similarity=True),
    }


def metrics(rows: pd.DataFrame, scores: dict[str, np.ndarray]) -> dict:
    """AUROC / AP of every score, overall and per task."""
    from sklearn.metrics import average_precision_score, roc_auc_score

    out = {}
    tasks = ["all", *sorted(rows["task"].astype(str).unique())]
    for task in tasks:
        mask = np.ones(len(rows), bool) if task == "all" else (rows["task"] == task).to_numpy()
        y = rows["label"].to_numpy(int)[mask]
        out[task] = {
            name: {
                "auroc": float(roc_auc_score(y, s[mask])),
                "ap": float(average_precision_score(y, s[mask])),
            }
            for name, s in scores.items()
        } | {"rows": int(mask.sum())}
    return out


def bootstrap(rows: pd.DataFrame, scores: dict[str, np.ndarray], seed: int) -> dict:
    """95 % context-group intervals and paired deltas against RAGScope-E."""
    from runner.evaluation import BootstrapConf
    from runner.evaluation import scopes as sc

    frame = rows[["example_id", "group_id", "task", "label"]].copy()
    for name, s in scores.items():
        frame[name] = s
    stats = sc.bootstrap_scopes(frame, list(scores), BootstrapConf(seed=seed))
    out: dict = {"intervals": {}, "deltas": {}}
    for scope in stats.scopes():
        for metric in ("auroc", "ap"):
            for name in scores:
                est = stats.estimate(name, metric, scope)
                out["intervals"][f"{scope}/{metric}/{name}"] = [est.point, est.low, est.high]
            for name in scores:
                if name != "ragscope_e":
                    est = stats.delta(name, "ragscope_e", metric, scope)
                    key = f"{scope}/{metric}/{name} - ragscope_e"
                    out["deltas"][key] = [est.point, est.low, est.high]
    return out


def main() -> None:
    from runner.data import load_ragtruth
    from runner.settings import SEED
    from runner.training import grouped_split, sample_rows

    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("stage", choices=["validation", "test"])
    parser.add_argument("--train-rows", type=int, default=3000)
    parser.add_argument("--val-rows", type=int, default=600)
    parser.add_argument("--test-rows", type=int, default=None, help="whole groups; default all")
    parser.add_argument("--seed", type=int, default=SEED)
    parser.add_argument("--cache-dir", default=str(ROOT / "artifacts" / "cache"))
    parser.add_argument("--out", type=Path, default=ROOT / "artifacts" / "similarity_gate")
    args = parser.parse_args()

    train_part, val_part = grouped_split(load_ragtruth(split="train").frame, 0.1, args.seed)
    fit_rows = group_sample(train_part, args.train_rows, args.seed, 2)
    if args.stage == "validation":
        eval_rows = sample_rows(val_part, args.val_rows, args.seed, 3)
    else:
        test = load_ragtruth(split="test").frame
        eval_rows = group_sample(test, args.test_rows, args.seed, 4)
    fit_frame, fit_cost = with_features(fit_rows, args.cache_dir)
    eval_frame, eval_cost = with_features(eval_rows, args.cache_dir)
    y = fit_frame["label"].to_numpy(int)
    scores = {name: g.fit(fit_frame, y).score(eval_frame) for name, g in gates(args.seed).items()}
    scores[f"zero-shot {ZERO_SHOT}"] = eval_frame[ZERO_SHOT].to_numpy(float)
    report = {
        "stage": args.stage,
        "seed": args.seed,
        "fit_rows": len(fit_rows),
        "fit_groups": int(fit_rows["group_id"].nunique()),
        "eval_rows": len(eval_rows),
        "cost": {"fit": fit_cost, "eval": eval_cost},
        "metrics": metrics(eval_frame, scores),
    }
    if args.stage == "test":
        report["bootstrap"] = bootstrap(eval_frame, scores, args.seed)
    args.out.mkdir(parents=True, exist_ok=True)
    (args.out / f"{args.stage}.json").write_text(json.dumps(report, indent=2) + "\n")
    print(json.dumps({k: report[k] for k in ("cost", "metrics")}, indent=1))


if __name__ == "__main__":
    main()
