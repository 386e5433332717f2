"""Hallucinated sentences the train split can make: a supported sentence with one value swapped.

Why (issue 43, item 3): RAGTruth train has ~12,000 hallucinated sentences; a detector that
reads (evidence, sentence) pairs learns from more of them. A sentence the annotators left
unmarked is, by their labels, supported by its context; the same sentence with one of its
numbers, dates or names replaced by *another one from the same context* is a claim the
context does not make, and its wrong value is one a careless generator would pick (it is
in the context). Built only from the rows handed in (the train part of the grouped split,
never validation or test), seeded, and counted on the model card.

Swaps, tried in this order for each chosen sentence (the first that applies):

- ``number``: a number of the sentence (digits, with ``,`` ``.`` ``:`` ``-`` inside:
  "16:30", "4.5", "1,200") replaced by a different number of the context;
- ``name``: a capitalised word run of the sentence that the context also holds ("Santa
  Barbara", "Anne Frank"), not at the sentence's start, replaced by a different
  capitalised run of the context.

A synthetic row is ``(question, context, answer = the changed sentence, spans = the whole
sentence)``, id ``<row id>~syn<k>``, in the row's context group, so it trains exactly as a
real labelled sentence does (`runner.verifiers.sentence_pairs`).
"""

from __future__ import annotations

import re

import numpy as np
import pandas as pd

_NUMBER = re.compile(r"\d(?:[\d,.:\-]*\d)?")
_NAME = re.compile(r"\b[A-Z][a-z]+(?:\s+[A-Z][a-z]+)*")
SWAPS = ("number", "name")


def _sentences(answer: str, spans: list[dict]) -> list[tuple[int, int, bool]]:
    """Each sentence's range in `answer` and whether a gold span touches it."""
    from runner.verifiers import sentence_spans

    gold = [(int(s["start"]), int(s["end"])) for s in spans]
    return [
        (start, end, any(start < g_end and g_start < end for g_start, g_end in gold))
        for start, end in sentence_spans(answer) or [(0, len(answer))]
    ]


def swap_value(sentence: str, context: str, rng: np.random.Generator) -> tuple[str, str] | None:
    """The sentence with one number or name replaced by another from the context, and the
    swap's kind; None when neither applies."""
    numbers = {m.group() for m in _NUMBER.finditer(context)}
    found = [m for m in _NUMBER.finditer(sentence)]
    if found:
        pick = found[int(rng.integers(len(found)))]
        others = sorted(numbers - {pick.group()})
        if others:
            new = others[int(rng.integers(len(others)))]
            return sentence[: pick.start()] + new + sentence[pick.end() :], "number"
    names = {m.group() for m in _NAME.finditer(context)}
    found = [m for m in _NAME.finditer(sentence) if m.start() > 0 and m.group() in names]
    if found:
        pick = found[int(rng.integers(len(found)))]
        others = sorted(n for n in names - {pick.group()} if n not in sentence)
        if others:
            new = others[int(rng.integers(len(others)))]
            return sentence[: pick.start()] + new + sentence[pick.end() :], "name"
    return None


def positive_sentences(rows: pd.DataFrame) -> int:
    """Sentences of `rows`' answers that a gold span touches (the real positives)."""
    return sum(
        marked
        for answer, spans in zip(rows["answer"], rows["spans"], strict=True)
        for _, _, marked in _sentences(answer, spans)
    )


def synthetic_rows(rows: pd.DataFrame, n: int, seed: int) -> tuple[pd.DataFrame, dict]:
    """Up to `n` synthetic hallucinated one-sentence rows from the unmarked sentences of
    `rows` (seeded), and what was made (counts by swap kind and by task)."""
    rng = np.random.default_rng([seed, 7])
    candidates = []
    for k, (answer, spans) in enumerate(zip(rows["answer"], rows["spans"], strict=True)):
        candidates += [(k, start, end) for start, end, marked in _sentences(answer, spans)
                       if not marked]  # fmt: skip
    order = rng.permutation(len(candidates))
    made, kinds, tasks = [], {s: 0 for s in SWAPS}, {}
    for index in order:
        if len(made) >= n:
            break
        k, start, end = candidates[index]
        row = rows.iloc[k]
        sentence = str(row["answer"])[start:end]
        swapped = swap_value(sentence, str(row["context"]), rng)
        if swapped is None:
            continue
        text, kind = swapped
        kinds[kind] += 1
        tasks[str(row["task"])] = tasks.get(str(row["task"]), 0) + 1
        made.append(
            {
                **row.to_dict(),
                "example_id": f"{row['example_id']}~syn{len(made)}",
                "answer": text,
                "label": 1,
                "spans": [{"start": 0, "end": len(text), "label_type": f"synthetic {kind}"}],
            }
        )
    frame = pd.DataFrame(made, columns=rows.columns) if made else rows.iloc[:0].copy()
    card = {
        "asked": int(n),
        "made": len(made),
        "sentences_tried_from": len(candidates),
        "by_swap": kinds,
        "by_task": dict(sorted(tasks.items())),
        "rule": "a sentence no gold span touches, one number or capitalised name swapped for "
        "another of the same context; train rows only",
    }
    return frame, card
