"""Convert a RAGTruth split (from RUNNER_DATA_DIR) into the rag_file user format.

Why: the routing contract's real-data check fits on RAGTruth train and routes RAGTruth
test exactly as a team would use its own logs, through `dataset=rag_file`. QA contexts
become a list of passages (RAGTruth joins them with blank lines), the task is both
``task`` and ``source``, and the label is written as ``hallucinated`` / ``faithful``.

    python scripts/ragtruth_to_rag_file.py --split train --out artifacts/rag/train.jsonl
    python scripts/ragtruth_to_rag_file.py --split test --out artifacts/rag/test.jsonl
"""

from __future__ import annotations

import argparse
import json
from pathlib import Path

from runner.data import load_ragtruth
from runner.paths import data_dir


def main() -> None:
    """Write one JSON object per RAGTruth response."""
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--split", choices=["train", "test"], required=True)
    parser.add_argument("--out", type=Path, required=True)
    parser.add_argument("--no-labels", action="store_true", help="leave the label out")
    args = parser.parse_args()
    frame = load_ragtruth(split=args.split, data_dir=str(data_dir())).frame
    args.out.parent.mkdir(parents=True, exist_ok=True)
    with open(args.out, "w", encoding="utf-8") as handle:
        for row in frame.itertuples(index=False):
            context = row.context.split("\n\n") if row.task == "QA" else row.context
            record = {
                "id": row.example_id,
                "question": row.question,
                "context": context,
                "answer": row.answer,
                "group": row.group_id,
                "source": row.task,
                "task": row.task,
            }
            if not args.no_labels:
                record["label"] = "hallucinated" if row.label else "faithful"
            handle.write(json.dumps(record, ensure_ascii=False) + "\n")
    print(f"wrote {len(frame)} rows to {args.out}")


if __name__ == "__main__":
    main()
