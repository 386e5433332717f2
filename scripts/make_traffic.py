"""Write N rows of realistic RAG traffic as Parquet shards, for load tests of `route`.

Why resample real rows: routing cost depends on the text (context length, answer length,
task mix), so synthetic text would measure the wrong thing. Each row is a RAGTruth row
drawn with replacement (seeded), given a new id (``traffic-<seed>-<n>``) so ids stay
unique, in the `dataset=rag_file` format (``docs/rag_file_format.md``): ``id, question,
context, answer, group, source, task`` and, with ``--labels``, ``label``. ``source`` is
the RAGTruth task (as `scripts/ragtruth_to_rag_file.py` writes it), or with
``--new-sources a,b --new-source-share 0.1`` a seeded share of rows gets one of the named
sources instead, to exercise `routing.on_unseen_source`.

Shards are written one at a time (``part-00000.parquet``, ...; ``--shard-rows`` each), so
memory stays flat whatever N is:

    python scripts/make_traffic.py --rows 1000000 --out artifacts/traffic/1m
    python -m runner experiment=route dataset.path=artifacts/traffic/1m
"""

from __future__ import annotations

import argparse
import json
import sys
from pathlib import Path

import numpy as np
import pandas as pd
import pyarrow as pa
import pyarrow.parquet as pq

from runner.data import load_ragtruth
from runner.paths import data_dir

COLUMNS = ("id", "question", "context", "answer", "group", "source", "task")


def traffic_shards(
    pool: pd.DataFrame,
    rows: int,
    shard_rows: int,
    seed: int,
    labels: bool = False,
    new_sources: tuple[str, ...] = (),
    new_source_share: float = 0.0,
):
    """Yield ``(shard number, frame)`` for `rows` rows resampled from `pool` (canonical frame).

    Draws are made shard by shard from one seeded generator, so a row's content depends
    on the seed and its position only, never on how many rows are asked for after it.
    """
    if rows < 1 or shard_rows < 1:
        raise ValueError(f"rows={rows} and shard_rows={shard_rows} must be positive")
    if new_sources and not 0.0 < new_source_share <= 1.0:
        raise ValueError(f"new_source_share={new_source_share}: a fraction in (0, 1]")
    rng = np.random.default_rng(seed)
    for shard, start in enumerate(range(0, rows, shard_rows)):
        n = min(shard_rows, rows - start)
        picked = pool.iloc[rng.integers(0, len(pool), size=n)].reset_index(drop=True)
        source = picked["task"].astype(str).to_numpy(dtype=object)
        if new_sources:
            moved = rng.random(n) < new_source_share
            source[moved] = np.asarray(new_sources, dtype=object)[
                rng.integers(0, len(new_sources), size=int(moved.sum()))
            ]
        frame = pd.DataFrame(
            {
                "id": [f"traffic-{seed}-{start + i}" for i in range(n)],
                "question": picked["question"].to_numpy(),
                "context": picked["context"].to_numpy(),
                "answer": picked["answer"].to_numpy(),
                "group": picked["group_id"].astype(str).to_numpy(),
                "source": source,
                "task": picked["task"].astype(str).to_numpy(),
            },
            columns=list(COLUMNS),
        )
        if labels:
            frame["label"] = np.where(picked["label"].to_numpy() == 1, "hallucinated", "faithful")
        yield shard, frame


def main(argv: list[str] | None = None) -> int:
    """Write the shards and a ``traffic.json`` that says how they were made."""
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--rows", type=int, required=True, help="rows to write in all")
    parser.add_argument("--out", type=Path, required=True, help="a new (or empty) folder")
    parser.add_argument("--shard-rows", type=int, default=50_000)
    parser.add_argument("--seed", type=int, default=13)
    parser.add_argument("--split", choices=["train", "test"], default="test")
    parser.add_argument("--labels", action="store_true", help="keep RAGTruth's label")
    parser.add_argument("--new-sources", default="", help="comma-separated new source names")
    parser.add_argument("--new-source-share", type=float, default=0.0)
    parser.add_argument("--jsonl", action="store_true", help="one traffic.jsonl, not shards")
    parser.add_argument(
        "--single-file",
        action="store_true",
        help="one traffic.parquet (a row group per shard), for readers of one file",
    )
    args = parser.parse_args(argv)
    if args.out.exists() and any(args.out.iterdir()):
        parser.error(f"{args.out} is not empty: traffic is never written over other files")
    new_sources = tuple(s for s in args.new_sources.split(",") if s)
    pool = load_ragtruth(split=args.split, data_dir=str(data_dir())).frame
    args.out.mkdir(parents=True, exist_ok=True)
    shards = traffic_shards(
        pool,
        args.rows,
        args.shard_rows,
        args.seed,
        labels=args.labels,
        new_sources=new_sources,
        new_source_share=args.new_source_share,
    )
    written, writer = 0, None
    for shard, frame in shards:
        if args.single_file:
            table = pa.Table.from_pandas(frame, preserve_index=False)
            writer = writer or pq.ParquetWriter(args.out / "traffic.parquet", table.schema)
            writer.write_table(table)
        elif args.jsonl:
            with open(args.out / "traffic.jsonl", "a", encoding="utf-8") as handle:
                for record in frame.to_dict("records"):
                    handle.write(json.dumps(record, ensure_ascii=False) + "\n")
        else:
            frame.to_parquet(args.out / f"part-{shard:05d}.parquet", index=False)
        written += len(frame)
        print(f"\r{written:,} / {args.rows:,} rows", end="", file=sys.stderr, flush=True)
    if writer is not None:
        writer.close()
    print(file=sys.stderr)
    (args.out / "traffic.json").write_text(
        json.dumps(
            {
                "rows": written,
                "seed": args.seed,
                "split": args.split,
                "pool_rows": len(pool),
                "labels": args.labels,
                "new_sources": list(new_sources),
                "new_source_share": args.new_source_share,
                "shard_rows": args.shard_rows,
                "format": "jsonl" if args.jsonl else "parquet",
                "single_file": args.single_file,
            },
            indent=2,
            sort_keys=True,
        )
        + "\n"
    )
    print(f"wrote {written:,} rows to {args.out}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
