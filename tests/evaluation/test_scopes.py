"""`runner.evaluation.scopes`: every task, the macro average and the pooled Combined queue.

A specification of the scope rules the RAGScope tables share: which rows a table has and
in which order, what each scope resamples, and what the cells and the bootstrap record say.
"""

from __future__ import annotations

import numpy as np
import pandas as pd
import pytest

from runner.evaluation import scopes as rs
from runner.evaluation.bootstrap import MACRO, POOLED, group_bootstrap, standard_metrics
from runner.evaluation.config import BootstrapConf
from runner.evaluation.metrics import auroc
from runner.results import StudyResult

BOOT = BootstrapConf(n_resamples=60, level=0.9, seed=3)


def scores_frame(frame: pd.DataFrame, tasks: tuple[str, ...] = ("QA", "Summary")) -> pd.DataFrame:
    """Two gates' risks over the shared synthetic frame (`good` follows the label, `noise`
    does not); even groups in the first task, odd ones in the last."""
    out = frame[["example_id", "group_id", "task", "label"]].copy()
    out["task"] = np.where(frame["group_id"].str[-1].astype(int) % 2 == 0, tasks[0], tasks[-1])
    out["good"] = frame["x1"].to_numpy()
    out["noise"] = frame["x2"].to_numpy()
    return out


def test_tasks_come_in_the_papers_order_then_any_others_sorted():
    frame = pd.DataFrame({"task": ["zeta", "Summary", "Data2txt", "QA", "alpha", "QA"]})
    assert rs.task_order(frame) == ["QA", "Summary", "Data2txt", "alpha", "zeta"]
    assert rs.task_order(pd.DataFrame({"task": ["Summary"]})) == ["Summary"]


def test_several_tasks_give_one_row_per_task_then_macro_then_combined(frame):
    stats = rs.bootstrap_scopes(scores_frame(frame, ("Summary", "QA")), ["good", "noise"], BOOT)
    assert stats.tasks == ("QA", "Summary")  # the paper's order, not the data's
    assert stats.scopes() == ["QA", "Summary", "Macro", "Combined"]
    assert stats.by_task is not None


def test_one_task_gives_only_the_combined_row_and_no_per_task_bootstrap(frame):
    stats = rs.bootstrap_scopes(scores_frame(frame, ("QA",)), ["good"], BOOT)
    assert stats.scopes() == ["Combined"] and stats.by_task is None
    with pytest.raises(KeyError, match="only one task"):
        stats.estimate("good", "auroc", "QA")


def test_combined_is_the_pooled_group_bootstrap_of_every_row(frame):
    scores = scores_frame(frame)
    stats = rs.bootstrap_scopes(scores, ["good"], BOOT)
    pooled = group_bootstrap(
        scores["label"].to_numpy(),
        {"good": scores["good"].to_numpy(dtype=float)},
        scores["group_id"].to_numpy(),
        standard_metrics(),
        n_resamples=60,
        seed=3,
        level=0.9,
        order_key=scores["example_id"].to_numpy(),
    )
    assert stats.estimate("good", "auroc", "Combined") == pooled.estimate("good", "auroc", POOLED)
    assert stats.estimate("good", "auroc", "Combined").point == pytest.approx(
        auroc(scores["label"], scores["good"])
    )


def test_a_task_row_is_that_tasks_rows_and_macro_is_the_mean_over_tasks(frame):
    scores = scores_frame(frame)
    stats = rs.bootstrap_scopes(scores, ["good"], BOOT)
    per_task = {}
    for task in ("QA", "Summary"):
        rows = scores[scores["task"] == task]
        per_task[task] = stats.estimate("good", "auroc", task).point
        assert per_task[task] == pytest.approx(auroc(rows["label"], rows["good"]))
    macro = stats.estimate("good", "auroc", "Macro")
    assert macro.point == pytest.approx(np.mean(list(per_task.values())))
    assert macro == stats.by_task.estimate("good", "auroc", MACRO)


def test_a_paired_delta_compares_two_gates_on_the_same_resamples(frame):
    stats = rs.bootstrap_scopes(scores_frame(frame), ["good", "noise"], BOOT)
    delta = stats.delta("good", "noise", "auroc", "Combined")
    good, noise = (stats.estimate(g, "auroc", "Combined").point for g in ("good", "noise"))
    assert delta.point == pytest.approx(good - noise)
    assert delta.low <= delta.point <= delta.high
    assert stats.delta("good", "good", "ap", "QA").point == 0.0


def test_the_scope_table_has_a_cell_per_scope_gate_and_metric_with_its_interval(frame):
    stats = rs.bootstrap_scopes(scores_frame(frame), ["good", "noise"], BOOT)
    result = StudyResult()
    rs.add_scope_table(result, "table3", stats, ["good", "noise"])
    cells = result.cells_frame()
    assert len(cells) == 4 * 2 * 2  # scopes x gates x (AUROC, AP)
    assert list(dict.fromkeys(cells["row"])) == ["QA", "Summary", "Macro", "Combined"]
    assert list(dict.fromkeys(cells["column"])) == [
        "good/AUROC",
        "good/AP",
        "noise/AUROC",
        "noise/AP",
    ]
    qa = cells[(cells["row"] == "QA") & (cells["column"] == "good/AUROC")].iloc[0]
    est = stats.estimate("good", "auroc", "QA")
    assert (qa["value"], qa["ci_low"], qa["ci_high"]) == (est.point, est.low, est.high)
    assert (cells["table"] == "table3").all()


def test_other_metrics_are_named_as_in_the_tables(frame):
    stats = rs.bootstrap_scopes(scores_frame(frame, ("QA",)), ["good"], BOOT)
    result = StudyResult()
    rs.add_scope_table(result, "t", stats, ["good"], ("review_precision", "accepted_risk"))
    assert result.cells_frame()["column"].tolist() == [
        "good/review precision",
        "good/accepted risk",
    ]


def test_the_bootstrap_record_says_how_many_resamples_groups_and_redraws(frame):
    stats = rs.bootstrap_scopes(scores_frame(frame), ["good"], BOOT)
    result = StudyResult()
    rs.add_bootstrap_info(result, stats)
    info = result.extra["bootstrap.json"]
    assert set(info) == {"combined", "by_task"}
    combined = info["combined"]
    assert (combined["n_resamples"], combined["level"], combined["seed"]) == (60, 0.9, 3)
    assert combined["n_groups"] == stats.pooled.n_groups
    assert combined["n_rows"] == stats.pooled.n_rows
    assert combined["n_redrawn"] == stats.pooled.n_redrawn

    one_task = rs.bootstrap_scopes(scores_frame(frame, ("QA",)), ["good"], BOOT)
    result = StudyResult()
    rs.add_bootstrap_info(result, one_task)
    assert set(result.extra["bootstrap.json"]) == {"combined"}


def test_the_same_settings_give_the_same_intervals(frame):
    scores = scores_frame(frame)
    a = rs.bootstrap_scopes(scores, ["good"], BOOT).estimate("good", "ap", "Macro")
    b = rs.bootstrap_scopes(scores, ["good"], BOOT).estimate("good", "ap", "Macro")
    assert a == b
