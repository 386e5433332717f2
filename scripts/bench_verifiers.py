"""Verifier cost benchmark: the naive fp32 loop against batched and reduced-precision paths.

Why: a speed-up claim is only meaningful against a baseline measured in the same process,
on the same inputs, with the same timer, and together with how far the faster path's
scores move. For every verifier (DeBERTa-NLI top-3, HHEM full context, LettuceDetect by
default) this script loads the model once and times, on one seeded, task-stratified sample
of RAGTruth test rows:

- ``naive``: float32, batch size 1, input order (one example at a time), and the stock
  transformers attention where the verifier has a faster one (DeBERTa's ``attention``);
- ``default``: the verifier exactly as its config file sets it;
- ``fp32 bs=B`` for each batch size B (length-sorted batches padded to the batch's longest);
- ``bf16-autocast``, ``int8-dynamic`` and ``int8-mixed`` (int8 with the feed-forward
  down-projections in bf16) at batch size 1 and at the config's batch size (paths with
  identical settings are timed once).

Each path reports ms/example (end to end: evidence selection, tokenisation, forward
passes; the median over interleaved rounds that time one pass of every path in turn, after
a warm-up), the speed-up over ``naive`` (median over rounds of the paired ratio), and its
agreement with ``naive``: max |Δ risk| and Spearman ρ of the risk and of the risk's
log-odds (the log-odds ranks like the risk but does not round to 0 or 1, which random
weights often make probabilities do). Float32 paths must equal ``naive`` within 1e-5.

Without real weights (the default here, ``--weights random``) the models are the exact
architectures with seeded random weights: the timings are real, the scores are not
accuracy. Target: the fastest path of DeBERTa-NLI top-3 >= 2.5x faster than naive fp32
with Spearman ρ >= 0.99; it is reported, and fails the run only with ``--require-target``.
A float32 path that differs from the naive loop by more than 1e-5 always fails the run.

Usage::

    python scripts/bench_verifiers.py                      # 48 rows, all three verifiers
    python scripts/bench_verifiers.py --sample 16 --verifiers deberta_nli
    python scripts/bench_verifiers.py --weights config \\
        --set deberta_nli.model=/models/nli-deberta-v3-small
"""

from __future__ import annotations

import argparse
import json
import logging
import sys
import time
from pathlib import Path
from typing import Any

import numpy as np
import pandas as pd
from scipy.stats import spearmanr

from runner.env import apply_offline_defaults

apply_offline_defaults()

from runner.config import build_verifier  # noqa: E402
from runner.data import load_ragtruth  # noqa: E402
from runner.paths import artifacts_dir  # noqa: E402
from runner.verifiers import time_scoring, timing_sample  # noqa: E402

log = logging.getLogger("bench_verifiers")

DEFAULT_VERIFIERS = ("deberta_nli", "hhem_full", "lettucedetect")
TARGET_VERIFIER = "deberta_nli"
TARGET_SPEEDUP = 2.5
TARGET_SPEARMAN = 0.99
FP32_TOLERANCE = 1e-5


def _spearman(a: np.ndarray, b: np.ndarray) -> float | None:
    if np.ptp(a) == 0 or np.ptp(b) == 0:
        return None
    return float(spearmanr(a, b).statistic)


def paths_for(verifier: Any, batch_sizes: list[int]) -> list[tuple[str, dict[str, Any]]]:
    """(label, settings) of every distinct path benchmarked for one verifier, naive first."""
    fp32 = {"dtype": "float32", "quantize": None}
    default = {
        k: getattr(verifier, k) for k in ("dtype", "quantize", "batch_size", "sort_by_length")
    }
    naive = {**fp32, "batch_size": 1, "sort_by_length": False}
    if "attention" in verifier.inference_settings:
        naive["attention"] = "stock"
    paths = [("naive", naive), ("default", default)]
    for bs in batch_sizes:
        paths.append((f"fp32 bs={bs}", {**fp32, "batch_size": bs, "sort_by_length": True}))
    for bs in sorted({1, verifier.batch_size}):
        paths.append(
            (
                f"bf16-autocast bs={bs}",
                {"dtype": "bfloat16", "quantize": None, "batch_size": bs, "sort_by_length": True},
            )
        )
        for recipe in ("int8_dynamic", "int8_mixed"):
            paths.append(
                (
                    f"{recipe.replace('_', '-')} bs={bs}",
                    {
                        "dtype": "float32",
                        "quantize": recipe,
                        "batch_size": bs,
                        "sort_by_length": True,
                    },
                )
            )
    seen, unique = [], []
    for label, settings in paths:
        if settings not in seen:
            seen.append(settings)
            unique.append((label, settings))
    return unique


def _median(values: list[float]) -> float:
    return float(np.median(np.asarray(values, dtype=float)))


def bench_one(
    name: str,
    overrides: list[str],
    frame: pd.DataFrame,
    batch_sizes: list[int],
    repeats: int,
    warmup: int,
) -> dict[str, Any]:
    """Every path of one verifier: scores, memory, then interleaved timing rounds.

    Phase 1 runs the paths one after another (`warmup` untimed passes and one pass each,
    the path's prepared model dropped afterwards), which gives each path's scores, its
    agreement with the naive path and its own peak memory. Phase 2 prepares every path
    again and times `repeats` rounds, each round one pass of every path in turn, so a
    slow spell of a shared machine slows all paths of that round alike: ms/example is the
    median over rounds, and the speed-up is the median over rounds of the naive pass's
    time divided by the path's time in the same round.
    """
    verifier = build_verifier(name, overrides).load()
    specs = paths_for(verifier, batch_sizes)

    def build(label: str, settings: dict[str, Any]) -> Any:
        return verifier if label == "default" else verifier.with_settings(**settings)

    results = []
    reference: dict[str, Any] = {}
    for label, settings in specs:
        path = build(label, settings)
        info, (risk, logit) = time_scoring(path, frame, repeats=1, warmup=warmup, with_logit=True)
        if label == "naive":
            reference = {"risk": risk, "logit": logit}
        results.append(
            {
                "verifier": name,
                "path": label,
                "precision": path.precision_name,
                "attention": getattr(path, "attention", None),
                "batch_size": path.batch_size,
                "sort_by_length": path.sort_by_length,
                "ms_per_example": None,
                "speedup_vs_naive": None,
                "max_abs_delta_risk": float(np.max(np.abs(risk - reference["risk"]))),
                "spearman_risk": _spearman(risk, reference["risk"]),
                "spearman_logit": (
                    _spearman(logit, reference["logit"])
                    if logit is not None and reference["logit"] is not None
                    else None
                ),
                "peak_rss_mb": info["peak_rss_mb"],
                "mean_tokens_per_example": info["mean_tokens_per_example"],
                "runtime": info,
            }
        )
        delta = results[-1]["max_abs_delta_risk"]
        log.info("%s %s: scored (max |Δ risk| vs naive %.1e)", name, label, delta)
        if path is not verifier:
            path.release()  # its own prepared copy; the shared weights stay with `verifier`
    timed = [build(label, settings) for label, settings in specs]
    runs: list[list[float]] = [[] for _ in specs]
    for round_ in range(repeats):
        for i, path in enumerate(timed):
            start = time.perf_counter()
            path.score(frame)
            runs[i].append((time.perf_counter() - start) * 1000.0 / len(frame))
        log.info("%s round %d/%d: naive %.1f ms/example", name, round_ + 1, repeats, runs[0][-1])
    for row, path_runs in zip(results, runs, strict=True):
        row["ms_per_example"] = _median(path_runs)
        row["speedup_vs_naive"] = _median([n / p for n, p in zip(runs[0], path_runs, strict=True)])
        row["runs_ms_per_example"] = path_runs
        row["runtime"]["ms_per_example"] = row["ms_per_example"]
        row["runtime"]["timing"] = {
            "median_ms_per_example": row["ms_per_example"],
            "runs_ms_per_example": path_runs,
            "rounds": repeats,
            "interleaved": True,
            "timer": "time.perf_counter",
        }
        log.info("%s %s: %.1f ms/example", name, row["path"], row["ms_per_example"])
    return {
        "verifier": name,
        "model": verifier.loaded.name,
        "weights": verifier.weights,
        "paths": results,
    }


def check_fp32(report: dict[str, Any]) -> list[str]:
    """Float32 paths whose risks differ from the naive loop by more than 1e-5."""
    return [
        f"{report['verifier']} {r['path']}: max |Δ| {r['max_abs_delta_risk']:.2e}"
        for r in report["paths"]
        if r["precision"] == "fp32" and r["max_abs_delta_risk"] > FP32_TOLERANCE
    ]


def target(report: dict[str, Any]) -> dict[str, Any]:
    """The fastest path with Spearman ρ >= 0.99 (log-odds where available) vs naive."""

    def rho(r):
        value = r["spearman_logit"] if r["spearman_logit"] is not None else r["spearman_risk"]
        return -1.0 if value is None else value

    ok = [r for r in report["paths"] if r["path"] != "naive" and rho(r) >= TARGET_SPEARMAN]
    best = max(ok, key=lambda r: r["speedup_vs_naive"]) if ok else None
    return {
        "verifier": report["verifier"],
        "path": best["path"] if best else None,
        "speedup": best["speedup_vs_naive"] if best else None,
        "spearman": rho(best) if best else None,
        "met": bool(best and best["speedup_vs_naive"] >= TARGET_SPEEDUP),
    }


def _fmt(value: Any, digits: int = 3) -> str:
    if value is None:
        return "n/a"
    if isinstance(value, float):
        return f"{value:.{digits}f}" if abs(value) >= 1e-3 or value == 0 else f"{value:.1e}"
    return str(value)


def to_markdown(reports: list[dict[str, Any]]) -> str:
    """One table row per (verifier, path)."""
    head = (
        "| verifier | model | path | precision | attention | ms/ex | speed-up | "
        "max abs Δ risk | Spearman risk | Spearman log-odds | peak RSS MiB | tokens/ex |"
    )
    lines = [head, "|" + "---|" * 12]
    for rep in reports:
        for r in rep["paths"]:
            lines.append(
                f"| {rep['verifier']} | {rep['model']} | {r['path']} | {r['precision']} | "
                f"{r['attention'] or 'stock'} | {r['ms_per_example']:.1f} | "
                f"{r['speedup_vs_naive']:.2f}x | "
                f"{_fmt(r['max_abs_delta_risk'])} | {_fmt(r['spearman_risk'], 4)} | "
                f"{_fmt(r['spearman_logit'], 4)} | {r['peak_rss_mb']:.0f} | "
                f"{r['mean_tokens_per_example']:.1f} |"
            )
    return "\n".join(lines)


def parse_args(argv: list[str] | None) -> argparse.Namespace:
    """Command-line options."""
    p = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    p.add_argument(
        "--verifiers",
        nargs="+",
        default=list(DEFAULT_VERIFIERS),
        help="conf/verifier/<name>.yaml stems",
    )
    p.add_argument("--sample", type=int, default=48, help="RAGTruth test rows (task-stratified)")
    p.add_argument("--seed", type=int, default=13, help="sample seed")
    p.add_argument("--repeats", type=int, default=3, help="timed passes (median reported)")
    p.add_argument("--warmup", type=int, default=1, help="untimed passes first")
    p.add_argument(
        "--batch-sizes",
        type=int,
        nargs="+",
        default=[2, 8],
        help="float32 sorted-batch sizes to time",
    )
    p.add_argument("--threads", type=int, default=None, help="torch threads for every path")
    p.add_argument(
        "--weights",
        choices=["random", "config"],
        default="random",
        help="random: exact architectures with seeded random weights (no model "
        "files needed); config: the models the config files name",
    )
    p.add_argument(
        "--set",
        dest="sets",
        action="append",
        default=[],
        help="override NAME.KEY=VALUE, e.g. deberta_nli.model=/models/nli",
    )
    p.add_argument("--data", default=None, help="RAGTruth test parquet (default: data dir)")
    p.add_argument(
        "--out", default=None, help="JSON report path (default <artifacts>/bench/verifiers.json)"
    )
    p.add_argument(
        "--require-target",
        action="store_true",
        help="exit 1 when the DeBERTa-NLI speed/agreement target is missed",
    )
    return p.parse_args(argv)


def main(argv: list[str] | None = None) -> int:
    """Run the benchmark; returns the exit status."""
    logging.basicConfig(level=logging.INFO, format="%(levelname)s %(name)s: %(message)s")
    args = parse_args(argv)
    data = load_ragtruth(split="test", path=args.data)
    frame = timing_sample(data.frame, args.sample, args.seed)
    log.info(
        "benchmarking on %d RAGTruth test rows (%s)",
        len(frame),
        frame["task"].value_counts().to_dict(),
    )
    reports = []
    for name in args.verifiers:
        overrides = [s.split(".", 1)[1] for s in args.sets if s.startswith(f"{name}.")]
        if args.weights == "random":
            overrides.insert(0, "weights=random")
        if args.threads is not None:
            overrides.append(f"threads={args.threads}")
        log.info("verifier %s (%s)", name, " ".join(overrides) or "as configured")
        reports.append(
            bench_one(name, overrides, frame, args.batch_sizes, args.repeats, args.warmup)
        )
    problems = [p for rep in reports for p in check_fp32(rep)]
    targets = [target(rep) for rep in reports]
    out = Path(args.out) if args.out else artifacts_dir() / "bench" / "verifiers.json"
    out.parent.mkdir(parents=True, exist_ok=True)
    payload = {
        "sample": len(frame),
        "seed": args.seed,
        "repeats": args.repeats,
        "warmup": args.warmup,
        "data_fingerprint": data.fingerprint,
        "example_ids": frame["example_id"].tolist(),
        "reports": reports,
        "targets": targets,
        "fp32_mismatches": problems,
    }
    out.write_text(json.dumps(payload, indent=2, default=str))
    print(to_markdown(reports))
    for t in targets:
        print(
            f"fastest path with rho >= {TARGET_SPEARMAN} for {t['verifier']}: {t['path']} "
            f"({_fmt(t['speedup'], 2)}x, rho {_fmt(t['spearman'], 4)})"
        )
    print(f"report: {out}")
    status = 0
    if problems:
        print(
            "FAIL: float32 paths differ from the naive loop by more than 1e-5:\n  "
            + "\n  ".join(problems)
        )
        status = 1
    main_target = next((t for t in targets if t["verifier"] == TARGET_VERIFIER), None)
    if main_target is not None:
        if main_target["met"]:
            print(f"target met: {TARGET_VERIFIER} >= {TARGET_SPEEDUP}x at rho >= {TARGET_SPEARMAN}")
        else:
            weights = next(r["weights"] for r in reports if r["verifier"] == TARGET_VERIFIER)
            note = " (random weights: agreement measured on uninformative scores)"
            print(
                f"TARGET MISSED: {TARGET_VERIFIER} needs a path >= {TARGET_SPEEDUP}x faster "
                f"than naive fp32 at rho >= {TARGET_SPEARMAN}"
                + (note if weights == "random" else "")
            )
            if args.require_target:
                status = 1
    return status


if __name__ == "__main__":
    sys.exit(main())
