"""One current answer per trace: a routing run's decisions, risks and audit marks on traces.

Real MLflow Tracing into SQLite (the `store` fixture of the loader's tests); the write-back
(`TraceFeedback.write`) is driven with decisions frames as `route` hands them over, and
the audit loader reads the marks back by routing run.
"""

from __future__ import annotations

import mlflow
import pandas as pd
import pytest
from mlflow.entities import AssessmentSource
from mlflow.tracing.client import TracingClient
from tests.data.test_mlflow_traces import log_trace, store  # noqa: F401 (fixture)

from runner.data.trace_audit import load_trace_audit_labels
from runner.errors import DataError
from runner.routing.audit import TraceFeedback

THRESHOLDS = {"review_at": 0.7, "accept_at": 0.3, "rule": "budget"}
NAMES = ("ragscope_risk", "ragscope_decision", "ragscope_audit")


def traces(n: int) -> list[str]:
    return [log_trace(question=f"q{i}", docs=(f"Doc {i}.",), answer=f"A{i}.") for i in range(n)]


def feedback(store, ids, decisions, risks=None, audit=None, version="1"):  # noqa: F811
    """What `route` hands the tracking layer for these decisions."""
    frame = pd.DataFrame(
        {
            "id": ids,
            "risk": risks if risks is not None else [0.1 * (i + 1) for i in range(len(ids))],
            "decision": decisions,
            "audit": audit if audit is not None else [False] * len(ids),
        }
    )
    return TraceFeedback(
        store, app_id(store), frame, "models:/gate@champion", "gate", version, dict(THRESHOLDS)
    )


def app_id(store) -> str:  # noqa: F811
    return mlflow.MlflowClient(store).get_experiment_by_name("app").experiment_id


def routed(store, trace_id: str, name: str, valid_only: bool = True) -> list:  # noqa: F811
    """The runner's assessments `name` on a trace (the valid ones: its current answers)."""
    trace = TracingClient(store).get_trace(trace_id)
    return [
        a
        for a in trace.info.assessments
        if a.name == name
        and a.source.source_id.startswith("ragscope:")
        and (a.valid is not False or not valid_only)
    ]


def only(store, trace_id: str, name: str):  # noqa: F811
    (answer,) = routed(store, trace_id, name)
    return answer


def counts(summary: dict, name: str) -> tuple[int, int, int]:
    return tuple(summary[action][name] for action in ("added", "updated", "left"))


def test_a_rerun_that_changes_decisions_supersedes_them_on_every_trace(store):  # noqa: F811
    ids = traces(4)
    first = feedback(store, ids, ["accept", "verify", "review", "accept"]).write("run-1")
    # the same model version, a setting that sends everything to review
    again = feedback(store, ids, ["review"] * 4).write("run-2")
    for trace_id in ids:
        decision = only(store, trace_id, "ragscope_decision")
        assert decision.value == "review"
        superseded = [a for a in routed(store, trace_id, "ragscope_decision", False) if not a.valid]
        if trace_id == ids[2]:  # review before: left, still run-1's answer
            assert decision.metadata["routing_run_id"] == "run-1" and not superseded
        else:  # the earlier answer is kept, marked invalid, overridden by this run's
            assert decision.metadata["routing_run_id"] == "run-2"
            assert [a.assessment_id for a in superseded] == [decision.overrides]
    assert counts(first, "ragscope_decision") == (4, 0, 0)
    assert counts(again, "ragscope_decision") == (0, 3, 1)
    assert counts(again, "ragscope_risk") == (0, 0, 4)  # the same risks stay as they are
    unchanged = feedback(store, ids, ["review"] * 4).write("run-3")
    assert [counts(unchanged, n) for n in NAMES] == [(0, 0, 4)] * 3


def test_a_new_model_version_supersedes_the_answers_of_the_old_one(store):  # noqa: F811
    ids = traces(3)
    feedback(store, ids, ["accept", "verify", "review"]).write("run-1")
    summary = feedback(store, ids, ["accept", "verify", "review"], version="2").write("run-2")
    for trace_id in ids:
        for name in ("ragscope_risk", "ragscope_decision"):
            answer = only(store, trace_id, name)
            assert answer.source.source_id == "ragscope:gate/2"
            assert answer.metadata["model_version"] == "2"
    assert counts(summary, "ragscope_decision") == counts(summary, "ragscope_risk") == (0, 3, 0)


def test_audit_marks_belong_to_one_routing_run_and_the_audit_reads_one_run(store):  # noqa: F811
    ids = traces(6)
    accept = ["accept"] * 6
    feedback(store, ids, accept, audit=[True, True, False, False, False, False]).write("run-1")
    second = feedback(store, ids, accept, audit=[False, True, True, True, False, False])
    summary = second.write("run-2")
    marked = [t for t in ids if only_mark(store, t)]
    assert marked == ids[1:4]
    assert {only(store, t, "ragscope_audit").metadata["routing_run_id"] for t in marked} == {
        "run-2"
    }
    unmarked = only(store, ids[0], "ragscope_audit")
    assert unmarked.value is False and unmarked.metadata["routing_run_id"] == "run-2"
    # run-2 marks its three (one re-marked from run-1) and unmarks run-1's other trace
    assert counts(summary, "ragscope_audit") == (2, 2, 2) and summary["audit_marks"] == 3

    reviewer = AssessmentSource(source_type="HUMAN", source_id="reviewer@team")
    for k, trace_id in enumerate(ids):
        mlflow.log_feedback(trace_id=trace_id, name="hallucinated", value=k == 2, source=reviewer)
    latest = load_trace_audit_labels("app", tracking_uri=store)
    assert latest.info["routing_run_id"] == "run-2"
    assert sorted(latest.frame["id"]) == sorted(ids[1:4]) and latest.info["marked_rows"] == 3
    assert latest.frame.set_index("id")["label"].to_dict() == {ids[1]: 0, ids[2]: 1, ids[3]: 0}
    assert latest.info["accepted_rows"] == 6
    earlier = load_trace_audit_labels("app", tracking_uri=store, routing_run="run-1")
    assert sorted(earlier.frame["id"]) == sorted(ids[:2])  # superseded marks stay readable
    risks = dict(zip(ids, second.decisions["risk"], strict=True))
    assert earlier.frame.set_index("id")["risk"].to_dict() == {t: risks[t] for t in ids[:2]}
    with pytest.raises(DataError, match=r"dataset\.routing_run='run-9': no routing run with that"):
        load_trace_audit_labels("app", tracking_uri=store, routing_run="run-9")


def only_mark(store, trace_id: str) -> bool:  # noqa: F811
    answers = routed(store, trace_id, "ragscope_audit")
    assert len(answers) <= 1
    return bool(answers) and answers[0].value is True


def test_a_run_with_no_audit_sample_is_named_when_the_audit_reads_it(store):  # noqa: F811
    ids = traces(2)
    feedback(store, ids, ["accept", "accept"], audit=[True, False]).write("run-1")
    feedback(store, ids, ["accept", "accept"]).write("run-2")
    assert not any(only_mark(store, t) for t in ids)
    reviewer = AssessmentSource(source_type="HUMAN", source_id="r")
    mlflow.log_feedback(trace_id=ids[0], name="hallucinated", value=False, source=reviewer)
    with pytest.raises(DataError, match="routing run run-2 marked no trace for audit"):
        load_trace_audit_labels("app", tracking_uri=store)
    assert load_trace_audit_labels("app", tracking_uri=store, routing_run="run-1").info["rows"] == 1


def test_a_rerun_over_fewer_traces_leaves_the_others_as_they_were(store):  # noqa: F811
    ids = traces(4)
    feedback(store, ids, ["accept"] * 4, audit=[True, False, False, True]).write("run-1")
    summary = feedback(store, ids[:2], ["review", "review"]).write("run-2")
    decisions = [only(store, t, "ragscope_decision").value for t in ids]
    assert decisions == ["review", "review", "accept", "accept"]
    assert [only_mark(store, t) for t in ids] == [False, False, False, True]
    assert summary["traces"] == 2 and counts(summary, "ragscope_decision") == (0, 2, 0)
    assert counts(summary, "ragscope_audit") == (0, 1, 1)


def test_a_trace_gone_from_the_store_stops_the_write_before_anything_is_written(store):  # noqa: F811
    ids = traces(2)
    feedback(store, ids, ["accept", "accept"]).write("run-1")
    TracingClient(store).delete_traces(experiment_id=app_id(store), trace_ids=[ids[1]])
    with pytest.raises(DataError, match=rf"row {ids[1]}, field 'id': trace {ids[1]} is no longer"):
        feedback(store, ids, ["review", "review"]).write("run-2")
    assert only(store, ids[0], "ragscope_decision").value == "accept"  # nothing written


def test_a_write_that_fails_midway_takes_back_what_it_wrote(store, monkeypatch):  # noqa: F811
    ids = traces(3)
    feedback(store, ids, ["accept"] * 3, audit=[True, False, False]).write("run-1")
    before = state(store, ids)
    calls = []
    original = TracingClient.log_assessment

    def failing(self, trace_id, assessment):
        calls.append(trace_id)
        if len(calls) == 4:
            raise RuntimeError("store went away")
        return original(self, trace_id, assessment)

    monkeypatch.setattr(TracingClient, "log_assessment", failing)
    removed = r"failed \(store went away\); the 3 assessments this run had written were removed"
    with pytest.raises(DataError, match=removed):
        feedback(store, ids, ["review"] * 3, risks=[0.9] * 3).write("run-2")
    assert state(store, ids) == before


def state(store, ids: list[str]) -> dict:  # noqa: F811
    """Every runner assessment on the traces: id and validity."""
    return {
        t: sorted((a.assessment_id, a.valid) for n in NAMES for a in routed(store, t, n, False))
        for t in ids
    }


def test_undo_restores_the_answers_a_run_superseded(store):  # noqa: F811
    ids = traces(2)
    feedback(store, ids, ["accept", "verify"], audit=[True, False]).write("run-1")
    second = feedback(store, ids, ["review", "review"], risks=[0.8, 0.9])
    second.write("run-2")
    assert second.undo() == 5  # 2 risks, 2 decisions, 1 mark taken off
    assert [only(store, t, "ragscope_decision").value for t in ids] == ["accept", "verify"]
    assert only(store, ids[0], "ragscope_audit").metadata["routing_run_id"] == "run-1"


FLAGGED = {
    "flagged": True,
    "why": "routed risks unlike the calibration risks (KS p = 0.0004 < 0.01)",
    "risk_test": {"available": True, "p_value": 0.00041234, "level": 0.01},
}


def with_shift(fb: TraceFeedback, shift: dict, unseen: list[bool]) -> TraceFeedback:
    fb.decisions["unseen_source"] = unseen
    fb.shift = shift
    return fb


def test_a_flagged_route_puts_the_flag_on_every_routed_trace(store):  # noqa: F811
    ids = traces(3)
    fb = with_shift(feedback(store, ids, ["accept", "verify", "review"]), FLAGGED, [0, 1, 0])
    summary = fb.write("run-1")
    assert counts(summary, "ragscope_shift") == (3, 0, 0)
    for trace_id, unseen in zip(ids, ("false", "true", "false"), strict=True):
        flag = only(store, trace_id, "ragscope_shift")
        assert flag.value is True and flag.rationale == FLAGGED["why"]
        assert flag.metadata["ks_p_value"] == "0.000412"
        assert flag.metadata["unseen_source"] == unseen
        assert flag.metadata["routing_run_id"] == "run-1"


def test_a_rerun_whose_shift_reads_otherwise_updates_the_flag_and_leaves_the_decisions(store):  # noqa: F811
    ids = traces(3)
    decisions = ["accept", "verify", "review"]
    with_shift(feedback(store, ids, decisions), FLAGGED, [0, 0, 0]).write("run-1")
    calm = {
        "flagged": False,
        "why": "no unseen source; routed risks like the calibration risks (KS p = 0.7)",
        "risk_test": {"available": True, "p_value": 0.7, "level": 0.01},
    }
    again = with_shift(feedback(store, ids, decisions), calm, [0, 0, 0]).write("run-2")
    assert counts(again, "ragscope_shift") == (0, 3, 0)
    for name in ("ragscope_decision", "ragscope_risk"):
        assert counts(again, name) == (0, 0, 3)  # an unchanged decision does not look updated
    assert [only(store, t, "ragscope_shift").value for t in ids] == [False] * 3
    same = with_shift(feedback(store, ids, decisions), calm, [0, 0, 0]).write("run-3")
    assert counts(same, "ragscope_shift") == (0, 0, 3)
