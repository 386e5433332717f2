"""`make bench` (routing): rows/second through the logged pyfunc model vs the raw gate.

Measured in one process on RAGTruth test rows: RAGScope-E fitted on the first grouped
training fold (not timed) is wrapped in the routing pyfunc (`runner.routing.model`),
logged to a throw-away SQLite MLflow store and loaded back with `mlflow.pyfunc.load_model`,
as `route` and `mlflow models serve` do. Both then score the same batch of 1,000 held-out
rows from raw question/context/answer: `gate.score(batch)` (the raw gate) and
`model.predict(batch)` (input checks, schema enforcement, scoring, decisions). Rounds
alternate which goes first (ABBA), so machine load and warm caches hit both alike;
medians are reported with the ratio pyfunc / raw (the contract: at most 2).
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import tempfile
import time
from pathlib import Path

import numpy as np
from sklearn.base import clone

from runner.data import load_ragtruth
from runner.evaluation import GroupedKFold
from runner.features import lexical_features
from runner.gates import ENHANCED_FEATURES, LogitGate
from runner.routing.contract import budget_thresholds
from runner.routing.model import INPUT_FIELDS, RoutingModel, signature


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--batch", type=int, default=1000)
    parser.add_argument("--rounds", type=int, default=6)
    parser.add_argument("--out", type=Path, default=None, help="write the figures here (JSON)")
    args = parser.parse_args(argv)
    os.environ.setdefault("MLFLOW_DISABLE_TELEMETRY", "true")
    import mlflow

    frame = load_ragtruth(split="test").frame
    fold = next(iter(GroupedKFold(n_splits=5, seed=13).folds(frame)))
    train = frame.iloc[fold.train_idx]
    # Held-out rows first; training rows only top the batch up to its size.
    pool = frame.iloc[np.concatenate([fold.test_idx, fold.train_idx])].reset_index(drop=True)
    batch = pool.iloc[: args.batch][list(INPUT_FIELDS)].reset_index(drop=True)
    gate = clone(LogitGate(features=list(ENHANCED_FEATURES), tfidf=True))
    gate.fit(train.join(lexical_features(train)), train["label"].to_numpy())
    t = budget_thresholds(gate.score(batch), 0.10, 0.50)

    with tempfile.TemporaryDirectory() as tmp:
        mlflow.set_tracking_uri(f"sqlite:///{tmp}/mlflow.db")
        experiment = mlflow.create_experiment("bench", artifact_location=Path(tmp).as_uri())
        with mlflow.start_run(experiment_id=experiment):
            info = mlflow.pyfunc.log_model(
                name="model",
                python_model=RoutingModel(gate, t.review_at, t.accept_at),
                signature=signature(),
            )
        model = mlflow.pyfunc.load_model(info.model_uri)
        raw_gate = model.unwrap_python_model().gate
        np.testing.assert_allclose(model.predict(batch)["risk"], raw_gate.score(batch))
        raw, wrapped = [], []
        runs = [(raw, lambda: raw_gate.score(batch)), (wrapped, lambda: model.predict(batch))]
        for i in range(args.rounds):
            for times, fn in runs if i % 2 == 0 else runs[::-1]:  # ABBA: order bias cancels
                start = time.perf_counter()
                fn()
                times.append(time.perf_counter() - start)
    n = len(batch)
    raw_rps, wrapped_rps = n / statistics.median(raw), n / statistics.median(wrapped)
    ratio = statistics.median(wrapped) / statistics.median(raw)
    results = {
        "batch_rows": n,
        "rounds": args.rounds,
        "raw_gate_rows_per_second": raw_rps,
        "pyfunc_rows_per_second": wrapped_rps,
        "pyfunc_over_raw_time_ratio": ratio,
        "raw_seconds": raw,
        "pyfunc_seconds": wrapped,
        "target_ratio_at_most": 2.0,
    }
    print(f"routing throughput on a batch of {n} RAGTruth rows (median of {args.rounds} rounds)")
    print(f"{'raw gate':<22}{raw_rps:>10.1f} rows/s")
    print(f"{'logged pyfunc model':<22}{wrapped_rps:>10.1f} rows/s")
    print(f"pyfunc / raw time ratio: {ratio:.3f} (target ≤ 2)")
    if args.out:
        args.out.parent.mkdir(parents=True, exist_ok=True)
        args.out.write_text(json.dumps(results, indent=2) + "\n")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
