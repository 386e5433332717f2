"""Write a processed RAGTruth parquet in the layout of RAGTruth's original release.

Why: the original release (`response.jsonl` + `source_info.jsonl`, joined on `source_id`)
is not in the offline data, but the loader reads it, and a run on it must give the same
tables as a run on the processed parquet. This converter builds that pair from the
parquet, so the two loaders can be compared on the same real responses.

Mapping: one source per (task_type, context), numbered in order of first appearance
(`source_id` "0", "1", ...), so the source ids share nothing with the processed form's
context-hash group names. QA sources hold `{"question": query, "passages": context}`;
Summary and Data2txt sources hold the processed context string verbatim (the release
itself stores the article / the business record without the processed form's prompt
residue; keeping the residue here makes the comparison about loading and grouping, not
about text clean-up). Responses keep `id`, `model`, `temperature`, `quality`, the parsed
span list as `labels`, and `split`.

Usage: python scripts/ragtruth_to_original.py PARQUET OUT_DIR [--split test]
"""

from __future__ import annotations

import argparse
import json
import sys
from pathlib import Path

import pandas as pd


def convert(processed: pd.DataFrame, out_dir: Path, split: str = "test") -> dict[str, int]:
    """Write `response.jsonl` and `source_info.jsonl` for `processed` into `out_dir`."""
    out_dir.mkdir(parents=True, exist_ok=True)
    source_of: dict[tuple[str, str], str] = {}
    sources, responses = [], []
    for row in processed.itertuples(index=False):
        key = (row.task_type, row.context)
        if key not in source_of:
            source_of[key] = str(len(source_of))
            info = (
                {"question": row.query, "passages": row.context}
                if row.task_type == "QA"
                else row.context
            )
            sources.append(
                {"source_id": source_of[key], "task_type": row.task_type, "source_info": info}
            )
        responses.append(
            {
                "id": str(row.id),
                "source_id": source_of[key],
                "model": row.model,
                "temperature": float(row.temperature),
                "labels": json.loads(row.hallucination_labels),
                "split": split,
                "quality": row.quality,
                "response": row.output,
            }
        )
    for name, records in (("source_info.jsonl", sources), ("response.jsonl", responses)):
        with open(out_dir / name, "w", encoding="utf-8") as fh:
            for rec in records:
                fh.write(json.dumps(rec, ensure_ascii=False) + "\n")
    return {"sources": len(sources), "responses": len(responses)}


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("parquet", type=Path, help="a processed RAGTruth parquet file")
    parser.add_argument("out_dir", type=Path, help="folder for the original-format pair")
    parser.add_argument("--split", default="test", help="value of each response's split field")
    args = parser.parse_args(argv)
    counts = convert(pd.read_parquet(args.parquet), args.out_dir, args.split)
    print(f"{counts['responses']} responses, {counts['sources']} sources -> {args.out_dir}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
