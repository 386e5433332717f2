"""Longest common subsequence of two token sequences, bit-parallel.

ROUGE-L needs the LCS of an answer against a context hundreds of tokens long, for thousands
of answers. The textbook dynamic programme (what ``rouge_score`` runs) costs |a|·|b| Python
steps; the bit-parallel algorithm of Allison & Dix (1986) in the form of Hyyrö (2004) keeps
one row of the table as the bits of a Python integer and costs |a| big-integer operations.

Row encoding: bit j of ``V`` is 1 where the DP row does *not* step up at column j; the LCS
length is the number of 0 bits. For each token of `a` with match mask ``M`` (bit j set where
``b[j]`` equals it): ``U = V & M; V = (V + U) | (V - U)``. Carries past bit |b| never flow
back down, so masking once at the end suffices.
"""

from __future__ import annotations

from collections.abc import Hashable, Sequence
from dataclasses import dataclass


@dataclass(frozen=True)
class PositionMasks:
    """Where each token occurs in a sequence, as bitmasks: reusable across many LCS calls.

    Attributes
    ----------
    masks : dict
        Token -> integer whose bit j is set when the sequence's j-th item is that token.
    length : int
        Length of the sequence.
    """

    masks: dict[Hashable, int]
    length: int

    @classmethod
    def of(cls, sequence: Sequence[Hashable]) -> PositionMasks:
        """Build the masks of `sequence` (one pass)."""
        masks: dict[Hashable, int] = {}
        for j, token in enumerate(sequence):
            masks[token] = masks.get(token, 0) | (1 << j)
        return cls(masks, len(sequence))


def lcs_length_masks(a: Sequence[Hashable], b: PositionMasks) -> int:
    """LCS length of `a` against a sequence given by its position masks.

    Parameters
    ----------
    a : sequence of hashable
        The sequence iterated over (cost: one step per item).
    b : PositionMasks
        The other sequence, pre-indexed with `PositionMasks.of`.

    Returns
    -------
    int
        Length of a longest common subsequence of `a` and `b`.
    """
    n = b.length
    if n == 0:
        return 0
    v = (1 << n) - 1
    # Tokens absent from `b` leave the row unchanged: look masks up in C and skip them
    # (a mask is never 0, so `filter` drops exactly the absent ones).
    for m in filter(None, map(b.masks.get, a)):
        u = v & m
        v = (v + u) | (v - u)
    return n - (v & ((1 << n) - 1)).bit_count()


def lcs_length(a: Sequence[Hashable], b: Sequence[Hashable]) -> int:
    """Length of the longest common subsequence of two token sequences.

    Parameters
    ----------
    a, b : sequence of hashable
        Token sequences (any hashable items compared with ``==``).

    Returns
    -------
    int
        The LCS length; equal to ``rouge_score.rouge_scorer._lcs_table(a, b)[-1][-1]``.
    """
    if len(a) > len(b):
        a, b = b, a  # LCS is symmetric; iterate over the shorter sequence.
    return lcs_length_masks(a, PositionMasks.of(b))
