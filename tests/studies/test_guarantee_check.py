"""guarantee_check on the real RAGTruth test split: the bound, the references, the shifts."""

from __future__ import annotations

import json

import pandas as pd
import pytest
from tests.conftest import real_data_dir
from tests.conftest import run_experiment as experiment

from runner.errors import ConfigError

pytestmark = pytest.mark.slow
SPLITS = 20


@pytest.fixture(scope="module")
def checked(tmp_path_factory):
    real_data_dir()
    root = tmp_path_factory.mktemp("guarantee_check")
    out = experiment(root, "guarantee_check", "tracking=off", f"study.params.splits={SPLITS}")
    cells = out.result.cells_frame().set_index(["table", "row", "column"])["value"]
    return out, cells


def test_every_split_is_routed_in_distribution_and_under_each_task_shift(checked):
    out, _ = checked
    splits = pd.read_parquet(out.output_dir / "splits.parquet")
    scenarios = splits.groupby("scenario")["split"].nunique()
    assert scenarios["in distribution"] == SPLITS
    shifted = [s for s in scenarios.index if s.startswith("calibrated on")]
    assert sorted(s.rsplit(" ", 1)[-1] for s in shifted) == ["Data2txt", "QA", "Summary"]
    assert (scenarios[shifted] == SPLITS).all()
    meta = json.loads((out.output_dir / "guarantee_check.json").read_text())
    assert (meta["alpha"], meta["delta"], meta["shift_column"]) == (0.1, 0.1, "task")
    assert (out.output_dir / "figures").is_dir()


def test_in_distribution_the_bound_mostly_holds_and_nothing_is_flagged(checked):
    _, cells = checked
    row = "in distribution / gate (risk-controlled)"
    # 20 splits: a loose check of the rate (the 200-split figure is in the closing note)
    assert cells[("guarantee", row, "violation rate")] <= 0.3
    assert cells[("guarantee", row, "established violation rate")] <= 0.1
    assert 0.1 < cells[("guarantee", row, "accepted share")] < 0.4
    assert cells[("guarantee", row, "KS shift flag rate")] <= 0.1
    assert cells[("guarantee", row, "unseen-source flag rate")] == 0
    oracle = cells[("guarantee", "in distribution / oracle fixed threshold (hindsight)",
                    "accepted share")]  # fmt: skip
    gap = cells[("guarantee", row, "share gap to the oracle (points)")]
    assert gap == pytest.approx(100 * (oracle - cells[("guarantee", row, "accepted share")]))


def test_under_task_shift_every_violation_comes_with_the_shift_flag(checked):
    _, cells = checked
    summary = "calibrated on Data2txt + QA, routed on Summary / gate (risk-controlled)"
    # Summary's answers look safer to a gate fitted on the other tasks than they are
    assert cells[("guarantee", summary, "violation rate")] > 0.5
    assert cells[("guarantee", summary, "KS shift flag rate")] == 1
    assert cells[("goals", "shift: violations without the KS flag", "met")] == 1
    assert cells[("goals", "shift: violations without any flag", "value")] == 0
    # the goal counts the shifted rows only (in distribution nothing is flagged, by design)
    unflagged = cells.xs("violations without the KS flag", level="column").loc["guarantee"]
    shifted = unflagged[unflagged.index.str.startswith("calibrated on")]
    assert cells[("goals", "shift: violations without the KS flag", "value")] == shifted.sum()


def test_a_contract_without_a_bound_is_refused_before_any_data(tmp_path):
    with pytest.raises(ConfigError, match=r"routing\.accept_rule=risk_controlled"):
        experiment(tmp_path, "guarantee_check", "tracking=off", "routing.accept_rule=budget")
    with pytest.raises(ConfigError, match="calibration_fraction"):
        experiment(tmp_path, "guarantee_check", "study.params.calibration_fraction=1.5")
