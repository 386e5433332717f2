"""`make bench` (gates): complete RAGScope-E inference and the group bootstrap, timed.

Measured in one process on the RAGTruth test split:

- ms/example of complete inference for each learned gate, from raw text: lexical
  features, the fold-fitted TF-IDF transforms (answer–context and per-sentence max),
  the scaler and the logistic regression. The model is fitted on the first grouped
  training fold (not timed) and scores that fold's held-out rows. Tokenisation alone
  is timed on the same rows as the floor, and each gate is reported as a ratio to it.
- the group bootstrap behind Tables III–VI: 1,000 resamples × every gate × 4 metrics,
  pooled and task-stratified (per task + macro), in seconds.
"""

from __future__ import annotations

import argparse
import json
import time
from pathlib import Path

import numpy as np
from sklearn.base import clone

from runner.data import load_ragtruth
from runner.evaluation import (
    GroupedKFold,
    group_bootstrap,
    measure_ms_per_example,
    standard_metrics,
)
from runner.features import lexical_features
from runner.gates import BASE_FEATURES, ENHANCED_FEATURES, FeatureGate, LogitGate, TfidfGate
from runner.text import tokenize


def gates() -> dict:
    return {
        "uncovered": FeatureGate("uncovered_fraction"),
        "rouge_l": FeatureGate("rouge_l_risk"),
        "tfidf": TfidfGate("answer_context"),
        "coverage_logit": LogitGate(features=["coverage"], tfidf=False),
        "ragscope_c": LogitGate(features=list(BASE_FEATURES), tfidf=False),
        "ragscope_e": LogitGate(features=list(ENHANCED_FEATURES), tfidf=True),
    }


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--repeats", type=int, default=5)
    parser.add_argument("--resamples", type=int, default=1000)
    parser.add_argument("--json", type=Path, default=None, help="write the figures here")
    args = parser.parse_args(argv)

    data = load_ragtruth(split="test")
    frame = data.frame
    fold = next(iter(GroupedKFold(n_splits=5, seed=13).folds(frame)))
    train, test = frame.iloc[fold.train_idx], frame.iloc[fold.test_idx].reset_index(drop=True)
    n = len(test)
    raw = test[["example_id", "question", "context", "answer"]]

    def tokenise_all() -> None:
        for q, c, a in zip(raw["question"], raw["context"], raw["answer"], strict=True):
            tokenize(q), tokenize(c), tokenize(a)

    floor = measure_ms_per_example(tokenise_all, n, repeats=args.repeats)
    results = {"rows": n, "tokenisation_floor": floor, "gates": {}}
    print(
        f"complete inference on {n} held-out RAGTruth rows (fold 0), median of "
        f"{args.repeats} passes; ratio = gate / tokenisation of q, c, a"
    )
    print(f"{'gate':<16}{'ms/example':>12}{'× tokenise':>12}")
    print(f"{'tokenise':<16}{floor['median_ms_per_example']:>12.4f}{1.0:>12.1f}")
    train_feats = train.join(lexical_features(train))
    fitted_all = {}
    for name, gate in gates().items():
        fitted = clone(gate).fit(train_feats, train["label"].to_numpy()) if gate.needs_fit else gate
        fitted_all[name] = fitted
        t = measure_ms_per_example(lambda g=fitted: g.score(raw), n, repeats=args.repeats)
        ratio = t["median_ms_per_example"] / floor["median_ms_per_example"]
        results["gates"][name] = {**t, "ratio_to_tokenisation": ratio}
        print(f"{name:<16}{t['median_ms_per_example']:>12.4f}{ratio:>12.1f}")

    feats = frame.join(lexical_features(frame))
    scores = {name: np.asarray(g.score(feats), dtype=float) for name, g in fitted_all.items()}
    y, groups, tasks = (
        frame["label"].to_numpy(),
        frame["group_id"].to_numpy(),
        frame["task"].to_numpy(),
    )
    started = time.perf_counter()
    group_bootstrap(y, scores, groups, standard_metrics(), n_resamples=args.resamples, seed=13)
    group_bootstrap(
        y, scores, groups, standard_metrics(), n_resamples=args.resamples, seed=13, strata=tasks
    )
    seconds = time.perf_counter() - started
    results["bootstrap"] = {
        "resamples": args.resamples,
        "gates": len(scores),
        "metrics": 4,
        "scopes": ["Combined", "QA", "Summary", "Data2txt", "Macro"],
        "seconds": seconds,
    }
    print(
        f"group bootstrap: {args.resamples} resamples × {len(scores)} gates × 4 metrics × "
        f"5 scopes (pooled + task-stratified) on {len(frame)} rows: {seconds:.2f} s"
    )
    if args.json:
        args.json.write_text(json.dumps(results, indent=2) + "\n")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
