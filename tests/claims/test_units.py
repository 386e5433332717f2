"""Claims and their judged units: WiCE's several evidence chunks per claim."""

from __future__ import annotations

import numpy as np
import pandas as pd
import pytest

from runner.claims.units import claim_units, combine_units, unit_frame
from runner.errors import DataError


def test_units_combine_as_the_most_supported_valid_verdict():
    assert combine_units(["red", "green", "yellow"], [False, False, False]) == ("green", False)
    # An abstained unit (yellow) never makes a claim green, and marks it abstained.
    assert combine_units(["red", "yellow"], [False, True]) == ("yellow", True)
    assert combine_units(["green", "yellow"], [False, True]) == ("green", False)
    assert combine_units(["yellow"], [True]) == ("yellow", True)
    assert combine_units(["red", "red"], [False, False]) == ("red", False)


def chunked() -> pd.DataFrame:
    """Three claims; the second has three evidence chunks (units)."""
    return pd.DataFrame(
        {
            "claim_id": ["a", "b", "b", "b", "c"],
            "unit_id": ["a", "b/1", "b/2", "b/3", "c"],
            "question": [""] * 5,
            "claim": ["A.", "B.", "B.", "B.", "C."],
            "passages": [["p"]] * 5,
            "label": ["green", "red", "red", "red", "yellow"],
            "category": [""] * 5,
        }
    )


def test_a_claim_takes_its_most_supported_units_score():
    units = unit_frame(chunked())
    cu = claim_units(units, units.drop_duplicates("claim_id").iloc[[1, 2]])
    assert cu.claim_ids == ["b", "c"] and list(cu.claims.index) == [0, 1]
    assert cu.units["unit_id"].tolist() == ["b/1", "b/2", "b/3", "c"]
    assert cu.unit_claim.tolist() == [0, 0, 0, 1]
    assert cu.per_claim_min(np.array([0.9, 0.2, 0.5, 0.7])).tolist() == [0.2, 0.7]


def test_whole_claims_are_their_own_units_and_other_frames_are_refused():
    whole = unit_frame(chunked().drop(columns="unit_id"))
    assert whole["unit_id"].tolist() == whole["claim_id"].tolist()
    with pytest.raises(DataError, match="not a claim frame"):
        unit_frame(pd.DataFrame({"example_id": ["e"]}))
