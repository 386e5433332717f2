"""Detector training throughput: steps/s and rows seen per CPU hour, before and after.

Why: issue 43 asks the default training to see all of RAGTruth train within 60 minutes on
2 cores. Two levers are measured here against the old default in the same process, on the
same real sentence pairs, with the same timer:

- ``freeze_layers``: the lower encoder layers (and the embeddings) stay pretrained, so their
  backward pass is skipped (`runner.training.recipes.RecipeJob.model`);
- ``negatives_per_positive``: every positive pair and a seeded share of negatives
  (`runner.verifiers.sentence_pairs.subsample_negatives`), so a step covers more rows.

Each setting is timed in interleaved rounds (one timed block of optimiser steps per setting
per round, after a warm-up; the median over rounds), on batches of the real pairs of
``--rows`` RAGTruth train rows at the experiment's input rule. Rows per hour = steps/s x
3,600 x batch size / pairs per row (after subsampling). Speed-ups are ratios against the
first setting (the issue-31 default: every layer but the embeddings trained, every pair).

    python scripts/bench_training.py --out artifacts/bench/training.json
"""

from __future__ import annotations

import argparse
import json
import time
from pathlib import Path
from types import SimpleNamespace

import numpy as np

SETTINGS = (
    ("issue-31 default: every layer, every pair", 0, None),
    ("freeze_layers=3, every pair", 3, None),
    ("freeze_layers=3, negatives_per_positive=2 (default)", 3, 2.0),
)


def main() -> None:
    import torch
    from transformers import AutoModelForSequenceClassification, AutoTokenizer

    from runner.data import load_ragtruth
    from runner.training import RecipeJob, backbone_folder, labelled_pairs, pair_tensors
    from runner.verifiers import InputRule, subsample_negatives

    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--rows", type=int, default=300)
    parser.add_argument("--steps", type=int, default=8, help="timed steps per round")
    parser.add_argument("--rounds", type=int, default=3)
    parser.add_argument("--batch-size", type=int, default=16)
    parser.add_argument("--threads", type=int, default=2)
    parser.add_argument("--out", default="artifacts/bench/training.json")
    args = parser.parse_args()
    torch.set_num_threads(args.threads)

    source = backbone_folder("minilm_l6")
    tokenizer = AutoTokenizer.from_pretrained(source)
    rule = InputRule(max_length=128, template="plain", units="by_form", question_tokens=24)
    rows = load_ragtruth(split="train").frame.sample(args.rows, random_state=13)
    pairs = labelled_pairs(tokenizer, rule, rows)
    rng = np.random.default_rng(13)
    batches = [
        rng.choice(len(pairs.labels), args.batch_size, replace=False)
        for _ in range(args.steps * args.rounds + 2)
    ]
    runs = []
    for name, frozen, ratio in SETTINGS:
        detector = SimpleNamespace(freeze_embeddings=True, freeze_layers=frozen)
        settings = SimpleNamespace(seed=13)
        job = RecipeJob(source, tokenizer, rule, settings, detector, (None, None), Path("."), False)
        model = job.model(AutoModelForSequenceClassification)
        model.train()
        optimiser = torch.optim.AdamW([p for p in model.parameters() if p.requires_grad], lr=1e-5)
        kept = subsample_negatives(pairs, ratio, 13)
        runs.append(
            {
                "name": name,
                "model": model,
                "optimiser": optimiser,
                "pairs_per_row": len(kept.labels) / args.rows,
                "trainable": sum(p.numel() for p in model.parameters() if p.requires_grad),
                "seconds": [],
            }
        )

    def step(run: dict, rows: np.ndarray) -> None:
        batch = pair_tensors(pairs, rows, tokenizer.pad_token_id, "cpu", True)
        run["model"](**batch).loss.backward()
        run["optimiser"].step()
        run["optimiser"].zero_grad()

    for run in runs:  # warm-up
        step(run, batches[-1])
    for r in range(args.rounds):
        for run in runs:
            start = time.perf_counter()
            for rows_ in batches[r * args.steps : (r + 1) * args.steps]:
                step(run, rows_)
            run["seconds"].append((time.perf_counter() - start) / args.steps)
    base = float(np.median(runs[0]["seconds"]))
    out = []
    for run in runs:
        per_step = float(np.median(run["seconds"]))
        rows_per_hour = 3600 / per_step * args.batch_size / run["pairs_per_row"]
        out.append(
            {
                "setting": run["name"],
                "trainable_parameters": run["trainable"],
                "seconds_per_step": per_step,
                "steps_per_second": 1 / per_step,
                "speedup_per_step": base / per_step,
                "pairs_per_row": run["pairs_per_row"],
                "rows_per_hour": rows_per_hour,
            }
        )
    for row in out:
        row["rows_per_hour_ratio"] = row["rows_per_hour"] / out[0]["rows_per_hour"]
    report = {"rows": args.rows, "batch_size": args.batch_size, "threads": args.threads,
              "rounds": args.rounds, "steps_per_round": args.steps, "settings": out}  # fmt: skip
    Path(args.out).parent.mkdir(parents=True, exist_ok=True)
    Path(args.out).write_text(json.dumps(report, indent=1) + "\n")
    print("| setting | steps/s | x per step | pairs/row | rows/hour | x rows/hour |")
    print("|---|---|---|---|---|---|")
    for row in out:
        print(
            f"| {row['setting']} | {row['steps_per_second']:.2f} | {row['speedup_per_step']:.2f} | "
            f"{row['pairs_per_row']:.2f} | {row['rows_per_hour']:,.0f} | "
            f"{row['rows_per_hour_ratio']:.2f} |"
        )
    print(f"wrote {args.out}")


if __name__ == "__main__":
    main()
