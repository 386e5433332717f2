"""Decisions back on the traces: `route` over `dataset=mlflow_traces` logs assessments.

Why: reviewers work in the MLflow UI, on the traces; a decision that lives only in
``decisions.parquet`` has to be joined back by hand, and one that is stale on the trace
sends them to the wrong rows. Per routed trace this keeps ONE current answer of each of the
feedback assessments

- ``ragscope_risk``: the gate's risk (a number), rationale = the band and thresholds;
- ``ragscope_decision``: accept / verify / review (the final decision when a verifier
  decided the verify band), metadata = model URI, name and version, thresholds, the
  routing run id (and the gate's own decision and the verifier's risk with a cascade);
- ``ragscope_audit``: ``True`` on the traces in this run's audit sample (metadata: the
  risk, the decision and the size of the sample and of the accepted rows it was drawn
  from); ``False`` where this run supersedes an earlier run's mark;
- ``ragscope_shift``: whether the routing run flagged its traffic as moved from the
  calibration data (`runner.routing.report.stream_report.shift_check`), on every routed trace,
  rationale = the run's reason, metadata = the KS p-value and whether this trace's source
  is one the gate never saw. An answer of its own, so a rerun whose shift test reads
  differently updates this flag and leaves an unchanged decision as it is,

all with source ``CODE`` / ``ragscope:<model>/<version>``. The current answer of a name is
the newest valid runner assessment of that name on the trace, whatever the model version
(`runner.data.route_answer`, the rule the audit reads by too). A rerun compares its
answer with it: the same value, rationale and metadata (the routing run id and the model
URI, an alias or number of the same version, aside) leave it ("left"); anything else, a
new model version included, is logged as a new assessment that *overrides* it (MLflow's
``overrides`` relation, what ``mlflow.override_feedback`` logs: the old one is kept,
marked invalid) ("updated"); a trace without one gets its first ("added"). An audit mark
belongs to the routing run that drew it: a run re-marks its own sample (an earlier run's
mark on the same trace is superseded, so each run's marks stay readable by its run id,
`runner.data.trace_audit`) and supersedes with ``False`` an earlier mark on a trace it
routed but did not draw. Traces a run did not route keep their answers.

Writing is all or nothing: every trace must still be in the store before the first write,
and a write that fails deletes what this run wrote (``delete_assessment`` of an
overriding assessment makes the one it overrode valid again), as does `TraceFeedback.undo`
when the run fails later, before its folder is published. The traces' experiment is marked
as a GenAI experiment (unless it has a kind), so the MLflow UI opens it on its traces. The
study returns a `TraceFeedback` as `StudyResult.trace_feedback`; the tracking layer
(`runner.tracking.hand_over`) writes it once the routing run id is known.
"""

from __future__ import annotations

import logging
import time
import uuid
from dataclasses import dataclass, field
from typing import Any

import pandas as pd

from runner.data import ROUTE_SOURCE, RUN_KEY, route_answer
from runner.errors import DataError

log = logging.getLogger(__name__)

RISK, DECISION, AUDIT = "ragscope_risk", "ragscope_decision", "ragscope_audit"
SHIFT = "ragscope_shift"
NAMES = (RISK, DECISION, AUDIT, SHIFT)
ACTIONS = ("added", "updated", "left")
NOT_SAID = frozenset({RUN_KEY, "model_uri"})
"""Metadata that is not part of an answer: who wrote it, and by which URI (an alias or a
version number) the same model version was asked for."""


@dataclass(frozen=True)
class Answer:
    """One assessment's content: what a rerun compares (`NOT_SAID` aside)."""

    value: Any
    rationale: str
    metadata: dict[str, str]

    def same_as(self, assessment: Any, source_id: str) -> bool:
        """True when `assessment` says exactly this (same source; `NOT_SAID` aside)."""
        if getattr(assessment.source, "source_id", None) != source_id:
            return False
        theirs = {k: v for k, v in (assessment.metadata or {}).items() if k not in NOT_SAID}
        ours = {k: v for k, v in self.metadata.items() if k not in NOT_SAID}
        value = assessment.value
        return (
            type(value) is type(self.value)
            and value == self.value
            and (assessment.rationale or "") == self.rationale
            and theirs == ours
        )


@dataclass(frozen=True)
class Step:
    """What a run does to one assessment name on one trace."""

    trace_id: str
    name: str
    action: str  # one of ACTIONS
    answer: Answer | None = None  # None: left as it is
    supersedes: str | None = None  # the assessment id the new one overrides


@dataclass
class TraceFeedback:
    """What to write onto which traces (built by the route study, written by tracking)."""

    tracking_uri: str
    experiment_id: str
    decisions: pd.DataFrame
    model_uri: str
    model_name: str
    model_version: str
    thresholds: dict[str, Any] = field(default_factory=dict)
    shift: dict[str, Any] | None = None
    """The run's ``shift`` block (`runner.routing.report.stream_report.shift_check`); None: no
    ``ragscope_shift`` answers."""
    written: list[tuple[str, str]] = field(default_factory=list, repr=False)
    """(trace id, assessment id) of every assessment this run logged, in order."""

    @property
    def source_id(self) -> str:
        """Who logged it: the model version, so versions are told apart in the UI."""
        return f"{ROUTE_SOURCE}{self.model_name}/{self.model_version}"

    def write(self, run_id: str | None) -> dict[str, Any]:
        """Bring every routed trace's assessments up to this run; returns the counts."""
        return log_assessments(self, run_id)

    def undo(self) -> int:
        """Delete what `write` logged (the run failed later); returns how many."""
        done = remove(self.tracking_uri, self.written)
        self.written = []
        return done


def answers(
    feedback: TraceFeedback, row: Any, run_id: str, sample: dict[str, int]
) -> dict[str, Answer]:
    """name -> the answer of one decisions row (``ragscope_audit`` only when marked)."""
    th = feedback.thresholds
    meta = {
        "model_uri": feedback.model_uri,
        "model_name": feedback.model_name,
        "model_version": feedback.model_version,
        "review_at": str(th.get("review_at")),
        "accept_at": str(th.get("accept_at")),
        "threshold_rule": str(th.get("rule")),
        RUN_KEY: run_id,
    }
    decision = str(row["decision"])
    final = str(row.get("final_decision") or decision)
    reason = str(row.get("reason") or "")
    band = (
        f"risk {row['risk']:.4f}: review at >= {th.get('review_at')}, accept at <= "
        f"{th.get('accept_at')}"
    )
    decision_meta = dict(meta)
    if final != decision:
        decision_meta["gate_decision"] = decision
    for column in row.index:
        if str(column).endswith("_risk") and pd.notna(row[column]):
            decision_meta[str(column)] = f"{float(row[column]):.6g}"
    out = {
        RISK: Answer(float(row["risk"]), band, meta),
        DECISION: Answer(final, "; ".join(x for x in (reason, band) if x), decision_meta),
    }
    if bool(row["audit"]):
        mark_meta = {
            **meta,
            "risk": repr(float(row["risk"])),
            "decision": decision,
            "audit_rows": str(sample["audit_rows"]),
            "accepted_rows": str(sample["accepted_rows"]),
        }
        rationale = (
            f"in the audit sample of routing run {run_id}: {sample['audit_rows']} of "
            f"{sample['accepted_rows']} accepted traces"
        )
        out[AUDIT] = Answer(True, rationale, mark_meta)
    if feedback.shift is not None:
        out[SHIFT] = shift_answer(feedback.shift, row, meta)
    return out


def shift_answer(shift: dict[str, Any], row: Any, meta: dict[str, str]) -> Answer:
    """The run's shift flag as one trace's answer: the run's verdict and reason, with the
    KS p-value and whether this trace's own source is unseen in the metadata."""
    test = shift.get("risk_test") or {}
    shift_meta = {
        **meta,
        "ks_p_value": f"{test['p_value']:.3g}" if test.get("available") else "not available",
        "unseen_source": str(bool(row.get("unseen_source", False))).lower(),
    }
    return Answer(bool(shift["flagged"]), str(shift.get("why") or ""), shift_meta)


def unmark(feedback: TraceFeedback, run_id: str) -> Answer:
    """The answer that supersedes an earlier run's audit mark on a trace this run left out."""
    meta = {
        "model_uri": feedback.model_uri,
        "model_name": feedback.model_name,
        "model_version": feedback.model_version,
        RUN_KEY: run_id,
    }
    return Answer(False, f"not in the audit sample of routing run {run_id}", meta)


def plan(feedback: TraceFeedback, traces: dict[str, Any], run_id: str, where: str) -> list[Step]:
    """Every step of bringing the routed traces up to this run, decided before any write.

    Raises a `DataError` naming the first routed trace that is no longer in the store.
    """
    frame = feedback.decisions
    sample = {
        "audit_rows": int(frame["audit"].astype(bool).sum()),
        "accepted_rows": int((_final(frame) == "accept").sum()),
    }
    steps = []
    for _, row in frame.iterrows():
        trace_id = str(row["id"])
        trace = traces.get(trace_id)
        if trace is None:
            raise DataError(
                f"trace {trace_id} is no longer in the store (deleted since it was read?); "
                "nothing was written to the traces",
                file=where,
                row=trace_id,
                field="id",
            )
        new = answers(feedback, row, run_id, sample)
        for name in NAMES:
            steps.append(step(feedback, trace, name, new.get(name), run_id))
    return steps


def _final(frame: pd.DataFrame) -> pd.Series:
    """Each row's final decision: the cascade's where a verifier decided, else the gate's."""
    if "final_decision" not in frame:
        return frame["decision"].astype(str)
    return frame["final_decision"].fillna(frame["decision"]).astype(str)


def step(feedback: TraceFeedback, trace: Any, name: str, new: Answer | None, run_id: str) -> Step:
    """What this run does to assessment `name` on `trace` (see the module's rules)."""
    trace_id = trace.info.trace_id
    now = route_answer(trace, name)
    if name == AUDIT and new is None:  # not in this run's sample
        if now is not None and now.value is True:
            return Step(trace_id, name, "updated", unmark(feedback, run_id), now.assessment_id)
        return Step(trace_id, name, "left")
    if new is None:  # no answer of this name from this run (a route without a shift block)
        return Step(trace_id, name, "left")
    if now is None:
        return Step(trace_id, name, "added", new)
    if name != AUDIT and new.same_as(now, feedback.source_id):
        return Step(trace_id, name, "left")
    # a mark belongs to its run: this run's mark supersedes an earlier one, whatever it said
    return Step(trace_id, name, "updated", new, now.assessment_id)


def remove(tracking_uri: str, written: list[tuple[str, str]]) -> int:
    """Delete `written` assessments newest first; an overridden one becomes valid again."""
    from mlflow.tracing.client import TracingClient

    client = TracingClient(tracking_uri=tracking_uri)
    for trace_id, assessment_id in reversed(written):
        client.delete_assessment(trace_id, assessment_id)
    return len(written)


def undo_feedback(feedback: TraceFeedback) -> str:
    """Undo what `feedback` wrote; says what became of the traces (for an error message)."""
    pending = len(feedback.written)
    try:
        feedback.undo()
    except Exception as exc:  # the store failed again: say what is left on the traces
        return (
            f"removing the {pending} assessments this run had written failed too ({exc}): "
            f"they are still on the traces: {feedback.written}"
        )
    return f"the {pending} assessments this run had written were removed"


def log_assessments(feedback: TraceFeedback, run_id: str | None) -> dict[str, Any]:
    """Plan, then write, every routed trace's assessments; returns the counts per action.

    All or nothing: a trace missing from the store stops the run before any write, and a
    write that fails removes what this run had written before the error is raised.
    """
    import mlflow
    from mlflow.entities import AssessmentSource, Feedback
    from mlflow.tracing.client import TracingClient

    from runner.data import search_all
    from runner.tracking import TRACES_KIND, mark_kind

    start = time.perf_counter()
    # without an MLflow run (tracking off) the marks still belong to this run alone
    run = run_id or f"untracked-{uuid.uuid4().hex}"
    store = mlflow.MlflowClient(tracking_uri=feedback.tracking_uri)
    experiment = store.get_experiment(feedback.experiment_id)
    where = f"MLflow experiment {experiment.name!r}"
    ids = set(feedback.decisions["id"].astype(str))
    found = search_all(feedback.tracking_uri, feedback.experiment_id, None, None, False)
    traces = {t.info.trace_id: t for t in found if t.info.trace_id in ids}
    steps = plan(feedback, traces, run, where)
    mark_kind(store, experiment, TRACES_KIND)
    client = TracingClient(tracking_uri=feedback.tracking_uri)
    source = AssessmentSource(source_type="CODE", source_id=feedback.source_id)
    counts = {action: dict.fromkeys(NAMES, 0) for action in ACTIONS}
    for s in steps:
        if s.answer is not None:
            assessment = Feedback(
                name=s.name,
                value=s.answer.value,
                source=source,
                rationale=s.answer.rationale,
                metadata=s.answer.metadata,
                overrides=s.supersedes,
            )
            try:
                logged = client.log_assessment(s.trace_id, assessment)
            except Exception as exc:
                raise DataError(
                    f"trace {s.trace_id}: logging {s.name} failed ({exc}); "
                    + undo_feedback(feedback),
                    file=where,
                    row=s.trace_id,
                    field=s.name,
                ) from exc
            feedback.written.append((s.trace_id, logged.assessment_id))
        counts[s.action][s.name] += 1
    seconds = time.perf_counter() - start
    log.info(
        "trace assessments on %d traces of %s (routing run %s): %s",
        len(ids),
        where,
        run,
        "; ".join(
            f"{name} " + ", ".join(f"{a} {counts[a][name]}" for a in ACTIONS) for name in NAMES
        ),
    )
    return {
        "tracking_uri": feedback.tracking_uri,
        "experiment_id": feedback.experiment_id,
        "routing_run_id": run,
        "source_id": feedback.source_id,
        "traces": len(ids),
        **counts,
        "audit_marks": int(feedback.decisions["audit"].astype(bool).sum()),
        "seconds": round(seconds, 3),
    }
