"""The flag task's metrics: a claim is flagged when a system says yellow or red.

Why a task of its own: a claim verifier in a RAG pipeline decides which claims a person
checks, so what matters is how many wrong claims it catches (true alarms) and how many
right claims it sends for nothing (false alarms). Abstentions are routed to yellow, so they
are flags; `decided_metrics` shows the same numbers on the claims a system did decide.
"""

from __future__ import annotations

from itertools import combinations as subsets

import numpy as np

from runner.evaluation import auroc

MOSTLY_ABSTAINED = 0.5
"""A system whose abstained share of claims exceeds this is marked in tables and figures."""

MARK_COLUMN = "mostly abstained (> 50 %)"


def flag_metrics(flagged: np.ndarray, positive: np.ndarray) -> dict[str, float | None]:
    """Flags, true / false alarms, precision, recall and F1 of the flag task.

    Precision is None (n/a) without flags, recall None without positives; F1 is
    2TP / (2TP + FP + FN), None when there are neither flags nor positives.
    """
    flagged = np.asarray(flagged, dtype=bool)
    positive = np.asarray(positive, dtype=bool)
    tp = int((flagged & positive).sum())
    fp = int((flagged & ~positive).sum())
    fn = int((~flagged & positive).sum())
    denominator = 2 * tp + fp + fn
    return {
        "flags": float(tp + fp),
        "true_alarms": float(tp),
        "false_alarms": float(fp),
        "precision": tp / (tp + fp) if tp + fp else None,
        "recall": tp / (tp + fn) if tp + fn else None,
        "f1": 2 * tp / denominator if denominator else None,
    }


def decided_metrics(
    flagged: np.ndarray, positive: np.ndarray, abstained: np.ndarray
) -> dict[str, float | None]:
    """Decided share and the flag metrics on the claims a system decided.

    An abstention is routed to yellow, so it counts as a flag in `flag_metrics`; these
    columns show what the system scores where it actually gave a verdict, and whether it
    abstained on more than half of the claims (`MOSTLY_ABSTAINED`; 1 = marked).
    """
    abstained = np.asarray(abstained, dtype=bool)
    n = len(abstained)
    decided = ~abstained
    metrics = flag_metrics(np.asarray(flagged)[decided], np.asarray(positive)[decided])
    share = float(decided.sum()) / n if n else None
    return {
        "decided share": share,
        "precision (decided)": metrics["precision"],
        "recall (decided)": metrics["recall"],
        "f1 (decided)": metrics["f1"],
        MARK_COLUMN: float(share is not None and 1.0 - share > MOSTLY_ABSTAINED),
    }


def safe_auroc(positive: np.ndarray, score: np.ndarray) -> float | None:
    """AUROC of ``score`` for ``positive``; None where only one class is present."""
    if positive.all() or not positive.any():
        return None
    return auroc(positive.astype(int), score)


def venn_regions(members: dict[str, np.ndarray]) -> list[tuple[str, int]]:
    """Claims in each exact-membership region of boolean sets (plus ``none``).

    Parameters
    ----------
    members : dict of name -> bool array
        One set per judge, over the same claims (e.g. the claims it caught).

    Returns
    -------
    list of (region, count)
        Regions ``A``, ``B``, ``A & B``, ... for every non-empty subset (by size, then
        configuration order), then ``none`` (in no set).
    """
    names = list(members)
    matrix = (
        np.vstack([np.asarray(members[n], dtype=bool) for n in names])
        if names
        else np.zeros((0, 0), bool)
    )
    out = []
    for size in range(1, len(names) + 1):
        for subset in subsets(range(len(names)), size):
            inside = np.ones(matrix.shape[1], dtype=bool)
            for i in range(len(names)):
                inside &= matrix[i] if i in subset else ~matrix[i]
            out.append((" & ".join(names[i] for i in subset), int(inside.sum())))
    out.append(("none", int((~matrix.any(axis=0)).sum()) if names else 0))
    return out
