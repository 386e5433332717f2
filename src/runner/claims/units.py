"""Claims and their judged units: one row per claim, or several evidence chunks per claim.

Why units: WiCE's oracle files give a claim several evidence chunks, each judged on its own;
a claim is then supported when any chunk supports it (WiCE's max over chunks). Every
verifier judges units; these functions say how unit verdicts become one verdict per claim.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

import numpy as np
import pandas as pd

from runner.data import GREEN, LABELS, SEVERITY
from runner.errors import DataError

CLAIM_FRAME_COLUMNS = ("claim_id", "question", "claim", "passages", "label", "category")


@dataclass
class ClaimUnits:
    """The claims of a run and the units the verifiers judge.

    Attributes
    ----------
    claims : DataFrame
        One row per claim, in data order (index 0..n-1).
    units : DataFrame
        One row per judged unit (``unit_id``, ``claim_id``, ``question``, ``claim``,
        ``passages``), in data order.
    unit_claim : ndarray of int
        Position in ``claims`` of each unit's claim.
    """

    claims: pd.DataFrame
    units: pd.DataFrame
    unit_claim: np.ndarray

    @property
    def claim_ids(self) -> list[str]:
        return self.claims["claim_id"].tolist()

    def per_claim_min(self, values: np.ndarray) -> np.ndarray:
        """Each claim's minimum over its units (the most supported unit's score)."""
        out = np.full(len(self.claims), np.inf)
        np.minimum.at(out, self.unit_claim, np.asarray(values, dtype=np.float64))
        return out


def unit_frame(frame: pd.DataFrame) -> pd.DataFrame:
    """A claim frame with a ``unit_id`` per row (the claim id where rows are whole claims)."""
    for column in CLAIM_FRAME_COLUMNS:
        if column not in frame.columns:
            raise DataError(f"not a claim frame: column {column!r} missing", field=column)
    units = frame.copy()
    if "unit_id" not in units.columns:
        units["unit_id"] = units["claim_id"]
    return units


def claim_units(units: pd.DataFrame, claims: pd.DataFrame) -> ClaimUnits:
    """The units of the chosen ``claims`` (one row per claim, e.g. from a sample)."""
    claims = claims.reset_index(drop=True)
    claim_ids = claims["claim_id"].tolist()
    units = units[units["claim_id"].isin(set(claim_ids))].reset_index(drop=True)
    index_of = {c: i for i, c in enumerate(claim_ids)}
    return ClaimUnits(claims, units, units["claim_id"].map(index_of).to_numpy())


def combine_units(labels: Sequence[str], abstained: Sequence[bool]) -> tuple[str, bool]:
    """One claim's verdict from its units' verdicts (WiCE's max over chunks).

    The most supported *valid* verdict wins. An abstained unit counts as yellow, so it
    never makes a claim green; the claim is marked abstained when any unit abstained and
    no valid unit said green (the abstention then bears on the label).

    Parameters
    ----------
    labels : sequence of str
        Unit labels (yellow where the unit abstained).
    abstained : sequence of bool

    Returns
    -------
    (label, abstained)
    """
    codes = [SEVERITY[lab] for lab in labels]
    if any(c == 0 and not a for c, a in zip(codes, abstained, strict=True)):
        return GREEN, False
    best = min(codes)
    return LABELS[best], bool(any(abstained))
