"""Route unlabelled traffic through a registered gate: accept, verify or review each answer.

The input is read and routed in batches of ``routing.batch_rows`` (`runner.routing.stream`):
memory follows the batch, not the file; finished batches are kept in a work folder, so a
killed run continues where it stopped when run again; ``routing.engine=ray`` routes the
same batches on a Ray cluster (`runner.routing.engines`), with the same decisions.
Writes ``decisions.parquet`` (``id, risk, decision, audit`` plus ``source``,
``unseen_source`` and the model version) and a summary (counts per decision, ms/example).
Every input row is accounted for: rows the loader skipped (``dataset.skip_invalid=true``)
are listed in ``skipped.parquet`` with ``decision=invalid`` and the reason, and the
summary, the console and the MLflow metrics say "N read, M routed, K skipped".
Over ``dataset=mlflow_traces`` the decisions also go back onto the traces as assessments
(`runner.routing.trace_feedback`; ``trace_assessments.json`` counts them).
The risks come from the registered pyfunc model, the same object `mlflow models serve`
answers with; the pipeline loads it (`registered_model`) and the run is linked to its
version (``last_route_run``). Rows from sources the gate was not fitted on are reported
loudly and handled by ``routing.on_unseen_source``. With ``routing.verifier=<name>`` the
configured verifier scores the ``verify`` band only (`runner.routing.cascade`): its risk is
the ``<name>_risk`` column and ``final_decision`` turns each verified row into accept or
review at the verifier threshold, the gate's ``decision`` kept beside it; the rows sent and
the verifier's ms/example go into the summary, the tables and MLflow. When the file has labels, the
realised review precision and accepted risk are reported beside the model's out-of-fold
promise (and, with a verifier, after it).
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from runner.data import FrameStream
from runner.errors import ConfigError
from runner.results import ModelLink, StudyResult
from runner.routing import (
    TraceFeedback,
    WorkFolder,
    cascade,
    check_routing,
    engines,
    parse_model_uri,
    route,
    routing_or_defaults,
    stream,
    stream_report,
    work_key,
    work_root,
)
from runner.studies.contract import Inputs, Study

TITLES = {
    "rows": "Input rows",
    "decisions": "Routed rows per decision",
    "realised": "Realised on this file's labels vs the model's out-of-fold promise",
    "final": "Final decisions: the verifier decides the verify band (routing.verifier)",
}


@dataclass
class Params:
    """Timing of the verifier cascade."""

    verifier_timing_rows: int = 32


class Route(Study, name="route", params=Params, titles=TITLES, streams=True):
    """Route traffic through a registered gate: accept, verify or review each answer."""

    def check(self, inputs: Inputs, params: Params) -> None:
        """A model URI, a valid policy, the verifier configured when one is named, and with
        ``routing.engine=ray`` a cluster that answers (before any row is read)."""
        routing = routing_or_defaults(inputs.routing)
        check_routing(routing)
        if not routing.model_uri:
            raise ConfigError("route needs routing.model_uri=models:/<name>@champion")
        parse_model_uri(routing.model_uri)
        if routing.verifier:
            inputs.require_parts("verifiers", [routing.verifier], "routing.verifier")
            verifier = inputs.verifiers[routing.verifier]
            cascade.verifier_threshold(verifier, routing.verifier_threshold, routing.verifier)
        if routing.engine == "ray":
            engines.connect(routing.ray_address)

    def registered_model(self, inputs: Inputs, params: Params) -> str | None:
        """``routing.model_uri``: the pipeline loads it (``Inputs.model``)."""
        return routing_or_defaults(inputs.routing).model_uri

    def run(self, inputs: Inputs, params: Params) -> StudyResult:
        """Route every batch with the loaded model, mark the audit sample, summarise."""
        routing, data = routing_or_defaults(inputs.routing), inputs.data
        streamed = hasattr(data, "plan")
        rows_in = data if streamed else FrameStream(data)
        loader_skipped = [] if streamed else list(data.info.get("skipped") or [])
        tracking_uri = inputs.require("tracking").uri  # where a Ray worker loads the model
        model = inputs.model  # loaded by the pipeline (registered_model)
        training_sources = list(model.metadata.get("training_sources") or [])
        where = data.files[0] if data.files else data.info.get("location")
        specs = rows_in.plan(routing.batch_rows)
        verifier, threshold = None, None
        if routing.verifier:
            verifier = inputs.verifiers[routing.verifier]
            threshold = cascade.verifier_threshold(
                verifier, routing.verifier_threshold, routing.verifier
            )
        router_args = {
            "stream": rows_in,
            "specs": specs,
            "tracking_uri": tracking_uri,
            "model_uri": f"models:/{model.name}/{model.version}",
            "on_unseen_source": routing.on_unseen_source,
            "verifier": verifier,
            "verifier_name": routing.verifier,
            "threshold": threshold,
        }
        admission = {
            "limit": rows_in.limit,
            "skip_invalid": rows_in.skip_invalid,
            "id_field": getattr(rows_in, "columns", {}).get("id", "id"),
            "ids_from_file": rows_in.ids == "from the file",
            "stream": rows_in,
        }
        if routing.on_unseen_source == "error":
            scratch = stream.StreamDriver(None, specs, **admission)
            unseen = stream.unseen_before_routing(rows_in, specs, training_sources, scratch)
            route.handle_unseen(unseen, "error", training_sources, where)
        work = WorkFolder(
            work_root(routing.work_dir, inputs.cache_dir),
            work_key(rows_in, model, routing, verifier),
            len(specs),
        )
        driver = stream.StreamDriver(work, specs, **admission)
        pending = driver.resume()
        results = (
            engines.route_on_ray(router_args, driver, pending, routing.ray_workers)
            if routing.engine == "ray"
            else engines.route_local(router_args, driver, pending, model)
        )
        with _progress(inputs.progress, len(pending)) as bar:
            stream.drive(driver, results, bar)
        totals = stream_report.count(work, cascade=bool(routing.verifier))
        route.handle_unseen(totals.unseen, routing.on_unseen_source, training_sources, where)
        audit = stream_report.audit_mask(totals, routing.audit_fraction, inputs.seed)
        decisions = stream_report.DecisionsFile(work, totals.batches, audit)
        names = totals.names(totals.decision)
        n = totals.rows

        result = StudyResult(titles=dict(TITLES))
        skipped = route.skipped_rows(loader_skipped + totals.skipped)
        read = None if streamed else data.info.get("rows_read")
        counts = route.row_counts(read, n, len(skipped))
        result.titles["rows"] = f"Input rows: {route.accounting(counts)}"
        for key, value in counts.items():
            result.add("rows", "input", key, value)
        for band in ("accept", "verify", "review"):
            count = int((names == band).sum())
            result.add("decisions", band, "rows", count)
            result.add("decisions", band, "share", count / n)
        result.add("decisions", "audit", "rows", int(audit.sum()))
        result.add("decisions", "unseen source", "rows", int(sum(totals.unseen.values())))
        gate_ms = totals.gate_seconds * 1000.0 / n
        runtime: dict[str, Any] = {"gate_ms_per_example": gate_ms, "rows": n}
        runtime["stream"] = {
            "engine": routing.engine,
            "batch_rows": routing.batch_rows,
            "batches": len(specs),
            "batches_routed_by_this_run": len(pending),
            "batches_resumed": len(specs) - len(pending),
            "work_dir": str(work.dir),
        }
        final = None
        cascade_info = None
        if routing.verifier:
            final = totals.names(totals.final)
            cascade_info = stream_report.cascade_record(
                routing.verifier,
                threshold,
                routing.verifier_threshold is not None,
                names,
                totals,
                gate_ms,
            )
            stream_report.add_final_table(
                result, names, final, cascade_info["rows_sent_to_verifier"]
            )
            runtime["cascade"] = cascade_info
        if rows_in.labelled:
            labels = totals.labels
            promise = model.metadata.get("oof_realised") or {}
            for key, value in route.realised(labels, names).items():
                result.add("realised", key, "this file", value)
            if final is not None:
                for key, value in route.realised(labels, final).items():
                    result.add("realised", key, "after verifier", value)
            result.add(
                "realised", "review precision", "OOF promise", promise.get("review_precision")
            )
            result.add("realised", "accepted risk", "OOF promise", promise.get("accepted_risk"))
        result.files["decisions.parquet"] = decisions
        if len(skipped):
            result.files["skipped.parquet"] = skipped
        result.runtime.update(runtime)
        result.extra["summary.json"] = {
            "model": {
                "uri": model.uri,
                "name": model.name,
                "version": model.version,
                "training_run_id": model.run_id,
            },
            "rows": {**counts, "accounting": route.accounting(counts)},
            "ids": rows_in.ids,
            "counts": stream_report.decision_counts(names),
            "audit_rows": int(audit.sum()),
            "unseen_sources": totals.unseen,
            "on_unseen_source": routing.on_unseen_source,
            "training_sources": training_sources,
            "thresholds": model.metadata.get("thresholds"),
        }
        if streamed:
            data.info.update(stream_report.stream_info(totals, counts, skipped, rows_in.labelled))
        if data.info.get("origin") == "mlflow":
            result.trace_feedback = TraceFeedback(
                tracking_uri=data.info["tracking_uri"],
                experiment_id=data.info["experiment_id"],
                decisions=decisions.frame(),
                model_uri=model.uri,
                model_name=model.name,
                model_version=model.version,
                thresholds=dict(model.metadata.get("thresholds") or {}),
            )
        if cascade_info is not None:
            result.extra["summary.json"]["cascade"] = {
                **cascade_info,
                "final_counts": stream_report.decision_counts(final),
            }
        result.model_link = ModelLink(model.name, model.version, "last_route_run", model.uri)
        return result


class _progress:
    """A tqdm bar over batches when progress is on; a no-op otherwise."""

    def __init__(self, on: bool, total: int) -> None:
        self.bar = None
        if on and total:
            from tqdm.auto import tqdm

            self.bar = tqdm(total=total, desc="route batches", unit="batch")

    def __enter__(self) -> Any:
        return self.bar

    def __exit__(self, *exc: Any) -> None:
        if self.bar is not None:
            self.bar.close()
