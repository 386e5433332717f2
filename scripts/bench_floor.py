"""`make bench` (the floor): RAGScope-E from tokens to routed decisions, against tokenising.

Why: a gate is only as fast as the text lets it be; the floor is tokenising every text once
(each distinct context and question once, every answer), and every other figure is read as
a ratio to it. Timed in one process on the same RAGTruth test rows (2,700, all three
tasks), RAGScope-E fitted on RAGTruth train (not timed):

- ``floor``: `runner.text.tokenize` of the texts, each once;
- each lexical feature alone, and each TF-IDF risk alone, from raw text;
- the 13 lexical features together, and the whole gate (``gate.score``);
- the route end to end: the rows ``--copies`` times over with new ids (default 4:
  10,800 rows) as a Parquet file (a row group per batch) read, admitted, scored by the
  logged pyfunc model (features, risk, decision), each batch written to the work
  folder; as one batch (the in-memory path: the whole file at once) and in batches of
  ``--batch-rows`` (default 900: twelve batches for two workers to share; `route`'s
  default is 10,000 rows), on 1 and 2 worker processes (`runner.routing.route.engines`).
  Figures are per routed row. No per-row result is reused across copies (the features
  keep contexts, not answers), so a copy costs what a new row with a known context does.

New documents (``--no-new-documents`` leaves them out): RAGTruth train with one answer per
context (2,514 rows, every context distinct, as routed traffic about documents never met),
timed cold only: the floor, the lexical features and the gate, per row.

Each is timed twice. *Cold*: views and TF-IDF vectors kept by earlier timings are dropped
first, as in a fresh process, so each distinct context is tokenised and vectorised once
inside the timing; its ratio is to ``floor`` (each text tokenised once). *Warm*: after a
first pass, as a long route sees traffic whose documents it has met before (traffic asks
about the same documents again and again; `runner.features.kept`); its ratio is to
``floor, answers`` (each answer and question tokenised: what is left to tokenise per row
once the contexts are known). Forked workers inherit the driver's state, so a warm
worker starts with the driver's kept contexts. Each figure is the best of ``--repeats``
runs on the wall clock: ratios between rows of one run hold on a shared machine, absolute
speeds do not. Rows/s per core divides by the worker count; rows per CPU-second (the
driver's and the workers' CPU time) is what a core gives whatever else the machine runs,
so 2 workers over 1 in rows/s is bounded by the free cores, in rows per CPU-second not.

    python scripts/bench_floor.py [--repeats 3] [--batch-rows 900] [--copies 4] [--out floor.json]
"""

from __future__ import annotations

import argparse
import copy
import json
import os
import resource
import tempfile
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pandas as pd

from runner.data import RagStream, load_ragtruth
from runner.features import LEXICAL_FEATURE_NAMES, TFIDF_FEATURE_NAMES, family, lexical_features
from runner.features import tfidf_vectors as vectors
from runner.gates import ENHANCED_FEATURES, LogitGate
from runner.routing.model import RoutingModel, signature
from runner.routing.route import RoutedModel, WorkFolder, engines, stream
from runner.text import tokenize


def cold() -> None:
    """Drop every kept view and vector: the next call starts as a fresh process would."""
    family._CONTEXT_VIEWS.clear()
    family._QUESTION_VIEWS.clear()
    family._LATEST_ANSWERS.clear()
    vectors._KEPT.clear()


def cpu_seconds() -> float:
    """CPU seconds of this process and of its finished children (the forked workers)."""
    children = resource.getrusage(resource.RUSAGE_CHILDREN)
    return time.process_time() + children.ru_utime + children.ru_stime


def best_of(
    repeats: int, run: Callable[[], Any], warm_up: Callable[[], Any] | None
) -> tuple[float, float]:
    """Smallest wall-clock and smallest CPU seconds of `repeats` calls of `run`: each from
    cold, or, given `warm_up`, all after one untimed call of it in this process."""
    walls, cpus = [], []
    if warm_up is not None:
        cold()
        warm_up()
    for _ in range(repeats):
        if warm_up is None:
            cold()
        wall, cpu = time.perf_counter(), cpu_seconds()
        run()
        cpus.append(cpu_seconds() - cpu)
        walls.append(time.perf_counter() - wall)
    return min(walls), min(cpus)


def tokenise_once(frame: pd.DataFrame) -> None:
    """The floor: each distinct context and question once, every answer."""
    seen: set[str] = set()
    for question, context, answer in zip(
        frame["question"], frame["context"], frame["answer"], strict=True
    ):
        for text in (context, question):
            if text not in seen:
                seen.add(text)
                tokenize(text)
        tokenize(answer)


def tokenise_answers(frame: pd.DataFrame) -> None:
    """The warm floor: every answer and question (contexts are known already)."""
    for question, answer in zip(frame["question"], frame["answer"], strict=True):
        tokenize(question)
        tokenize(answer)


def logged_model(gate: LogitGate, folder: Path, sources: list[str]) -> RoutedModel:
    """The gate as `route` loads it: logged as the routing pyfunc, loaded back."""
    import mlflow

    mlflow.set_tracking_uri(f"sqlite:///{folder}/mlflow.db")
    experiment = mlflow.create_experiment("bench", artifact_location=folder.as_uri())
    with mlflow.start_run(experiment_id=experiment):
        info = mlflow.pyfunc.log_model(
            name="model",
            python_model=RoutingModel(gate, 0.7, 0.3, sources),
            signature=signature(),
            metadata={"training_sources": sources},
        )
    pyfunc = mlflow.pyfunc.load_model(info.model_uri)
    metadata = dict(pyfunc.metadata.metadata or {})
    return RoutedModel(pyfunc, metadata, "bench", "1", None, info.model_uri)


def route_once(model: RoutedModel, data: Path, work: Path, batch_rows: int, workers: int) -> int:
    """Route the Parquet folder `data` as `route` does; returns the rows routed."""
    rows = RagStream(str(data))
    specs = rows.plan(batch_rows)
    folder = WorkFolder(work, {"run": time.perf_counter_ns()}, len(specs))
    driver = stream.StreamDriver(folder, specs, stream=rows)
    router_args = {
        "stream": rows,
        "specs": specs,
        "tracking_uri": "",
        "model_uri": model.uri,
        "on_unseen_source": "warn",
    }
    pending = [s.index for s in specs]
    stream.drive(driver, engines.route_local(router_args, driver, pending, model, workers))
    return driver.routed


def new_documents(gate: LogitGate, train: pd.DataFrame, figures: dict, repeats: int) -> None:
    """Cold figures on rows whose contexts are all distinct (each one new to the process)."""
    rows = train.drop_duplicates("context")[["question", "context", "answer"]]
    rows = rows.reset_index(drop=True)
    timed = {
        "floor": lambda: tokenise_once(rows),
        "13 lexical features": lambda: lexical_features(rows),
        "gate: RAGScope-E score": lambda: gate.score(rows),
    }
    for name, run in timed.items():
        seconds, cpu = best_of(repeats, run, None)
        figures[f"new documents: {name}"] = {
            "workers": 1,
            "rows": len(rows),
            "cold_ms_per_row": seconds * 1e3 / len(rows),
            "cold_rows_per_s_per_core": len(rows) / seconds,
            "cold_rows_per_cpu_s": len(rows) / cpu,
        }
    floor = figures["new documents: floor"]["cold_ms_per_row"]
    for name in timed:
        row = figures[f"new documents: {name}"]
        row["cold_ratio_to_floor"] = row["cold_ms_per_row"] / floor


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--repeats", type=int, default=3)
    parser.add_argument("--batch-rows", type=int, default=900)
    parser.add_argument("--copies", type=int, default=4, help="route the rows this many times")
    parser.add_argument("--out", type=Path, default=None, help="write the figures here (JSON)")
    parser.add_argument("--no-new-documents", dest="new_documents", action="store_false")
    args = parser.parse_args(argv)
    os.environ.setdefault("MLFLOW_DISABLE_TELEMETRY", "true")

    frame = load_ragtruth(split="test").frame.reset_index(drop=True)
    train = load_ragtruth(split="train").frame
    gate = LogitGate(features=list(ENHANCED_FEATURES), tfidf=True)
    gate.fit(train.join(lexical_features(train)), train["label"].to_numpy())
    support = gate.pipeline_.named_steps["columns"].named_transformers_["tfidf"]
    raw = frame[["question", "context", "answer"]]
    n = len(frame)
    Run = Callable[[], Any]
    timed: dict[str, tuple[Run, int] | tuple[Run, int, Run]] = {
        "floor": (lambda: tokenise_once(raw), 1),
        "floor, answers": (lambda: tokenise_answers(raw), 1),
    }
    for name in LEXICAL_FEATURE_NAMES:
        timed[f"feature {name}"] = (lambda f=name: lexical_features(raw, [f]), 1)
    for name in TFIDF_FEATURE_NAMES:
        alone = copy.copy(support)
        alone.features = [name]
        timed[f"feature {name}"] = (lambda s=alone: s.transform(raw), 1)
    timed["13 lexical features"] = (lambda: lexical_features(raw), 1)
    timed["gate: RAGScope-E score"] = (lambda: gate.score(raw), 1)

    with tempfile.TemporaryDirectory() as tmp:
        folder = Path(tmp)
        model = logged_model(gate, folder, sorted(frame["task"].unique()))
        data = folder / "traffic"
        data.mkdir()
        # The rows `--copies` times over with new ids: twelve batches for two workers.
        copies = pd.concat([frame] * args.copies, ignore_index=True)
        routed = len(copies)
        copies = copies.assign(id=[f"r{i}" for i in range(routed)], source=copies["task"])
        copies[["id", "question", "context", "answer", "source", "task"]].to_parquet(
            data / "part-00000.parquet", index=False, row_group_size=args.batch_rows
        )
        work = folder / "work"
        timed["route: in memory (one batch)"] = (
            lambda: route_once(model, data, work, routed, 1),
            1,
        )
        for w in (1, 2):
            timed[f"route: streaming, {w} worker(s)"] = (
                lambda w=w: route_once(model, data, work, args.batch_rows, w),
                w,
                lambda: route_once(model, data, work, args.batch_rows, 1),  # warms this process
            )
        figures = {}
        for name, (run, workers, *warm_up) in timed.items():
            figures[name] = {"workers": workers}
            rows = routed if name.startswith("route") else n
            for state in ("cold", "warm"):
                first = (warm_up or [run])[0] if state == "warm" else None
                seconds, cpu = best_of(args.repeats, run, first)
                figures[name][f"{state}_ms_per_row"] = seconds * 1e3 / rows
                figures[name][f"{state}_rows_per_s_per_core"] = rows / seconds / workers
                figures[name][f"{state}_rows_per_cpu_s"] = rows / cpu

    if args.new_documents:
        new_documents(gate, train, figures, args.repeats)
    floors = {"cold": figures["floor"], "warm": figures["floor, answers"]}
    print(
        f"RAGScope-E on {n} RAGTruth test rows, best of {args.repeats}; streaming in batches of "
        f"{args.batch_rows}. cold: x floor (each text tokenised once); warm (contexts met "
        "before): x 'floor, answers'"
    )
    header = ("cold ms/row", 12), ("x floor", 8), ("warm ms/row", 12), ("x floor", 8)
    header += ("warm rows/s/core", 17), ("rows/CPU-s", 11)
    print(f"{'':<40}" + "".join(f"{t:>{w}}" for t, w in header))
    for name, row in figures.items():
        if name.startswith("new documents"):
            continue
        for state in ("cold", "warm"):
            floor = floors[state][f"{state}_ms_per_row"]
            row[f"{state}_ratio_to_floor"] = row[f"{state}_ms_per_row"] / floor
        print(
            f"{name:<40}{row['cold_ms_per_row']:>12.4f}{row['cold_ratio_to_floor']:>8.2f}"
            f"{row['warm_ms_per_row']:>12.4f}{row['warm_ratio_to_floor']:>8.2f}"
            f"{row['warm_rows_per_s_per_core']:>17.0f}{row['warm_rows_per_cpu_s']:>11.0f}"
        )
    for name, row in figures.items():
        if name.startswith("new documents"):
            print(f"{name:<40}{row['cold_ms_per_row']:>12.4f}{row['cold_ratio_to_floor']:>8.2f}")
    summary = {}
    for state in ("cold", "warm"):
        key = f"{state}_rows_per_s_per_core"
        memory = figures["route: in memory (one batch)"][key]
        one = figures["route: streaming, 1 worker(s)"][key]
        two = figures["route: streaming, 2 worker(s)"][key] * 2
        cpu = f"{state}_rows_per_cpu_s"
        per_cpu = (
            figures["route: streaming, 2 worker(s)"][cpu]
            / figures["route: streaming, 1 worker(s)"][cpu]
        )
        summary[state] = {
            "streaming_over_in_memory": one / memory,
            "two_workers_over_one": two / one,
            "two_workers_over_one_rows_per_cpu_s": per_cpu,
        }
        print(
            f"{state}: streaming / in memory, rows/s per core {one / memory:.2f}; 2 workers / 1: "
            f"rows/s {two / one:.2f}, rows per CPU-second {per_cpu:.2f} (x2 bounds rows/s "
            "with two free cores)"
        )
    if args.out:
        args.out.parent.mkdir(parents=True, exist_ok=True)
        out = {"rows": n, "routed_rows": routed, "batch_rows": args.batch_rows}
        out |= {"figures": figures, "summary": summary}
        args.out.write_text(json.dumps(out, indent=2) + "\n")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
