"""Where a trained sentence-recipe detector fails: an error analysis on its validation rows.

Why a script: issue 43 asks what the detector misses before anything is changed, by task,
by RAGTruth's hallucination type (``Evident Conflict``, ``Evident Baseless Info``, ``Subtle
...``), by span length and by the sentence's position in the answer, and what the model saw
for its worst misses (the evidence chosen, how much of the context the window left out).
It reads the same context-grouped validation rows training chose the weights on
(`runner.training.training_rows.grouped_split` and `sample_rows`, seed 13, share 0.1, 600
rows); RAGTruth test is never read.

    python scripts/detector_errors.py --model models:/ragtruth_detector@champion \
        --out artifacts/detector_errors

Writes ``errors.json`` (every measure) and ``errors.md`` (the tables and the worst misses,
each with the input the model saw, decoded) into ``--out``.
"""

from __future__ import annotations

import argparse
import json
from pathlib import Path

import numpy as np
import pandas as pd

TYPES = ("Evident Conflict", "Evident Baseless Info", "Subtle Conflict", "Subtle Baseless Info")
LENGTH_BINS = ((0, 40, "< 40 chars"), (40, 100, "40-99 chars"), (100, 10**9, ">= 100 chars"))


def _auroc(y: np.ndarray, s: np.ndarray) -> float | None:
    from sklearn.metrics import roc_auc_score

    return float(roc_auc_score(y, s)) if len(set(y.tolist())) == 2 else None


def _num(value: float | None) -> str:
    return "" if value is None else f"{value:.3f}"


def sentence_table(frame: pd.DataFrame, probs: np.ndarray, threshold: float) -> list[dict]:
    """Per slice of positive sentences: count, recall at `threshold`, AUROC against every
    negative sentence of the same task (a slice's skill, not its share of the base rate)."""
    rows = []
    neg = frame["label"] == 0

    def add(name: str, positive: pd.Series) -> None:
        for task in ("all", *sorted(frame["task"].unique())):
            in_task = frame["task"] == task if task != "all" else pd.Series(True, frame.index)
            pos = positive & in_task
            if pos.sum() < 5:
                continue
            keep = (pos | (neg & in_task)).to_numpy()
            rows.append(
                {
                    "slice": name,
                    "task": task,
                    "positives": int(pos.sum()),
                    "recall": float((probs[pos.to_numpy()] >= threshold).mean()),
                    "auroc": _auroc(frame["label"].to_numpy()[keep], probs[keep]),
                }
            )

    pos = frame["label"] == 1
    add("every positive sentence", pos)
    for kind in TYPES:
        add(f"type: {kind}", pos & frame["types"].apply(lambda t, k=kind: k in t))
    for lo, hi, name in LENGTH_BINS:
        add(f"span: {name}", pos & frame["span_chars"].between(lo, hi - 1))
    for where in ("first", "middle", "last", "only"):
        add(f"position: {where}", pos & (frame["position"] == where))
    return rows


def pair_frame(pairs, rows: pd.DataFrame, spans_by_row: list[list[dict]]) -> pd.DataFrame:
    """One row per sentence pair: task, label, the gold types it overlaps, where it sits."""
    records = []
    owners = pairs.example_of
    counts = np.bincount(owners, minlength=len(rows))
    seen = np.zeros(len(rows), dtype=int)
    for k, (owner, (start, end)) in enumerate(zip(owners, pairs.spans, strict=True)):
        hits = [s for s in spans_by_row[owner] if s["start"] < end and start < s["end"]]
        index = seen[owner]
        seen[owner] += 1
        n = counts[owner]
        position = (
            "only" if n == 1 else "first" if index == 0 else "last" if index == n - 1 else "middle"
        )
        records.append(
            {
                "pair": k,
                "row": int(owner),
                "task": rows["task"].iloc[owner],
                "label": int(pairs.labels[k]),
                "types": sorted({s.get("label_type", "") for s in hits}),
                "span_chars": max((s["end"] - s["start"] for s in hits), default=0),
                "span_text": " | ".join(s.get("text", "") for s in hits),
                "position": position,
            }
        )
    return pd.DataFrame.from_records(records)


def main() -> None:
    from transformers import AutoModelForSequenceClassification, AutoTokenizer

    from runner.data import load_ragtruth
    from runner.text import content_tokens, tokenize
    from runner.training import (
        by_task,
        grouped_split,
        labelled_pairs,
        predict_pair_probs,
        sample_rows,
    )
    from runner.verifiers import InputRule, example_risks, resolve_source

    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--model", default="models:/ragtruth_detector@champion")
    parser.add_argument("--out", default="artifacts/detector_errors")
    parser.add_argument("--seed", type=int, default=13)
    parser.add_argument("--val-rows", type=int, default=600)
    parser.add_argument("--misses", type=int, default=12)
    args = parser.parse_args()

    folder = resolve_source(args.model)
    card = json.loads((Path(folder) / "detector.json").read_text())
    if card.get("recipe") != "sentence":
        raise SystemExit(f"error: {args.model} is not a sentence-recipe detector")
    rule = InputRule(**card["input_rule"])
    threshold = float(card["threshold"])
    tokenizer = AutoTokenizer.from_pretrained(folder)
    model = AutoModelForSequenceClassification.from_pretrained(folder)

    frame = load_ragtruth(split="train").frame
    _, val_part = grouped_split(frame, 0.1, args.seed)
    rows = sample_rows(val_part, args.val_rows, args.seed, 3).reset_index(drop=True)
    pairs = labelled_pairs(tokenizer, rule, rows)
    probs = predict_pair_probs(model, pairs, tokenizer.pad_token_id, "cpu", 32)
    sentences = pair_frame(pairs, rows, [list(s) for s in rows["spans"]])
    # the pair threshold: the example threshold applies to the aggregate, which for `max`
    # is a sentence's own probability
    table = sentence_table(sentences, probs, threshold)
    risk = example_risks(probs, pairs.example_of, len(rows), card.get("aggregate", "max"))

    ctx_tokens = [
        len(x) for x in tokenizer(rows["context"].tolist(), add_special_tokens=False)["input_ids"]
    ]
    misses = []
    positives = np.flatnonzero(sentences["label"].to_numpy() == 1)
    for k in positives[np.argsort(probs[positives], kind="stable")][: args.misses]:
        owner = int(pairs.example_of[k])
        start, end = pairs.spans[k]
        seen = tokenizer.decode(pairs.encoded.input_ids[k], skip_special_tokens=False)
        premise = seen.split("[SEP]")[0].replace("[CLS]", "").strip()
        span_terms = set(content_tokens(tokenize(sentences["span_text"].iloc[k].lower())))
        seen_terms = set(content_tokens(tokenize(premise.lower())))
        misses.append(
            {
                "example_id": str(rows["example_id"].iloc[owner]),
                "task": rows["task"].iloc[owner],
                "probability": float(probs[k]),
                "types": sentences["types"].iloc[k],
                "sentence": rows["answer"].iloc[owner][start:end],
                "gold_span": sentences["span_text"].iloc[k],
                "evidence_seen": premise,
                "input_tokens": len(pairs.encoded.input_ids[k]),
                "context_tokens": ctx_tokens[owner],
                "span_words_in_evidence": (
                    len(span_terms & seen_terms) / len(span_terms) if span_terms else None
                ),
            }
        )
    out = {
        "model": args.model,
        "folder": folder,
        "input_rule": rule.to_dict(),
        "threshold": threshold,
        "rows": len(rows),
        "pairs": len(probs),
        "by_task": by_task(rows, risk),
        "sentences": table,
        "worst_misses": misses,
    }
    target = Path(args.out)
    target.mkdir(parents=True, exist_ok=True)
    (target / "errors.json").write_text(json.dumps(out, indent=1, sort_keys=True) + "\n")
    lines = [
        f"# Detector errors: {args.model} on {len(rows)} validation rows ({len(probs)} sentences)",
        "",
        "| task | AUROC | AP | rows |",
        "|---|---|---|---|",
        *(
            f"| {t} | {_num(v['auroc'])} | {_num(v['ap'])} | {v['rows']} |"
            for t, v in out["by_task"].items()
        ),
        "",
        f"Positive sentences by slice: recall at the threshold {threshold:.3f}, AUROC against "
        "the task's negative sentences.",
        "",
        "| slice | task | positives | recall | AUROC |",
        "|---|---|---|---|---|",
        *(
            f"| {r['slice']} | {r['task']} | {r['positives']} | {r['recall']:.3f} | "
            f"{_num(r['auroc'])} |"
            for r in table
        ),
        "",
        "## The worst misses (lowest probability among positive sentences)",
    ]
    for m in misses:
        lines += [
            "",
            f"- **{m['example_id']}** ({m['task']}, {', '.join(m['types'])}), "
            f"p = {m['probability']:.3f}; "
            f"input {m['input_tokens']} tokens of a {m['context_tokens']}-token context; "
            f"span words in the evidence: {m['span_words_in_evidence']}",
            f"  - sentence: {m['sentence']!r}",
            f"  - gold span: {m['gold_span']!r}",
            f"  - evidence the model saw: {m['evidence_seen'][:600]!r}",
        ]
    (target / "errors.md").write_text("\n".join(lines) + "\n")
    print("\n".join(lines[: 8 + len(out["by_task"]) + len(table)]))
    print(f"wrote {target / 'errors.md'}")


if __name__ == "__main__":
    main()
