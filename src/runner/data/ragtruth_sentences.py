"""RAGTruth train answer sentences as labelled claims, for a claim gate fitted off WiCE.

Why: a claim gate fitted on the 349 WiCE dev claims does not carry over to Factcheck-Bench
(docs/detector.md, "S1 as a claim gate"). RAGTruth train holds ~125,000 answer sentences
with span labels, none from WiCE or Factcheck-Bench, checked against their own context, the
shape of a claim against its evidence. A sentence is labelled 1 when it overlaps a gold
hallucination span by one character (the detector's sentence label).
"""

from __future__ import annotations

import numpy as np
import pandas as pd

from runner.data.ragtruth import load_ragtruth
from runner.text import split_sentences


def _sentence_ranges(answer: str) -> list[tuple[int, int]]:
    ranges, cursor = [], 0
    for piece in split_sentences(answer):
        start = answer.find(piece, cursor)
        ranges.append((start, start + len(piece)))
        cursor = start + len(piece)
    return ranges or [(0, len(answer))]


def ragtruth_sentence_claims(
    n: int, seed: int, data_dir: str | None = None
) -> tuple[pd.DataFrame, np.ndarray]:
    """`n` RAGTruth train answer sentences (a seeded sample, in corpus order) as rows
    (``question``, ``context``, ``answer`` = the sentence) and their 0/1 labels."""
    frame = load_ragtruth(split="train", data_dir=data_dir).frame
    records, labels = [], []
    for q, c, a, spans in zip(
        frame["question"], frame["context"], frame["answer"], frame["spans"], strict=True
    ):
        gold = [(int(s["start"]), int(s["end"])) for s in spans]  # checked by the loader
        for start, end in _sentence_ranges(a):
            records.append((q, c, a[start:end]))
            labels.append(int(any(start < g_end and g_start < end for g_start, g_end in gold)))
    rng = np.random.default_rng([seed, 43])
    pick = np.sort(rng.choice(len(records), min(n, len(records)), replace=False))
    rows = pd.DataFrame([records[i] for i in pick], columns=["question", "context", "answer"])
    return rows, np.asarray(labels, dtype=np.int64)[pick]
