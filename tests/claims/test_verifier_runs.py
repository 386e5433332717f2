"""Running the verifiers over units: per-claim verdicts, records and the answer cache."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pandas as pd

from runner.claims.judges import TransformersJudge
from runner.claims.judges.base import Verdict
from runner.claims.verifier_runs import answer_cache, run_judge


def verdict(label: str, abstained: bool = False, calls: int = 1) -> Verdict:
    return Verdict(
        label, abstained, None if abstained else label, False, "", calls=calls, seconds=0.5
    )


def test_unit_verdicts_combine_per_claim_with_their_calls_and_records(tmp_path: Path):
    judge = TransformersJudge(name="j", family="f", model=str(tmp_path), seed=13)  # not loaded
    units = pd.DataFrame({"unit_id": ["a", "b/1", "b/2"], "claim_id": ["a", "b", "b"]})
    got = run_judge(
        "j",
        judge,
        units,
        ["a", "b"],
        [verdict("red"), verdict("yellow", abstained=True, calls=2), verdict("green")],
    )
    assert got.labels.tolist() == ["red", "green"]  # b: its valid green chunk wins
    assert got.abstained.tolist() == [False, False]
    assert got.calls.tolist() == [1, 3] and got.seconds.tolist() == [0.5, 1.0]
    assert [r["unit_id"] for r in got.unit_records] == ["a", "b/1", "b/2"]
    assert all("seconds" not in r for r in got.unit_records)  # records stay run-independent
    assert got.describe == judge.describe() and got.describe["family"] == "f"
    assert isinstance(got.labels, np.ndarray)


def test_the_answer_cache_lives_under_the_cache_dir_unless_disabled(tmp_path: Path):
    _, info = answer_cache(True, str(tmp_path))
    assert info == {"enabled": True, "folder": str(tmp_path / "judges")}
    assert answer_cache(False, str(tmp_path))[1] == {"enabled": False, "folder": None}
    assert answer_cache(True, None)[1]["folder"] is None  # memory only
