"""Learning curve of the trained detector: held-out AUROC / AP against training examples.

Why: a team deciding whether to label more data or buy more CPU needs to see how the
detector's quality grows with its training set. Each point is the real command,
``python -m runner experiment=train_detector train.max_examples=N tracking=off`` (same
recipe, seed and validation split as ``make train-detector``; no time budget), then the
kept weights scored on one seeded, task-stratified sample of RAGTruth test rows through
the verifier users load. The default model (``--reference``, e.g. the registered
``models:/ragtruth_detector@champion``) is scored on the same rows as the last point.

    python scripts/detector_learning_curve.py --sizes 250 500 1000 2000 \
        --reference models:/ragtruth_detector@champion --out artifacts/detector_curve

Writes ``curve.json`` and ``curve.png`` into ``--out``. The same rows' AUROC / AP of the
answer's length in words is drawn beside the curve: a max over more answer tokens is larger,
so a detector that has learned little ranks by length, and the curve only says something
where it rises above that line.
"""

from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
import time
from pathlib import Path

import numpy as np

ROOT = Path(__file__).resolve().parents[1]


def train_point(size: int, artifacts: Path) -> tuple[str, dict]:
    """Train one point with the project's command; (model folder, its card)."""
    cmd = [
        sys.executable, "-m", "runner", "experiment=train_detector", "tracking=off",
        f"train.max_examples={size}", "train.time_budget_min=null", "progress=false",
        f"paths.artifacts_dir={artifacts}",
    ]  # fmt: skip
    subprocess.run(cmd, cwd=ROOT, check=True)
    run_dir = (artifacts / "train_detector" / "latest").resolve()
    folder = json.loads((run_dir / "model_folder.json").read_text())["path"]
    return folder, json.loads((run_dir / "detector.json").read_text())


def score(model: str, rows) -> dict:
    """AUROC / AP of the verifier's risk on `rows`, and its ms/example."""
    from sklearn.metrics import average_precision_score, roc_auc_score

    from runner.verifiers import LettuceDetectVerifier

    verifier = LettuceDetectVerifier(model=model, batch_size=16, threads=2)
    verifier.load()
    start = time.perf_counter()
    risk = verifier.score(rows)
    seconds = time.perf_counter() - start
    y = rows["label"].to_numpy(int)
    return {
        "auroc": float(roc_auc_score(y, risk)),
        "ap": float(average_precision_score(y, risk)),
        "ms_per_example": 1000 * seconds / len(rows),
    }


def length_baseline(rows) -> dict:
    """AUROC / AP of the answer's length in words on `rows` (no model)."""
    from sklearn.metrics import average_precision_score, roc_auc_score

    words = rows["answer"].str.split().str.len().to_numpy(float)
    y = rows["label"].to_numpy(int)
    return {"auroc": float(roc_auc_score(y, words)), "ap": float(average_precision_score(y, words))}


def figure(points: list[dict], baseline: dict, path: Path) -> None:
    """AUROC and AP against training examples (log axis), the length baseline dashed."""
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt
    from matplotlib.ticker import NullFormatter

    fig, ax = plt.subplots(figsize=(6, 4))
    xs = [p["examples"] for p in points]
    for (metric, marker), color in zip((("auroc", "o"), ("ap", "s")), ("C0", "C1"), strict=True):
        ax.plot(xs, [p[metric] for p in points], marker=marker, color=color,
                label=metric.upper())  # fmt: skip
        ax.axhline(baseline[metric], color=color, linestyle="--", linewidth=1,
                   label=f"{metric.upper()} of answer length alone")  # fmt: skip
    for p in points:
        if p.get("reference"):
            ax.annotate("default model", (p["examples"], p["auroc"]), textcoords="offset points",
                        xytext=(-40, 8), fontsize=8)  # fmt: skip
    ax.set_xscale("log")
    ax.set_xticks(xs, [f"{x:,}" for x in xs])
    ax.xaxis.set_minor_formatter(NullFormatter())
    ax.set_xlabel("training examples (RAGTruth train)")
    ax.set_ylabel("held-out score (RAGTruth test sample)")
    recipes = {p.get("recipe") for p in points}
    recipe = f", {recipes.pop()} recipe" if len(recipes) == 1 and None not in recipes else ""
    ax.set_title(f"Detector learning curve (MiniLM-L6{recipe})")
    ax.grid(alpha=0.3)
    ax.legend(fontsize=7, loc="lower left")
    fig.tight_layout()
    fig.savefig(path, dpi=120)
    plt.close(fig)


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--sizes", type=int, nargs="+", default=[250, 500, 1000, 2000])
    parser.add_argument("--reference", default=None, help="the default model (path or models:/)")
    parser.add_argument("--eval-rows", type=int, default=900, help="test rows (task-stratified)")
    parser.add_argument("--seed", type=int, default=13)
    parser.add_argument("--out", type=Path, default=ROOT / "artifacts" / "detector_curve")
    args = parser.parse_args(argv)

    from runner.data import load_ragtruth
    from runner.verifiers import timing_sample

    os.environ.setdefault("RUNNER_ARTIFACTS_DIR", str(ROOT / "artifacts"))
    args.out.mkdir(parents=True, exist_ok=True)
    rows = timing_sample(load_ragtruth(split="test").frame, args.eval_rows, args.seed)
    rows = rows.reset_index(drop=True)
    points: list[dict] = []
    baseline = length_baseline(rows)

    def write() -> None:  # after every point, so a stopped run keeps what it measured
        ordered = sorted(points, key=lambda p: p["examples"])
        record = {
            "eval_rows": len(rows),
            "eval_tasks": rows["task"].value_counts().to_dict(),
            "eval_positives": int(np.sum(rows["label"])),
            "seed": args.seed,
            "answer_length_baseline": baseline,
            "points": ordered,
        }
        (args.out / "curve.json").write_text(json.dumps(record, indent=2) + "\n")
        figure(ordered, baseline, args.out / "curve.png")

    if args.reference:
        from runner.verifiers import read_detector_card, resolve_source

        card = read_detector_card(resolve_source(args.reference))
        point = {"examples": card["training"]["rows"], "reference": args.reference,
                 **score(args.reference, rows)}  # fmt: skip
        point["train_seconds"] = card["training"]["train_seconds"]
        point["stopped_by"] = card["training"]["stopped_by"]
        point["recipe"] = card.get("recipe")
        points.append(point)
        print(json.dumps(point), flush=True)
        write()
    for size in args.sizes:
        folder, card = train_point(size, args.out / "runs")
        point = {"examples": card["training"]["rows"], **score(folder, rows)}
        point["train_seconds"] = card["training"]["train_seconds"]
        point["validation_ap"] = card["validation"].get("ap")
        point["recipe"] = card.get("recipe")
        points.append(point)
        print(json.dumps(point), flush=True)
        write()
    print(f"wrote {args.out / 'curve.json'} and {args.out / 'curve.png'}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
