"""How verdicts of several systems combine into one claim label.

The seed compares three designed combinations of the span detector (S1) and an LLM judge
(S2) and, after the fact, combinations across judge families. Each rule here is a pure
function of label arrays, so the study, the tests and a user's own analysis apply exactly
the same rule:

- S3 `and_rule`: both run, the worse label wins.
- S4 `vote_rule`: agreement keeps the label, any disagreement goes to human review (yellow).
- S5 `cascade_rule`: the screener sees every claim; only what it flags reaches the judge,
  whose label then stands (it may overturn the flag); unflagged claims keep the
  screener's label.
- `k_of_n`: flagged when at least k of the n members flag. Its label is the k-th most
  severe member label, so k = 1 is the union (`union_rule`: flag if any flags, worst label)
  and k = n flags only when all flag, with the mildest label.

An abstaining judge has already been routed to yellow by the verdict parser, so every rule
here counts an abstention as a flag; nothing unparsed can come out green.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from itertools import combinations

import numpy as np

from runner.data import CLAIM_CHECK, YELLOW, from_severity, severity
from runner.frames import check_labels


def _stack(members: Sequence[Sequence[str]]) -> np.ndarray:
    if len(members) == 0:
        raise ValueError("a combination needs at least one member")
    codes = [severity(m) for m in members]
    n = {len(c) for c in codes}
    if len(n) != 1:
        raise ValueError(f"members label different numbers of claims: {sorted(n)}")
    return np.vstack(codes)


def and_rule(a: Sequence[str], b: Sequence[str]) -> np.ndarray:
    """S3: the worse (more severe) of two labels, claim by claim."""
    return from_severity(_stack([a, b]).max(axis=0))


def vote_rule(a: Sequence[str], b: Sequence[str]) -> np.ndarray:
    """S4: the shared label where both agree, yellow (human review) where they differ."""
    la, lb = check_labels(a, **CLAIM_CHECK), check_labels(b, **CLAIM_CHECK)
    if len(la) != len(lb):
        raise ValueError(f"members label different numbers of claims: {len(la)} vs {len(lb)}")
    return np.where(la == lb, la, YELLOW).astype(object)


def cascade_rule(screen: Sequence[str], judge: Sequence[str]) -> np.ndarray:
    """S5: the judge's label where the screener flags, the screener's label elsewhere.

    Parameters
    ----------
    screen : sequence of str
        Screener (S1) labels for every claim.
    judge : sequence of str
        Judge labels; only positions the screener flags are read, so entries elsewhere may
        come from a full run or be placeholders (they must still be valid labels).

    Returns
    -------
    ndarray of str
    """
    ls, lj = check_labels(screen, **CLAIM_CHECK), check_labels(judge, **CLAIM_CHECK)
    if len(ls) != len(lj):
        raise ValueError(f"members label different numbers of claims: {len(ls)} vs {len(lj)}")
    return np.where(severity(ls) > 0, lj, ls).astype(object)


def k_of_n(members: Sequence[Sequence[str]], k: int) -> np.ndarray:
    """The k-th most severe member label: flagged iff at least k members flag.

    Parameters
    ----------
    members : sequence of label sequences
        One label array per member, all over the same claims.
    k : int
        1 <= k <= number of members.

    Returns
    -------
    ndarray of str
    """
    codes = _stack(members)
    n = codes.shape[0]
    if not 1 <= k <= n:
        raise ValueError(f"k must be between 1 and {n} (the number of members), got {k}")
    ordered = -np.sort(-codes, axis=0)  # most severe first
    return from_severity(ordered[k - 1])


def union_rule(members: Sequence[Sequence[str]]) -> np.ndarray:
    """Flag when any member flags; the worst member label."""
    return k_of_n(members, 1)


@dataclass(frozen=True)
class Combination:
    """One cross-family combination: which members, and how many must flag.

    Attributes
    ----------
    members : tuple of str
        Member names (judge names, plus the span detector's name when included).
    k : int
        How many members must flag.
    """

    members: tuple[str, ...]
    k: int

    @property
    def rule(self) -> str:
        """``union``, ``all-agree`` or ``k-of-n``."""
        n = len(self.members)
        if n == 1:
            return "alone"
        if self.k == 1:
            return "union"
        if self.k == n:
            return "all-agree"
        return f"{self.k}-of-{n}"

    @property
    def name(self) -> str:
        """Row label, e.g. ``union(judge_a, judge_b, S1)`` or ``judge_a alone``."""
        if len(self.members) == 1:
            return f"{self.members[0]} alone"
        return f"{self.rule}({', '.join(self.members)})"

    def apply(self, labels: dict[str, Sequence[str]]) -> np.ndarray:
        """Combined labels from each member's labels (looked up by name)."""
        missing = [m for m in self.members if m not in labels]
        if missing:
            raise KeyError(f"no labels for member(s) {missing}")
        return k_of_n([labels[m] for m in self.members], self.k)


def enumerate_combinations(
    judges: Sequence[str], span_detector: str | None = None
) -> list[Combination]:
    """Every single judge, and every k-of-n rule over 2+ judges, with and without S1.

    Parameters
    ----------
    judges : sequence of str
        Judge (family) names, in configuration order.
    span_detector : str, optional
        Name of the span detector, added as an extra member to every multi-judge subset
        (and to each single judge) when given.

    Returns
    -------
    list of Combination
        Singles first, then subsets by size; within a subset k runs from 1 (union) to n
        (all agree). Without judges, only the span detector alone (when given).
    """
    if len(set(judges)) != len(judges):
        raise ValueError(f"judge names must be unique, got {list(judges)}")
    if span_detector is not None and span_detector in judges:
        raise ValueError(f"span detector name {span_detector!r} clashes with a judge name")
    out: list[Combination] = [Combination((j,), 1) for j in judges]
    if span_detector is not None:
        out.insert(0, Combination((span_detector,), 1))
    for size in range(1, len(judges) + 1):
        for subset in combinations(judges, size):
            groups = [subset] if size > 1 else []
            if span_detector is not None:
                groups.append((*subset, span_detector))
            for members in groups:
                out.extend(Combination(tuple(members), k) for k in range(1, len(members) + 1))
    return out
