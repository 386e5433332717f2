"""Which part of which data set a model learned from, and the rule that keeps it apart from
what a study evaluates.

Why: a claim verifier trained on WiCE is evaluated on WiCE test, and one used on
Factcheck-Bench must not have seen Factcheck-Bench. A trained model's card lists its
``trained_on`` parts (``<family>:<part>``, e.g. ``wice:dev``, ``ragtruth:train``; a bare
``<family>`` means the whole data set); a study names the part it evaluates the same way
(`evaluated_part`), and `overlapping` says which trained parts reach into it. Split-level
for data sets with disjoint released splits (WiCE dev / test / train), data-set level for
those without (every Factcheck-Bench file shares its responses and claims: any of them
counts as all of them).
"""

from __future__ import annotations

from collections.abc import Iterable
from typing import Any

FAMILIES = {
    "wice": "wice",
    "wice_oracle": "wice",
    "wice_claim_train": "wice",
    "factbench": "factcheck_bench",
    "factcheck_stance": "factcheck_bench",
    "ragtruth": "ragtruth",
    "ragtruth_train": "ragtruth",
}
"""Dataset name -> the data set it reads (another name stands for itself)."""
SPLIT_LEVEL = ("wice", "ragtruth")
"""Families whose released splits hold disjoint claims / responses."""


def family(name: str) -> str:
    """The data set a loaded data set's ``name`` reads."""
    return FAMILIES.get(str(name), str(name))


def evaluated_part(name: str, info: dict[str, Any] | None) -> str:
    """``<family>:<split>`` for a split-level family with a split, else ``<family>``."""
    fam = family(name)
    split = (info or {}).get("split")
    return f"{fam}:{split}" if fam in SPLIT_LEVEL and split else fam


def trained_parts(name: str, info: dict[str, Any] | None) -> list[str]:
    """What a model trained on this loaded data set learned from: the loader's own
    ``info["trained_on"]`` when it states it, else `evaluated_part`."""
    stated = (info or {}).get("trained_on")
    return sorted(str(p) for p in stated) if stated else [evaluated_part(name, info)]


def overlapping(trained_on: Iterable[str], evaluated: str) -> list[str]:
    """The trained parts that reach into `evaluated`: same family, and the same part or
    either side naming the whole data set."""
    fam, _, part = evaluated.partition(":")
    out = []
    for entry in trained_on:
        t_fam, _, t_part = str(entry).partition(":")
        if t_fam == fam and (not part or not t_part or t_part == part):
            out.append(str(entry))
    return out
