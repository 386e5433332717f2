"""scripts/similarity_gate_eval.py: its fit and test samples are whole context groups (its
validation rows are the detector's own: it calls runner.verifiers.sample_rows)."""

from __future__ import annotations

import pandas as pd
from tests.conftest import load_script

script = load_script("similarity_gate_eval")


def frame(groups: int, per_group: int) -> pd.DataFrame:
    return pd.DataFrame(
        {
            "group_id": [f"g{g}" for g in range(groups) for _ in range(per_group)],
            "row": range(groups * per_group),
        }
    )


def test_group_sample_takes_whole_groups_until_enough_rows():
    rows = frame(40, 6)
    got = script.group_sample(rows, 50, 13, 2)
    sizes = got.groupby("group_id").size()
    assert (sizes == 6).all()  # whole groups only
    assert 50 <= len(got) < 56  # stops at the first group that reaches the count
    pd.testing.assert_frame_equal(got, script.group_sample(rows, 50, 13, 2))
    assert set(got["group_id"]) != set(script.group_sample(rows, 50, 14, 2)["group_id"])
    assert len(script.group_sample(rows, None, 13, 4)) == len(rows)
