"""Run every study and record the sha256 of what it computed, to prove a refactor moved no number.

Why: "numbers must not move" is checked by bytes, not by eye. Each study runs as a user
runs it (`python -m runner experiment=<name>`, `tracking=off`) into a fresh artifacts
folder, so no cache from an earlier run can hide a change; the claim and HRI studies and
training run at small settings (seconds to minutes, not hours). The output is a JSON file
mapping ``<cell>/<file>`` to its sha256; `--compare` prints what differs from an earlier
record and exits 1 if anything does.

    python scripts/study_hashes.py --out artifacts/hashes/before.json
    python scripts/study_hashes.py --out artifacts/hashes/after.json \
        --compare artifacts/hashes/before.json

The routing chain (fit_gate -> route -> audit) needs a model registry, so it runs with
`tracking=sqlite` in its own folder; the detector studies read
``models:/ragtruth_detector@champion`` from `--registry` (default: the project's
artifacts/mlflow.db, written by `make train-detector`) and are left out when it has none.
"""

from __future__ import annotations

import argparse
import hashlib
import json
import os
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import pandas as pd

ROOT = Path(__file__).resolve().parents[1]
HASHED = ("cells.csv", "scores.parquet", "decisions.parquet")
# Cells that measure this machine (time, memory), not the data: they differ between any two
# runs, so the comparison hashes cells.csv without them too ("cells.csv without timing").
MEASURED = ("ms/example", "peak RSS (MiB)", "seconds/claim", "s/claim", "rows/s", "train_seconds")

SMALL_CLAIMS = ("study.params.answer_cache=false", "study.params.span_cache=false")
SMALL_HRI = (
    "study.params.s1_responses=6",
    "study.params.judge_responses=2",
)
SMALL_TRAIN = (
    "dataset.limit=300",
    "train.max_examples=40",
    "train.val_max_examples=30",
    "train.val_share=0.3",
    "train.batch_size=8",
    "train.checkpoint_every=2",
    "train.lr=1e-3",
    "detector.max_length=128",
)

# (cell name, experiment, overrides); {rag_train} etc. are filled in by `main`.
STUDIES: list[tuple[str, str, tuple[str, ...]]] = [
    ("rq1_cheap_signals", "rq1_cheap_signals", ()),
    ("rq2_grouped_cv", "rq2_grouped_cv", ()),
    ("rq3_operating_points", "rq3_operating_points", ()),
    ("rq4_verifier_cost", "rq4_verifier_cost", ()),
    ("rq5_source_shift", "rq5_source_shift", ()),
    ("rq5_source_shift_ragtruth", "rq5_source_shift_ragtruth", ()),
    ("rq5_source_shift_row_cv", "rq5_source_shift_row_cv", ()),
    ("hri_example", "hri_example", ()),
    ("hri_example_ahp", "hri_example", ("hri=ahp",)),
    ("hri_calibration", "hri_calibration", ()),
    ("claims_verification", "claims_verification", SMALL_CLAIMS),
    ("claims_verification_lettucedetect", "claims_verification_lettucedetect", SMALL_CLAIMS),
    ("hri_predicted", "hri_predicted", SMALL_HRI),
    ("hri_predicted_lettucedetect", "hri_predicted_lettucedetect", SMALL_HRI),
    ("operating_report", "operating_report", ("dataset.path={rag_test}",)),
    ("train_detector", "train_detector", SMALL_TRAIN),
]
ROUTING: list[tuple[str, str, tuple[str, ...]]] = [
    ("fit_gate", "fit_gate", ("dataset.path={rag_train}",)),
    ("route", "route", ("dataset.path={rag_test}", "routing.audit_fraction=0.1")),
    (
        "audit",
        "audit",
        (
            "dataset.decisions={artifacts}/route/latest/decisions.parquet",
            "dataset.labels={audit_labels}",
        ),
    ),
]
DETECTOR: list[tuple[str, str, tuple[str, ...]]] = [
    ("detector_eval", "detector_eval", ("study.params.fit_limit=400",)),
    ("rq4_verifier_cost_detector", "rq4_verifier_cost_detector", ()),
    ("claims_verification_detector", "claims_verification_detector", SMALL_CLAIMS),
    ("hri_predicted_detector", "hri_predicted_detector", SMALL_HRI),
]


def sha256(path: Path) -> str:
    return hashlib.sha256(path.read_bytes()).hexdigest()


def output_hashes(run_dir: Path) -> dict[str, str]:
    """sha256 of each output a run wrote, and of its cells without the measured ones."""
    hashes = {name: sha256(run_dir / name) for name in HASHED if (run_dir / name).exists()}
    cells = pd.read_csv(run_dir / "cells.csv", dtype=str, keep_default_na=False)
    measured = cells["column"].isin(MEASURED)
    if measured.any():
        kept = cells[~measured].to_csv(index=False).encode()
        hashes["cells.csv without timing"] = hashlib.sha256(kept).hexdigest()
    return hashes


def run(cell: str, experiment: str, overrides: list[str], artifacts: Path, env: dict) -> dict:
    """One study as a subprocess; the hashes of its outputs (or its failure)."""
    command = [
        sys.executable,
        "-m",
        "runner",
        f"experiment={experiment}",
        "progress=false",
        f"paths.artifacts_dir={artifacts}",
        *overrides,
    ]
    started = time.time()
    done = subprocess.run(command, cwd=ROOT, env=env, capture_output=True, text=True)
    seconds = round(time.time() - started, 1)
    if done.returncode != 0:
        tail = (done.stdout + done.stderr)[-2000:]
        print(f"{cell}: FAILED after {seconds} s\n{tail}", flush=True)
        return {"error": tail, "seconds": seconds}
    hashes = output_hashes((artifacts / experiment / "latest").resolve())
    shown = "  ".join(f"{name} {digest[:12]}" for name, digest in hashes.items())
    print(f"{cell}: {seconds} s  {shown}", flush=True)
    return {"files": hashes, "seconds": seconds}


def audit_labels(rag_test: Path, decisions: Path, out: Path) -> None:
    """The true labels of the rows route marked for audit, as reviewers would return them."""
    marked = pd.read_parquet(decisions, columns=["id", "audit"]).query("audit")["id"]
    frame = pd.read_json(rag_test, lines=True, dtype={"id": str})[["id", "label"]]
    frame[frame["id"].isin(marked)].to_json(out, orient="records", lines=True)


def compared(files: dict | None) -> dict | None:
    """What must be equal: every hash, but cells.csv without timing where it has timing."""
    if files is None or "cells.csv without timing" not in files:
        return files
    return {name: digest for name, digest in files.items() if name != "cells.csv"}


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--out", type=Path, required=True)
    parser.add_argument("--compare", type=Path, help="an earlier --out to compare against")
    parser.add_argument("--work", type=Path, help="folder for the runs (default: a temp dir)")
    parser.add_argument("--registry", default=f"sqlite:///{ROOT / 'artifacts' / 'mlflow.db'}")
    parser.add_argument("--only", nargs="*", help="cells to run (default: all)")
    parser.add_argument(
        "--rehash", action="store_true", help="hash the runs already in --work, run nothing"
    )
    args = parser.parse_args()

    work = args.work or Path(tempfile.mkdtemp(prefix="study_hashes-"))
    work.mkdir(parents=True, exist_ok=True)
    env = {k: v for k, v in os.environ.items() if k != "RUNNER_ARTIFACTS_DIR"}
    rag_train, rag_test = work / "rag" / "train.jsonl", work / "rag" / "test.jsonl"
    for split, path in (("train", rag_train), ("test", rag_test)):
        if not path.exists():
            convert = [sys.executable, "scripts/ragtruth_to_rag_file.py", "--split", split]
            subprocess.run([*convert, "--out", str(path)], cwd=ROOT, env=env, check=True)
    labels = work / "rag" / "labels.jsonl"
    names = {"rag_train": rag_train, "rag_test": rag_test, "audit_labels": labels}

    plan = [(c, e, o, "off") for c, e, o in STUDIES]
    plan += [(c, e, o, "sqlite") for c, e, o in ROUTING]
    registry = args.registry.removeprefix("sqlite:///")
    if Path(registry).exists() or not args.registry.startswith("sqlite:///"):
        plan += [(c, e, o, "registry") for c, e, o in DETECTOR]
    else:
        print(f"no registry at {registry}: the detector studies are left out", flush=True)
    record: dict[str, dict] = {}
    for cell, experiment, overrides, tracking in plan:
        if args.only and cell not in args.only:
            continue
        artifacts = work / ("routing" if tracking == "sqlite" else cell)
        cell_env = dict(env)
        filled = [o.format(artifacts=artifacts, **names) for o in overrides]
        filled.append("tracking=sqlite" if tracking == "sqlite" else "tracking=off")
        if tracking == "registry":  # tracking off; models:/ URIs are read from --registry
            filled.append(f"tracking.uri={args.registry}")
        if experiment == "audit" and not args.rehash:
            audit_labels(rag_test, artifacts / "route" / "latest" / "decisions.parquet", labels)
        if args.rehash:
            latest = (artifacts / experiment / "latest").resolve()
            record[cell] = {"files": output_hashes(latest)} if latest.exists() else {}
            continue
        record[cell] = run(cell, experiment, filled, artifacts, cell_env)

    args.out.parent.mkdir(parents=True, exist_ok=True)
    args.out.write_text(json.dumps(record, indent=2, sort_keys=True) + "\n")
    print(f"wrote {args.out} (runs in {work})")
    if args.compare:
        before = json.loads(args.compare.read_text())
        differ = [
            f"{cell}: {before.get(cell, {}).get('files')} -> {now.get('files')}"
            for cell, now in record.items()
            if compared(now.get("files")) != compared(before.get(cell, {}).get("files"))
        ]
        print("\n".join(differ) if differ else "every hash equal")
        sys.exit(1 if differ else 0)


if __name__ == "__main__":
    main()
