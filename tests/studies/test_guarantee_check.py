"""guarantee_check on the real RAGTruth test split: the bound, the references, the shifts."""

from __future__ import annotations

import json

import pandas as pd
import pytest
from tests.conftest import real_data_dir
from tests.conftest import run_experiment as experiment

from runner.errors import ConfigError
from runner.routing.guarantee.guarantee_tables import METHOD_LABELS

pytestmark = pytest.mark.slow
SPLITS = 20


@pytest.fixture(scope="module")
def checked(tmp_path_factory):
    real_data_dir()
    root = tmp_path_factory.mktemp("guarantee_check")
    out = experiment(
        root, "guarantee_check", "tracking=off", "dataset=ragtruth",
        f"study.params.splits={SPLITS}", "study.params.population_rows=[500,1350]",
        f"study.params.population_splits={SPLITS}",
        "study.params.population_share_goals=[[0.2,1350]]",
    )  # fmt: skip
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


def test_the_population_check_runs_every_size_target_and_method_on_the_same_draws(checked):
    """RAGTruth test as the population: each (N, α, method) has every draw; the table's
    rates are the draws' means; the best fixed threshold is there for each α."""
    out, cells = checked
    splits = pd.read_parquet(out.output_dir / "population_splits.parquet")
    sizes = splits.groupby(["rows", "alpha", "method"])["split"].nunique()
    assert set(sizes.index) == {(n, a, m) for n in (500, 1350) for a in (0.1, 0.2)
                                for m in ("gate", "mapie", "betting")}  # fmt: skip
    assert (sizes == SPLITS).all()
    assert (splits["calibration_rows"] >= splits["rows"]).all()
    # one draw per (N, split), shared by every α and method
    assert (splits.groupby(["rows", "split"])["calibration_rows"].nunique() == 1).all()
    meta = json.loads((out.output_dir / "guarantee_check.json").read_text())["population"]
    assert meta["rows"] == 2700 and meta["splits"] == SPLITS
    for (n, alpha, method), sub in splits.groupby(["rows", "alpha", "method"]):
        row = f"population N={n:,}, α={alpha:g} / {METHOD_LABELS[method]}"
        assert cells[("population", row, "violation rate")] == pytest.approx(sub["violated"].mean())
        assert (sub["violated"] == (sub["accepted_risk"].fillna(0) > alpha)).all()
        best = meta["hindsight_share"][str(alpha)]
        gap = cells[("population", row, "share gap to the hindsight threshold (points)")]
        assert gap == pytest.approx(100 * (best - sub["accepted_share"].mean()))
    goal = "population N=1,350, α=0.2: gate share within 5 points of the hindsight threshold"
    assert cells[("goals", goal, "target")] == 5


def test_a_contract_without_a_bound_is_refused_before_any_data(tmp_path):
    with pytest.raises(ConfigError, match=r"routing\.accept_rule=risk_controlled"):
        experiment(tmp_path, "guarantee_check", "tracking=off", "routing.accept_rule=budget")
    with pytest.raises(ConfigError, match="calibration_fraction"):
        experiment(tmp_path, "guarantee_check", "study.params.calibration_fraction=1.5")
    with pytest.raises(ConfigError, match="population_share_goals"):
        experiment(tmp_path, "guarantee_check", "study.params.population_share_goals=[[0.3,500]]")
    with pytest.raises(ConfigError, match="population_alphas"):
        experiment(tmp_path, "guarantee_check", "study.params.population_alphas=[1.5]")
