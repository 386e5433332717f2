"""The claim study's table layouts: system rows, scopes and titles."""

from __future__ import annotations

import numpy as np
import pandas as pd

from runner.claims.ensembles import and_rule, cascade_rule, vote_rule
from runner.claims.tables import Scope, data_table, system_rows, systems_table
from runner.claims.verifier_runs import JudgeRun, SpanRun
from runner.results import StudyResult

S1 = np.array(["green", "yellow", "red", "red"], dtype=object)
JUDGE = np.array(["red", "green", "yellow", "yellow"], dtype=object)
ABSTAINED = np.array([True, True, False, True])


def span_run() -> SpanRun:
    return SpanRun(
        name="S1",
        row="S1 span detector [random weights]",
        max_prob=np.array([0.1, 0.4, 0.9, 0.8]),
        shares={0.3: np.array([0.0, 0.2, 0.6, 0.7])},
        labels=S1,
        threshold=0.3,
        sweep=(0.3,),
        runtime={},
    )


def judge_run() -> JudgeRun:
    ones = np.ones(4, dtype=np.int64)
    return JudgeRun("j", {"family": "f"}, JUDGE, ABSTAINED, ones, np.zeros(4), [])


def test_system_rows_follow_the_designed_rules():
    rows = system_rows(span_run(), {"j": judge_run()})
    names = [r for r, _, _ in rows]
    assert names == [
        "S1 span detector [random weights]",
        "S2 LLM judge / j",
        "S3 AND / j",
        "S4 vote / j",
        "S5 cascade / j",
    ]
    by_row = {r: (lab, ab) for r, lab, ab in rows}
    assert not by_row[names[0]][1].any()  # S1 never abstains
    assert by_row["S3 AND / j"][0].tolist() == and_rule(S1, JUDGE).tolist()
    assert by_row["S4 vote / j"][0].tolist() == vote_rule(S1, JUDGE).tolist()
    assert by_row["S5 cascade / j"][0].tolist() == cascade_rule(S1, JUDGE).tolist()
    # The cascade abstains only where S1 flags the claim (a green claim never reaches it).
    assert by_row["S5 cascade / j"][1].tolist() == [False, True, False, True]
    assert [r for r, _, _ in system_rows(None, {"j": judge_run()})] == ["S2 LLM judge / j"]


def test_a_scope_names_its_tables_and_counts_only_its_claims():
    claims = pd.DataFrame({"label": ["green", "yellow", "red", "red"]})
    positive = np.array([False, True, True, True])
    keep = np.array([True, True, False, True])
    titles = {"data": "Claims judged", "systems": "Flag task"}
    ctx = Scope("_no_meta", keep, positive, claims, {}, {}, titles, "sample of 4")
    result = StudyResult(titles={})
    data_table(result, ctx, meta=~keep)
    systems_table(result, ctx, system_rows(span_run(), {}))
    assert result.titles == {
        "data_no_meta": "Claims judged (meta-claims set aside) [sample of 4]",
        "systems_no_meta": "Flag task (meta-claims set aside) [sample of 4]",
    }
    cells = {(c.table, c.row, c.column): c.value for c in result.cells}
    assert cells["data_no_meta", "claims", "count"] == 3
    assert cells["data_no_meta", "red", "count"] == 1
    assert cells["data_no_meta", "meta-claims", "count"] == 0
    s1 = "S1 span detector [random weights]"
    assert cells["systems_no_meta", s1, "true_alarms"] == 2  # yellow + red of the kept claims
    assert cells["systems_no_meta", s1, "false_alarms"] == 0
