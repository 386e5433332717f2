"""The operating report's tables (`runner.routing.report.operating_tables`), as a specification.

What a gate does at the contract's budgets, with context-group intervals, and whether its
ranking survives a source it was not fitted on. The source-shift numbers come from the
engine RQ5 uses (`runner.evaluation.source_shift`); this module lays them out as cells,
marks a source that cannot give a number instead of failing, and computes the promise a
registered model carries.
"""

from __future__ import annotations

from types import SimpleNamespace

import numpy as np
import pandas as pd
import pytest
from sklearn.base import BaseEstimator

from runner.data import require_labels
from runner.errors import DataError
from runner.evaluation import source_shift as ss
from runner.evaluation.config import BootstrapConf
from runner.results import StudyResult
from runner.routing.report import operating_tables as tables

BOOT = BootstrapConf(n_resamples=50, level=0.95, seed=3)


class ColumnGate(BaseEstimator):
    """A gate whose risk is a column of the frame; `needs_fit` says whether it is learned."""

    def __init__(self, column: str = "risk", needs_fit: bool = False) -> None:
        self.column = column
        self.needs_fit = needs_fit

    def fit(self, frame: pd.DataFrame, y: np.ndarray) -> ColumnGate:
        self.fitted_ = True
        return self

    def score(self, frame: pd.DataFrame) -> np.ndarray:
        return frame[self.column].to_numpy(float)


def rows(sources: dict[str, int], groups_per_source: int = 8, seed: int = 0) -> pd.DataFrame:
    """Labelled rows per source, a risk that ranks them imperfectly, several tasks."""
    rng = np.random.default_rng(seed)
    out = []
    for source, n in sources.items():
        groups = groups_per_source if groups_per_source else 1
        for i in range(n):
            label = int(i % 3 == 0)
            out.append(
                {
                    "example_id": f"{source}-{i}",
                    "group_id": f"{source}-g{i % groups}",
                    "task": "QA" if i % 2 else "Summary",
                    "source": source,
                    "label": label,
                    "risk": label * 0.5 + rng.random(),
                }
            )
    return pd.DataFrame(out)


def cells(result: StudyResult) -> pd.DataFrame:
    return result.cells_frame().set_index(["table", "row", "column"])


def test_budgets_name_their_columns_in_percent():
    assert tables.pct(0.1) == "10" and tables.pct(0.05) == "5"
    assert tables.review_col(0.1) == "review precision@10%"
    assert tables.accept_col(0.5) == "accepted risk@50%"
    metrics = tables.metric_set([0.05, 0.1], [0.0, 0.5])
    assert list(metrics) == [
        "AUROC",
        "AP",
        "review precision@5%",
        "review precision@10%",
        "accepted risk@50%",  # an accept budget of 0 accepts nothing: no column
    ]


def test_unlabelled_or_single_class_data_fails_before_any_scoring():
    unlabelled = SimpleNamespace(
        info={"labelled": False}, files=["team.jsonl"], frame=pd.DataFrame(), name="team"
    )
    with pytest.raises(DataError, match="operating_report needs labelled rows"):
        require_labels(unlabelled, "operating_report")
    one_class = SimpleNamespace(
        info={}, files=[], frame=pd.DataFrame({"label": [0, 0, 0]}), name="team"
    )
    with pytest.raises(DataError, match="both classes"):
        require_labels(one_class, "fit_gate")
    both = SimpleNamespace(info={}, files=[], frame=pd.DataFrame({"label": [0, 1]}), name="t")
    require_labels(both, "fit_gate")


def test_the_operating_table_has_every_scope_gate_and_budget_with_intervals():
    scores = rows({"docs": 60})
    scores["noise"] = np.random.default_rng(1).random(len(scores))
    result = StudyResult()
    stats = tables.add_operating_table(result, scores, ["risk", "noise"], BOOT, [0.1], [0.5])
    table = cells(result).loc["operating"]
    expected_rows = {
        f"{scope} / {gate}"
        for scope in ("Combined", "QA", "Summary", "Macro")
        for gate in ("risk", "noise")
    }
    assert set(table.index.get_level_values("row")) == expected_rows
    assert set(table.index.get_level_values("column")) == {
        "AUROC",
        "AP",
        "review precision@10%",
        "accepted risk@50%",
    }
    point = table.loc[("Combined / risk", "AUROC")]
    assert point["ci_low"] <= point["value"] <= point["ci_high"]
    assert point["value"] > table.loc[("Combined / noise", "AUROC")]["value"]
    base = cells(result).loc["base_rate"]
    assert base.loc[("Combined", "rows"), "value"] == 60
    assert base.loc[("Combined", "hallucinated share"), "value"] == pytest.approx(20 / 60)
    # the promise a registered model carries is the Combined row of the same statistics
    promised = tables.promise(stats, "risk", 0.1, 0.5)
    assert promised["AUROC"]["value"] == pytest.approx(point["value"])
    assert set(promised) == {"AUROC", "AP", "review precision@10%", "accepted risk@50%"}
    assert "accepted risk@0%" not in tables.promise(stats, "risk", 0.1, 0.0)


def test_source_shift_rows_come_from_the_engine_and_a_source_that_cannot_give_one_is_marked():
    frame = rows({"docs": 40, "support": 40})
    lonely = rows({"wiki": 12}, groups_per_source=1)  # one context group
    frame = pd.concat([frame, lonely], ignore_index=True)
    gates = {"zero": ColumnGate(), "learned": ColumnGate(needs_fit=True)}
    result = StudyResult()
    blocked = tables.add_source_shift(result, frame, gates, BOOT, 0.1, 0.5, [4], 2, 7, False)
    assert blocked == {"wiki": "one context group"}
    table = cells(result)
    loso = table.loc["leave_source_out"]
    marked = f"wiki / zero ({ss.NOT_COMPUTABLE}: one context group)"
    assert np.isnan(loso.loc[(marked, "AUROC"), "value"])
    # the computable sources carry the engine's within-source bootstrap, cell for cell
    from runner.evaluation.oof import score_gates
    from runner.evaluation.splits import LeaveSourceOut

    scores = score_gates(gates, frame, LeaveSourceOut(column="source"), progress=False)
    metrics = tables.metric_set([0.1], [0.5])
    engine = ss.bootstrap_by_source(scores, list(gates), ["docs", "support"], metrics, BOOT)
    for source in ("docs", "support"):
        for gate in gates:
            est = engine[source].estimate(gate, "AUROC")
            got = loso.loc[(f"{source} / {gate}", "AUROC")]
            assert (got["value"], got["ci_low"], got["ci_high"]) == pytest.approx(
                (est.point, est.low, est.high)
            )
    # target-label rows: learned gates only, k labels of the source, the marked source named
    target = table.loc["target_labels"]
    labels = set(target.index.get_level_values("row"))
    assert {"docs / learned / k=4", "support / learned / k=4"} <= labels
    assert not any("/ zero" in label for label in labels)
    assert target.loc[("docs / learned / k=4", "labels used"), "value"] == 4
    assert f"wiki / learned ({ss.NOT_COMPUTABLE}: one context group)" in labels


def test_without_a_learned_gate_there_are_no_target_label_rows():
    frame = rows({"docs": 40, "support": 40})
    result = StudyResult()
    blocked = tables.add_source_shift(
        result, frame, {"zero": ColumnGate()}, BOOT, 0.1, 0.5, [4], 2, 7, False
    )
    assert blocked == {}
    shown = set(result.cells_frame()["table"])
    assert "leave_source_out" in shown and "target_labels" not in shown
