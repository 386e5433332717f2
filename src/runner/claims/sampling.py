"""Which claims a claim-verification run judges: the whole set, or a seeded, labelled sample.

Why here: an LLM judge costs about a minute a claim on a CPU, so a quick default run on a
public benchmark judges a handful of claims; a user's own claim file is read whole. The
sample keeps each label's share and is named in every table title, so a number from a
sample is never mistaken for one on the whole set.
"""

from __future__ import annotations

from typing import Any

import numpy as np
import pandas as pd

from runner.data import LABELS, SEVERITY
from runner.errors import ConfigError

LIMIT_STRATEGIES = ("stratified", "head")

QUICK_LIMIT = 6
"""Claims of a public benchmark judged under ``limit: auto`` (a quick default run)."""


def resolve_limit(limit: Any, public_benchmark: bool) -> int | None:
    """The number of claims to judge: ``auto`` -> `QUICK_LIMIT` for a public set, else all.

    Parameters
    ----------
    limit : int, None or "auto"
        ``study.params.limit``.
    public_benchmark : bool
        Whether the loaded data is a shipped public benchmark (the loaders say so in
        ``LoadedData.info["public_benchmark"]``); a user's claim file is read whole.
    """
    if limit == "auto":
        return QUICK_LIMIT if public_benchmark else None
    return limit


def label_quota(counts: pd.Series, limit: int) -> dict[str, int]:
    """Claims to draw per label: each label's share of ``limit``, at least one where possible.

    Not `runner.evaluation.splits._allocate`: that one hands out the remainders first and
    then takes the forced minimum from the largest class; this one forces the minimum
    first and then evens out against the exact quotas (ties: over-allocated severe labels
    give back first, under-allocated mild labels gain first). The two differ on real data
    (WiCE test, ``limit=5``: 1/3/1 green/yellow/red here, 2/2/1 there), so sharing one
    would move published samples.

    Parameters
    ----------
    counts : Series
        Claims per label (index: labels).
    limit : int
        Claims to draw in total (below the number of claims).
    """
    present = [lab for lab in LABELS if lab in counts.index]
    total = int(counts[present].sum())
    quota = {lab: limit * counts[lab] / total for lab in present}
    take = {lab: int(np.floor(q)) for lab, q in quota.items()}
    if limit >= len(present):
        for lab in present:
            take[lab] = max(take[lab], 1)
    while sum(take.values()) > limit:
        lab = max(present, key=lambda x: (take[x] - quota[x], SEVERITY[x]))
        take[lab] -= 1
    while sum(take.values()) < limit:
        lab = max(present, key=lambda x: (quota[x] - take[x], -SEVERITY[x]))
        take[lab] += 1
    return take


def select_claims(
    claims: pd.DataFrame, limit: int | None, strategy: str, seed: int
) -> pd.DataFrame:
    """The claims a run judges, in data order.

    Parameters
    ----------
    claims : DataFrame
        One row per claim (``claim_id``, ``label``).
    limit : int or None
        Maximum number of claims; None keeps all.
    strategy : str
        ``stratified`` (seeded, each label's share kept by `label_quota`) or ``head``.
    seed : int
        Seed of the stratified sample.

    Returns
    -------
    DataFrame
        The selected rows of ``claims``, in their original order.
    """
    if strategy not in LIMIT_STRATEGIES:
        raise ConfigError(f"limit_strategy must be one of {LIMIT_STRATEGIES}, got {strategy!r}")
    if limit is None or limit >= len(claims):
        return claims
    if limit < 1:
        raise ConfigError(f"limit must be a positive integer or null, got {limit}")
    if strategy == "head":
        return claims.iloc[:limit]
    take = label_quota(claims["label"].value_counts(), limit)
    rng = np.random.default_rng(seed)
    keep: list[int] = []
    for lab, n in take.items():
        positions = np.flatnonzero(claims["label"].to_numpy() == lab)
        keep.extend(rng.choice(positions, size=min(n, len(positions)), replace=False))
    return claims.iloc[sorted(int(k) for k in keep)]


def sampling_note(judged: int, available: int, strategy: str, seed: int) -> str:
    """``""`` when every claim is judged, else what was sampled (for titles and the log)."""
    if judged >= available:
        return ""
    how = f"stratified by label, seed {seed}" if strategy == "stratified" else "first in file"
    return f"sample of {judged} of {available} claims ({how})"
