"""`make bench` (traces): read -> route -> write-back on MLflow traces, and the scorer's overhead.

In one process on a throw-away SQLite store: `scripts/traced_rag_demo.py` logs N traces
(default 1,000; not timed), `fit_gate` fits RAGScope-E on them (not timed), then

- ``route`` over ``dataset=mlflow_traces`` is timed end to end (traces/s), with its parts:
  reading the traces (`load_mlflow_traces`), the gate (``gate_ms_per_example``) and writing
  the assessments back (``trace_assessments.json``; the store's write time);
- the registered-gate scorer (`runner.scorers.registered_gate_scorer`) is called on every
  trace and compared with the raw gate on the same rows, one row per call as a scorer
  scores (``model.predict`` of a one-row frame), rounds alternating which goes first.
  The goal: scorer <= 2x the raw gate per trace (the store's write time comes on top,
  measured separately above).
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]


def pipeline_run(artifacts: Path, name: str, *overrides: str):
    from hydra import compose, initialize_config_dir

    from runner.pipeline import run

    with initialize_config_dir(config_dir=str(ROOT / "conf"), version_base="1.3"):
        cfg = compose(
            "config",
            overrides=[
                f"experiment={name}",
                "progress=false",
                f"paths.artifacts_dir={artifacts}",
                *overrides,
            ],
        )
    return run(cfg)


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--traces", type=int, default=1000)
    parser.add_argument("--rounds", type=int, default=4)
    parser.add_argument("--out", type=Path, default=None, help="write the figures here (JSON)")
    args = parser.parse_args(argv)
    os.environ.setdefault("MLFLOW_DISABLE_TELEMETRY", "true")
    os.environ["MLFLOW_ENABLE_ASYNC_TRACE_LOGGING"] = "false"
    sys.path.insert(0, str(ROOT / "scripts"))
    import traced_rag_demo
    from runner.config import register_configs
    from runner.data import load_mlflow_traces, search_all
    from runner.routing.route import load_routed_model
    from runner.scorers import registered_gate_scorer

    register_configs()
    traced = ("dataset=mlflow_traces", "dataset.experiment=rag_demo")
    with tempfile.TemporaryDirectory() as tmp:
        artifacts = Path(tmp)
        store = f"sqlite:///{artifacts / 'mlflow.db'}"
        demo = traced_rag_demo.log_traces(
            store, "rag_demo", args.traces, artifact_root=str(artifacts / "app")
        )
        import mlflow.tracking.fluent

        mlflow.tracking.fluent._active_experiment_id = None  # the demo set its own
        os.environ.pop("MLFLOW_EXPERIMENT_ID", None)
        pipeline_run(artifacts, "fit_gate", *traced, "dataset.label=hallucinated")

        start = time.perf_counter()
        data = load_mlflow_traces("rag_demo", tracking_uri=store)
        read_s = time.perf_counter() - start
        start = time.perf_counter()
        routed = pipeline_run(
            artifacts, "route", *traced, "routing.model_uri=models:/ragscope_e@champion"
        )
        route_s = time.perf_counter() - start
        written = json.loads((routed.output_dir / "trace_assessments.json").read_text())
        runtime = json.loads((routed.output_dir / "runtime.json").read_text())

        traces = search_all(store, demo["experiment_id"], None, None)
        model = load_routed_model(store, "models:/ragscope_e@champion")
        scorer = registered_gate_scorer("models:/ragscope_e@champion", tracking_uri=store)
        scorer(trace=traces[0])  # loads the model once, as evaluate's first trace does
        frame = data.frame.set_index("example_id").loc[[t.info.trace_id for t in traces]]
        rows = [
            frame.iloc[[i]][["question", "context", "answer", "source"]] for i in range(len(frame))
        ]

        def raw() -> float:
            t0 = time.perf_counter()
            for row in rows:
                model.pyfunc.predict(row)
            return (time.perf_counter() - t0) * 1000 / len(rows)

        def scored() -> float:
            t0 = time.perf_counter()
            for trace in traces:
                scorer(trace=trace)
            return (time.perf_counter() - t0) * 1000 / len(traces)

        times: dict[str, list[float]] = {"raw": [], "scorer": []}
        for r in range(args.rounds):
            order = (("raw", raw), ("scorer", scored))
            for key, fn in order if r % 2 == 0 else order[::-1]:
                times[key].append(fn())
    raw_ms, scorer_ms = statistics.median(times["raw"]), statistics.median(times["scorer"])
    figures = {
        "traces": len(traces),
        "logging_traces_s (demo app, not part of the loop)": demo["seconds"],
        "read_s": round(read_s, 3),
        "route_run_s (read + route + write-back + outputs + MLflow run)": round(route_s, 3),
        "traces_per_s (route run end to end)": round(len(traces) / route_s, 1),
        "gate_ms_per_example (batch, in route)": runtime.get("gate_ms_per_example"),
        "write_back_s": written["seconds"],
        "write_back_ms_per_trace": round(written["seconds"] * 1000 / len(traces), 3),
        "raw_gate_ms_per_trace (one row per call)": round(raw_ms, 3),
        "scorer_ms_per_trace": round(scorer_ms, 3),
        "scorer_over_raw": round(scorer_ms / raw_ms, 3),
        "goal": "scorer <= 2x the raw gate per trace, plus the store's write time",
        "goal_met": scorer_ms <= 2 * raw_ms,
    }
    text = json.dumps(figures, indent=2)
    print(text)
    if args.out:
        args.out.parent.mkdir(parents=True, exist_ok=True)
        args.out.write_text(text + "\n")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
