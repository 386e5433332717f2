"""Route unlabelled traffic through a registered gate: accept, verify or review each answer.

The input is read and routed in batches of ``routing.batch_rows`` (`runner.routing.route.stream`):
memory follows the batch, not the file; finished batches are kept in a work folder, so a
killed run continues where it stopped when run again; ``routing.engine=ray`` routes the
same batches on a Ray cluster (`runner.routing.route.engines`), with the same decisions.
Writes ``decisions.parquet`` (``id, risk, decision, audit`` plus ``source``,
``unseen_source`` and the model version) and a summary (counts per decision, ms/example).
Every input row is accounted for: rows the loader skipped (``dataset.skip_invalid=true``)
are listed in ``skipped.parquet`` with ``decision=invalid`` and the reason, and the
summary, the console and the MLflow metrics say "N read, M routed, K skipped".
Over ``dataset=mlflow_traces`` the decisions also go back onto the traces as assessments
(`runner.routing.audit.trace_feedback`; ``trace_assessments.json`` counts them).
The risks come from the registered pyfunc model, the same object `mlflow models serve`
answers with; the study loads it from the run's store and the run is linked to its
version (``last_route_run``). Rows from sources the gate was not fitted on are reported
loudly and handled by ``routing.on_unseen_source``. With ``routing.verifier=<name>`` the
configured verifier scores the ``verify`` band only (`runner.routing.contract.cascade`): its risk is
the ``<name>_risk`` column and ``final_decision`` is the cascade's, the gate's ``decision``
kept beside it; the rows sent and the verifier's ms/example go into the summary, the tables
and MLflow. A model `fit_gate` calibrated as a cascade is routed exactly as calibrated
(`cascade.routed_cascade`): only with its verifier (else one config error, before any row
is routed); a verified row is accepted below the calibrated threshold and otherwise stays
``verify``; a -inf threshold sends the verifier nothing. Its realised accept / verify /
review shares and share sent to the verifier are set beside the fitted ones, and a gap
beyond their intervals is warned about (`runner.routing.contract.cascade_shares`). When the file
has labels, the realised review precision and accepted risk are reported beside the
model's out-of-fold promise (and, with a verifier, after it).

Every guarantee of the contract assumes the routed traffic is like the calibration data,
so each route checks it without labels (`stream_report.shift_check`): the share of rows
from unseen sources and a KS test of the routed risks against the model's
``calibration_profile`` (not available for a model registered before fit_gate kept one).
The ``shift`` block of the summary, the ``shift`` table, the run tag ``shift_flagged`` and
the metrics ``unseen_source_share`` / ``shift_ks_p`` carry it, and a flagged route warns
loudly. Over traces the flag is on the routing run and on every routed trace (assessment
``ragscope_shift``, `runner.routing.audit.trace_feedback`).
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

from tqdm.auto import tqdm

from runner.data import RowStream, as_stream
from runner.errors import ConfigError
from runner.results import ModelLink, StudyResult
from runner.routing import RoutingConf
from runner.routing.audit import TraceFeedback
from runner.routing.contract import cascade, cascade_shares
from runner.routing.report import stream_report
from runner.routing.route import (
    WorkFolder,
    engines,
    load_routed_model,
    parse_model_uri,
    stream,
    traffic,
    work_key,
    work_root,
)
from runner.studies.contract import RunContext, Study, check_named

TITLES = {
    "rows": "Input rows",
    "decisions": "Routed rows per decision",
    "realised": "Realised on this file's labels vs the model's out-of-fold promise",
    "final": "Final decisions: the verifier decides the verify band (routing.verifier)",
    "cascade_shares": "Calibrated cascade: shares realised on this traffic vs fitted (95 % "
    "intervals; a gap beyond both is warned about)",
    "shift": "Has the traffic moved from the calibration data? Unseen sources, KS test of risks",
}


@dataclass
class Params:
    """Timing of the verifier cascade."""

    verifier_timing_rows: int = 32


@dataclass
class Route(Study, name="route", titles=TITLES):
    """Route traffic through a registered gate: accept, verify or review each answer."""

    routing: RoutingConf
    verifiers: dict[str, Any] = field(default_factory=dict)
    params: Params = field(default_factory=Params)

    def __post_init__(self) -> None:
        """A model URI, a valid policy, the verifier configured when one is named, and with
        ``routing.engine=ray`` a cluster that answers (before any row is read)."""
        routing = self.routing
        if not routing.model_uri:
            raise ConfigError("route needs routing.model_uri=models:/<name>@champion")
        parse_model_uri(routing.model_uri)
        if routing.verifier:  # its threshold may come from the registered cascade: see run
            check_named(self.verifiers, [routing.verifier], "routing.verifier", "verifiers")
            if routing.verifier_threshold is not None:
                verifier = self.verifiers[routing.verifier]
                cascade.verifier_threshold(verifier, routing.verifier_threshold, routing.verifier)
        if routing.engine == "ray":
            engines.connect(routing.ray_address)

    def run(self, data: Any, run: RunContext) -> StudyResult:
        """Route every batch with the registered model, mark the audit sample, summarise."""
        routing = self.routing
        model = load_routed_model(run.tracking_uri, routing.model_uri)
        rows = as_stream(data)
        specs = rows.plan(routing.batch_rows)
        where = f"models:/{model.name}/{model.version}"
        plan = cascade.routed_cascade(self.verifiers, routing, model.metadata, where)
        if routing.on_unseen_source == "error":
            _stop_before_routing_unseen_sources(rows, specs, model)
        work, routed_now = _route_batches(run, model, routing, rows, specs, plan)
        totals = stream_report.count(work, cascade=plan is not None)
        sources = _training_sources(model)
        traffic.handle_unseen(totals.unseen, routing.on_unseen_source, sources, rows.where)
        audit = stream_report.audit_mask(totals, routing.audit_fraction, run.seed)
        decisions = stream_report.DecisionsFile(work, totals.batches, audit)

        result = StudyResult(titles=dict(TITLES))
        counts, skipped = stream_report.add_row_counts(result, rows, totals)
        names = stream_report.add_decision_counts(result, totals, audit)
        runtime = _runtime(routing, totals, len(specs), routed_now, work)
        final = cascade_info = None
        if plan is not None:
            final = totals.names(totals.final)
            cascade_info = stream_report.add_cascade(result, plan, names, final, totals)
            runtime["cascade"] = cascade_info
            sent = cascade_info["rows_sent_to_verifier"]
            shares = cascade_shares.route_shares(model.metadata, plan, final, sent)
            cascade_shares.add_shares(result, shares)
        if rows.labelled:
            stream_report.add_realised(result, model, totals.labels, names, final)
        result.files["decisions.parquet"] = decisions
        if len(skipped):
            result.files["skipped.parquet"] = skipped
        result.runtime.update(runtime)
        result.extra["summary.json"] = stream_report.summary(
            routing, model, rows, counts, names, audit, totals
        )
        shift_block = stream_report.shift_check(work, totals, model)
        stream_report.add_shift(result, shift_block)
        result.extra["summary.json"]["shift"] = shift_block
        if rows.reads_in_batches:
            rows.info.update(stream_report.stream_info(totals, counts, skipped, rows.labelled))
        if rows.info.get("origin") == "mlflow":
            result.trace_feedback = _trace_feedback(rows, model, decisions, shift_block)
        if cascade_info is not None:
            result.extra["summary.json"]["cascade"] = {
                **cascade_info,
                "final_counts": stream_report.decision_counts(final),
                "shares": shares,
            }
        result.model_link = ModelLink(model.name, model.version, "last_route_run", model.uri)
        return result


def _training_sources(model: Any) -> list[str]:
    return list(model.metadata.get("training_sources") or [])


def _admission(rows: RowStream) -> dict[str, Any]:
    """What decides which read rows are routed: ``limit``, repeated ids (`StreamDriver`)."""
    return {
        "limit": rows.limit,
        "skip_invalid": rows.skip_invalid,
        "id_field": rows.id_field,
        "ids_from_file": rows.ids_from_file,
        "stream": rows,
    }


def _stop_before_routing_unseen_sources(rows: RowStream, specs: list, model: Any) -> None:
    """``on_unseen_source=error``: read every batch first, stop before any row is routed."""
    scratch = stream.StreamDriver(None, specs, **_admission(rows))
    sources = _training_sources(model)
    unseen = stream.unseen_before_routing(rows, specs, sources, scratch)
    traffic.handle_unseen(unseen, "error", sources, rows.where)


def _route_batches(
    run: RunContext,
    model: Any,
    routing: Any,
    rows: RowStream,
    specs: list,
    plan: cascade.RoutedCascade | None,
) -> tuple[WorkFolder, int]:
    """Route the batches a finished earlier run has not (locally or on Ray) into the work
    folder; return it and how many batches this run routed."""
    work = WorkFolder(
        work_root(routing.work_dir, run.cache_dir),
        work_key(rows, model, routing, None if plan is None else plan.verifier),
        len(specs),
    )
    router_args = {
        "stream": rows,
        "specs": specs,
        "tracking_uri": run.tracking_uri,  # where a Ray worker loads the model
        "model_uri": f"models:/{model.name}/{model.version}",
        "on_unseen_source": routing.on_unseen_source,
        "plan": plan,
    }
    driver = stream.StreamDriver(work, specs, **_admission(rows))
    pending = driver.resume()
    results = (
        engines.route_on_ray(router_args, driver, pending, routing.ray_workers)
        if routing.engine == "ray"
        else engines.route_local(
            router_args,
            driver,
            pending,
            model,
            engines.local_workers(
                routing.workers, None if plan is None else plan.verifier, pending
            ),
        )
    )
    show = run.progress and bool(pending)
    with tqdm(total=len(pending), desc="route batches", unit="batch", disable=not show) as bar:
        stream.drive(driver, results, bar)
    return work, len(pending)


def _runtime(
    routing: Any, totals: Any, batches: int, routed_now: int, work: WorkFolder
) -> dict[str, Any]:
    return {
        "gate_ms_per_example": totals.gate_seconds * 1000.0 / totals.rows,
        "rows": totals.rows,
        "stream": {
            "engine": routing.engine,
            "batch_rows": routing.batch_rows,
            "batches": batches,
            "batches_routed_by_this_run": routed_now,
            "batches_resumed": batches - routed_now,
            "work_dir": str(work.dir),
        },
    }


def _trace_feedback(
    rows: RowStream, model: Any, decisions: Any, shift: dict[str, Any]
) -> TraceFeedback:
    """The decisions, and the run's shift flag, to write back onto the traces they came from."""
    return TraceFeedback(
        tracking_uri=rows.info["tracking_uri"],
        experiment_id=rows.info["experiment_id"],
        decisions=decisions.frame(),
        model_uri=model.uri,
        model_name=model.name,
        model_version=model.version,
        thresholds=dict(model.metadata.get("thresholds") or {}),
        shift=shift,
    )
