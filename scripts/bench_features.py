"""Benchmark the lexical features and zero-shot gates on the RAGTruth test split (CPU).

Why: RAGScope's argument is cost; a gate is only "cheap" at a measured ms/example. This
script times, in one process and on the same rows:

- the tokenisation floor: `runner.text.tokenize` on every distinct context and question
  once and on every answer (nothing a feature can do with less), and the text views the
  features start from (tokens + content tokens + numbers, contexts sentence by sentence);
- each zero-shot gate's `score` on the raw frame (tokenisation included), and the TF-IDF
  gates' `fit` (on the RAGTruth train split) and `score`;
- the whole lexical family (`lexical_features`, ROUGE-L and token-F1 included, no cache);
- ROUGE-L against ``rouge_score``: our ROUGE-L gate vs ``RougeScorer(['rougeL'])`` on the
  same (answer, context) texts, and our `lcs_length` vs ``rouge_scorer._lcs_table`` on the
  same token sequences (``rouge_score``'s own tokens), with a check that every LCS length
  agrees.

Each timing is the best of ``--repeats`` runs, on the wall clock (``time.perf_counter``)
and in process CPU time (``time.process_time``, which other users of a shared machine do not
inflate); the slow ``rouge_score`` runs are timed once. Usage::

    RUNNER_DATA_DIR=/path/to/data python scripts/bench_features.py [--json out.json]
"""

from __future__ import annotations

import argparse
import json
import os
import platform
import sys
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

import numpy as np
import pandas as pd
from rouge_score import rouge_scorer
from rouge_score import tokenize as rouge_tokenize

from runner.data import load_ragtruth
from runner.features import FEATURE_VERSION, ContextView, TextView, lexical_features
from runner.gates import FeatureGate, TfidfGate
from runner.paths import data_dir
from runner.text import PositionMasks, lcs_length, lcs_length_masks, tokenize

FAMILY_TARGET_MS = 0.3
ROUGE_SPEEDUP_TARGET = 50.0


Timing = tuple[float, float]  # (wall-clock seconds, process CPU seconds)


def best_of(repeats: int, run: Callable[[], Any]) -> Timing:
    """Smallest wall-clock and smallest CPU seconds over `repeats` calls of `run`."""
    walls, cpus = [], []
    for _ in range(repeats):
        wall, cpu = time.perf_counter(), time.process_time()
        run()
        cpus.append(time.process_time() - cpu)
        walls.append(time.perf_counter() - wall)
    return min(walls), min(cpus)


def tokenise_floor(frame: pd.DataFrame) -> None:
    """Tokenise each distinct context and question once, and every answer."""
    seen: dict[str, list[str]] = {}
    for question, context, answer in zip(
        frame["question"], frame["context"], frame["answer"], strict=True
    ):
        if context not in seen:
            seen[context] = tokenize(context)
        if question not in seen:
            seen[question] = tokenize(question)
        tokenize(answer)


def text_views(frame: pd.DataFrame) -> None:
    """Build the views the features start from (the tokenisation a feature really needs)."""
    contexts: dict[str, ContextView] = {}
    questions: dict[str, TextView] = {}
    for question, context, answer in zip(
        frame["question"], frame["context"], frame["answer"], strict=True
    ):
        if context not in contexts:
            contexts[context] = ContextView.of(context)
        if question not in questions:
            questions[question] = TextView.of(question)
        TextView.of(answer)


def our_rouge_l_recall(frame: pd.DataFrame) -> list[float]:
    """ROUGE-L recall per row as `rouge_score` defines it (all tokens), with our code."""
    out = []
    for context, answer in zip(frame["context"], frame["answer"], strict=True):
        target, prediction = tokenize(answer), tokenize(context)
        n = len(target)
        out.append(lcs_length_masks(target, PositionMasks.of(prediction)) / n if n else 0.0)
    return out


def measure(frame: pd.DataFrame, train: pd.DataFrame, repeats: int, rouge_rows: int) -> dict:
    """Run every timing and check; returns ``{"timings": ..., "checks": ...}``."""
    n = len(frame)
    rows: dict[str, dict[str, Any]] = {}

    def add(name: str, timing: Timing, rows_timed: int = n, note: str = "") -> None:
        wall, cpu = timing
        rows[name] = {
            "ms_per_example": wall * 1e3 / rows_timed,
            "cpu_ms_per_example": cpu * 1e3 / rows_timed,
            "rows": rows_timed,
            "note": note,
        }

    add(
        "tokenisation floor",
        best_of(repeats, lambda: tokenise_floor(frame)),
        note="tokenize(): distinct contexts/questions once + answers",
    )
    add(
        "text views",
        best_of(repeats, lambda: text_views(frame)),
        note="tokens + content tokens + numbers",
    )
    for feature in ("uncovered_fraction", "rouge_l_risk", "token_f1_risk"):
        gate = FeatureGate(feature)
        add(
            f"gate {feature}",
            best_of(repeats, lambda gate=gate: gate.score(frame)),
            note="FeatureGate.score on raw texts",
        )
    for kind in ("answer_context", "max_sentence"):
        gate = TfidfGate(kind)
        fit_wall, _ = best_of(1, lambda gate=gate: gate.fit(train))
        add(
            f"gate tfidf {kind}",
            best_of(repeats, lambda gate=gate: gate.score(frame)),
            note=f"TfidfGate.score; fit on {len(train)} train rows took {fit_wall:.2f} s",
        )
    add(
        "lexical family",
        best_of(repeats, lambda: lexical_features(frame)),
        note="all 13 features, no cache",
    )

    # ROUGE-L against rouge_score, on the first `rouge_rows` rows (rouge_score is slow, so
    # it is timed once; ours is the best of `repeats`).
    sample = frame.iloc[:rouge_rows]
    scorer = rouge_scorer.RougeScorer(["rougeL"])
    reference: list[float] = []

    def run_scorer() -> None:
        reference[:] = [
            scorer.score(answer, context)["rougeL"].recall
            for context, answer in zip(sample["context"], sample["answer"], strict=True)
        ]

    scorer_time = best_of(1, run_scorer)
    ours_recall = our_rouge_l_recall(sample)
    add(
        "rouge_score RougeScorer rougeL",
        scorer_time,
        len(sample),
        note="score(target=answer, prediction=context), all tokens",
    )
    add(
        "ours rouge-L recall (same definition)",
        best_of(repeats, lambda: our_rouge_l_recall(sample)),
        len(sample),
        note="tokenize + bit-parallel LCS, all tokens, per row",
    )
    add(
        "ours rouge_l_risk gate (same rows)",
        best_of(repeats, lambda: FeatureGate("rouge_l_risk").score(sample)),
        len(sample),
        note="content tokens, contexts indexed once",
    )

    sequences = [
        (rouge_tokenize.tokenize(a, None), rouge_tokenize.tokenize(c, None))
        for c, a in zip(sample["context"], sample["answer"], strict=True)
    ]
    table_lengths: list[int] = []

    def run_table() -> None:
        table_lengths[:] = [rouge_scorer._lcs_table(a, c)[-1][-1] for a, c in sequences]

    add("rouge_score _lcs_table", best_of(1, run_table), len(sample), note="same token sequences")
    add(
        "ours lcs_length",
        best_of(repeats, lambda: [lcs_length(a, c) for a, c in sequences]),
        len(sample),
        note="same token sequences",
    )
    mismatches = sum(
        lcs_length(a, c) != t for (a, c), t in zip(sequences, table_lengths, strict=True)
    )

    for row in rows.values():
        for clock in ("ms_per_example", "cpu_ms_per_example"):
            row[clock.replace("ms_per_example", "x_floor")] = (
                row[clock] / rows["tokenisation floor"][clock]
            )

    def ratio(slow: str, fast: str, clock: str) -> float:
        return rows[slow][clock] / rows[fast][clock]

    checks: dict[str, Any] = {
        "family_target_ms": FAMILY_TARGET_MS,
        "rouge_speedup_target": ROUGE_SPEEDUP_TARGET,
        "lcs_rows_compared": len(sequences),
        "lcs_mismatches": int(mismatches),
        "rouge_l_recall_max_abs_diff_same_definition": float(
            np.max(np.abs(np.asarray(ours_recall) - np.asarray(reference)), initial=0.0)
        ),
    }
    for clock, tag in (("ms_per_example", "wall"), ("cpu_ms_per_example", "cpu")):
        family = rows["lexical family"][clock]
        checks[f"family_ms_per_example_{tag}"] = family
        checks[f"family_meets_target_{tag}"] = family <= FAMILY_TARGET_MS
        checks[f"family_x_tokenisation_floor_{tag}"] = ratio(
            "lexical family", "tokenisation floor", clock
        )
        checks[f"family_x_text_views_{tag}"] = ratio("lexical family", "text views", clock)
        same = ratio(
            "rouge_score RougeScorer rougeL", "ours rouge-L recall (same definition)", clock
        )
        gate = ratio("rouge_score RougeScorer rougeL", "ours rouge_l_risk gate (same rows)", clock)
        lcs = ratio("rouge_score _lcs_table", "ours lcs_length", clock)
        checks[f"rouge_l_speedup_same_definition_{tag}"] = same
        checks[f"rouge_l_speedup_gate_vs_scorer_{tag}"] = gate
        checks[f"lcs_speedup_vs_lcs_table_{tag}"] = lcs
        checks[f"rouge_meets_target_{tag}"] = min(same, lcs) >= ROUGE_SPEEDUP_TARGET
    return {"timings": rows, "checks": checks}


def render(result: dict) -> str:
    """The results as a plain-text table plus a summary of the targets."""
    header = (
        f"{'measurement':40s} {'wall ms/ex':>10s} {'cpu ms/ex':>10s} {'x floor':>8s} {'rows':>5s}"
    )
    lines = [header + "  note", "-" * 110]
    for name, row in result["timings"].items():
        lines.append(
            f"{name:40s} {row['ms_per_example']:10.4f} {row['cpu_ms_per_example']:10.4f} "
            f"{row['cpu_x_floor']:8.1f} {row['rows']:5d}  {row['note']}"
        )
    c = result["checks"]

    def verdict(ok: bool) -> str:
        return "met" if ok else "MISSED"

    lines += ["", "x floor = CPU time / CPU time of the tokenisation floor", ""]
    for tag in ("wall", "cpu"):
        lines += [
            f"[{tag}] lexical family {c[f'family_ms_per_example_{tag}']:.3f} ms/example "
            f"(target <= {c['family_target_ms']}: {verdict(c[f'family_meets_target_{tag}'])}); "
            f"{c[f'family_x_tokenisation_floor_{tag}']:.1f}x the tokenisation floor, "
            f"{c[f'family_x_text_views_{tag}']:.1f}x the text views",
            f"[{tag}] ROUGE-L vs RougeScorer {c[f'rouge_l_speedup_same_definition_{tag}']:.0f}x "
            f"(same all-token definition), {c[f'rouge_l_speedup_gate_vs_scorer_{tag}']:.0f}x "
            f"(our gate); LCS vs _lcs_table {c[f'lcs_speedup_vs_lcs_table_{tag}']:.0f}x "
            f"(target >= {c['rouge_speedup_target']:.0f}x: "
            f"{verdict(c[f'rouge_meets_target_{tag}'])})",
        ]
    lines += [
        f"LCS lengths: {c['lcs_mismatches']} mismatches with _lcs_table in "
        f"{c['lcs_rows_compared']} rows",
        f"ROUGE-L recall, ours vs rouge_score (same definition): max |diff| = "
        f"{c['rouge_l_recall_max_abs_diff_same_definition']:.4f} (we strip thousands "
        f"separators, rouge_score does not)",
    ]
    return "\n".join(lines)


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--json", type=Path, help="also write the results to this JSON file")
    parser.add_argument("--repeats", type=int, default=3, help="timed runs per measurement")
    parser.add_argument(
        "--rouge-rows", type=int, default=2700, help="rows for the (slow) rouge_score comparisons"
    )
    args = parser.parse_args(argv)
    if args.repeats < 1 or args.rouge_rows < 1:
        parser.error("--repeats and --rouge-rows must be positive")
    root = data_dir()
    if root is None:
        parser.error("set RUNNER_DATA_DIR to the offline data directory (holds ragtruth/)")
    test = load_ragtruth("test", data_dir=root)
    train = load_ragtruth("train", data_dir=root)
    frame = test.frame[["question", "context", "answer"]]
    result = measure(
        frame,
        train.frame[["question", "context", "answer"]],
        args.repeats,
        min(args.rouge_rows, len(frame)),
    )
    result["meta"] = {
        "data": str(root / "ragtruth" / "test.parquet"),
        "data_fingerprint": test.fingerprint,
        "rows": len(frame),
        "distinct_contexts": int(frame["context"].nunique()),
        "feature_version": FEATURE_VERSION,
        "repeats": args.repeats,
        "python": sys.version.split()[0],
        "platform": platform.platform(),
        "cpu_count": os.cpu_count(),
        "clock": "wall: time.perf_counter; cpu: time.process_time; best of repeats "
        "(rouge_score timed once)",
        "load_average_at_start": list(os.getloadavg()),
    }
    print(render(result))
    if args.json is not None:
        args.json.parent.mkdir(parents=True, exist_ok=True)
        args.json.write_text(json.dumps(result, indent=2, sort_keys=True) + "\n")
        print(f"\nwrote {args.json}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
