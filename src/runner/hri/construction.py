"""Is a response outcome true by construction? Test it against the claim labels.

Why: an HRI is computed from claim labels. When the response outcome a calibration set
gives was itself *defined* from those same labels (Factbench.jsonl: a response is
non-factual exactly when one of its claims is not true), every monotone aggregation ranks
the responses perfectly and AUROC = 1 measures nothing about the index. Which collections
are like that is decided here from the data, not from a list of names.

The rule. A set of responses has its outcome *determined by its labels* when both hold:

1. **Function of the labels.** Responses with the same multiset of claim labels (each
   claim's label names, criticality ignored) never have different outcomes.
2. **A severity-threshold rule reproduces it.** For some contribution level c > 0 and
   some k ≥ 1, the outcome is exactly "at least k claims carry a label whose HRI
   contribution is ≥ c" on every response (a claim counts when any of its labels does).
   c ranges over the contributions of the labels present, k over 1 … the most claims of a
   response. This family holds the rules a data set is built with — "any claim not true"
   (c = the smallest positive contribution, k = 1), "any claim false" (c = 1, the
   CONTRADICTED level), "two or more unsupported claims" — and, for k = 1, exactly the
   rules under which the ``max_claim`` aggregation ranks perfectly by definition. Rules
   are kept monotone in severity on purpose: a search over arbitrary label subsets would
   find a perfect rule by chance on small sets.

Condition 1 alone is vacuous on small sets where every response has its own label
multiset, so both must hold. Both are reported, with the share of responses the best
rule reproduces, so a near miss (e.g. 85 of 92) is visible.
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any

import numpy as np

from runner.data import Response


@dataclass(frozen=True)
class LabelRule:
    """``outcome = 1`` when at least `k` claims carry a label of contribution ≥ `level`."""

    level: float
    labels: tuple[str, ...]
    k: int

    def describe(self) -> str:
        """Readable form, e.g. ``>=1 claim with contribution >= 0.75 {CONTRADICTED, ...}``."""
        plural = "s" if self.k > 1 else ""
        return (
            f">={self.k} claim{plural} with contribution >= {self.level:g} "
            f"{{{', '.join(self.labels)}}}"
        )


@dataclass(frozen=True)
class ConstructionTest:
    """Outcome of the by-construction test on one set of responses.

    Attributes
    ----------
    responses : int
    label_sets : int
        Distinct claim-label multisets.
    conflicting_sets : int
        Multisets shared by responses with different outcomes (0 = a function of labels).
    best_rule : LabelRule or None
        The threshold rule that reproduces most outcomes (ties: the most severe level,
        then the smallest k); None when no claim has a label of positive contribution.
    best_rule_agreement : float
        Share of responses whose outcome the best rule reproduces.
    """

    responses: int
    label_sets: int
    conflicting_sets: int
    best_rule: LabelRule | None
    best_rule_agreement: float

    @property
    def determined(self) -> bool:
        """True when the outcome is a function of the labels and a simple rule gives it."""
        return self.conflicting_sets == 0 and self.best_rule_agreement == 1.0

    def to_dict(self) -> dict[str, Any]:
        """JSON-serialisable form."""
        return {
            "responses": self.responses,
            "label_sets": self.label_sets,
            "conflicting_sets": self.conflicting_sets,
            "best_rule": None if self.best_rule is None else self.best_rule.describe(),
            "best_rule_agreement": self.best_rule_agreement,
            "determined": self.determined,
        }


def _claim_labels(response: Response) -> list[frozenset[str]]:
    return [frozenset(c.label_names()) for c in response.claims]


def outcome_construction(
    responses: Sequence[Response], contributions: Mapping[str, float]
) -> ConstructionTest:
    """Test whether the outcomes of `responses` are determined by their claim labels.

    Parameters
    ----------
    responses : sequence of Response
        Each with an outcome (0/1).
    contributions : mapping label -> float
        The HRI contribution m of every label (`runner.hri.config.HRIConfig`); the
        severity order of the threshold rules.

    Returns
    -------
    ConstructionTest

    Raises
    ------
    ValueError
        No responses, a response without an outcome, or a label without a contribution.
    """
    if not responses:
        raise ValueError("no responses to test")
    y = []
    for r in responses:
        if r.outcome is None:
            raise ValueError(f"response {r.response_id!r} has no outcome")
        y.append(int(r.outcome))
    outcome = np.array(y, dtype=np.int64)
    claims = [_claim_labels(r) for r in responses]
    groups: dict[tuple, set[int]] = {}
    for labels, o in zip(claims, y, strict=True):
        key = tuple(sorted(Counter(name for s in labels for name in sorted(s)).items()))
        groups.setdefault(key, set()).add(o)
    conflicting = sum(len(v) > 1 for v in groups.values())

    present = sorted({name for cs in claims for s in cs for name in s})
    unknown = [name for name in present if name not in contributions]
    if unknown:
        raise ValueError(f"labels without a contribution: {unknown}")
    worst = [[max(contributions[name] for name in s) if s else 0.0 for s in cs] for cs in claims]
    levels = sorted({contributions[name] for name in present if contributions[name] > 0})
    best: LabelRule | None = None
    best_hits = -1
    most = max(len(cs) for cs in claims)
    for level in reversed(levels):  # most severe first: ties keep the narrowest rule
        counts = np.array([sum(m >= level for m in ws) for ws in worst])
        labels = tuple(name for name in present if contributions[name] >= level)
        for k in range(1, most + 1):
            hits = int(((counts >= k).astype(np.int64) == outcome).sum())
            if hits > best_hits:
                best, best_hits = LabelRule(float(level), labels, k), hits
    return ConstructionTest(
        responses=len(responses),
        label_sets=len(groups),
        conflicting_sets=conflicting,
        best_rule=best,
        best_rule_agreement=(best_hits / len(responses)) if best is not None else 0.0,
    )
