"""Route traffic batch by batch: the same decisions as routing the whole file, flat memory.

Why batches: a week of logs does not fit one frame. Each batch is routed on its own
(`route_frame`: the registered model's risk and decision, the unseen-source rule, the
verifier on the verify band), because none of those look beyond a row. What does look
across rows is done over the whole stream, in order, by `StreamDriver` on the driving
process: an id seen in an earlier batch is a duplicate, ``limit`` counts valid rows, and
the audit draw (`runner.routing.route.traffic.audit_sample`) is made once every batch is in, over
the positions of all accepted rows, so the same ids are marked whatever the batch size.

Repeats and ``limit`` are settled before a batch is routed (`StreamDriver.admit`): a row
after the limit or an id already routed never reaches the gate or the verifier, so the
rows sent to the verifier, its share and every ms/example are those of the routed rows
(the in-memory loader cuts at ``limit`` before any work too). The one exception is the
local engine on forked workers (`runner.routing.route.engines.route_forked`, never with a
verifier): a worker routes its whole batch and the driver admits it after, so a repeated
id, or a row after the limit in the last batch, costs gate time there (its decision is
dropped, and the others are the same bit for bit: routing is row by row).

Finished batches are shards of a `WorkFolder`; `runner.routing.report.stream_report` counts over
them and writes ``decisions.parquet`` from them, one shard at a time.
"""

from __future__ import annotations

import logging
import time
from collections import Counter
from collections.abc import Iterable
from dataclasses import dataclass, field
from typing import Any

import numpy as np
import pandas as pd

from runner.data import duplicate_reason
from runner.errors import DataError
from runner.routing.contract import cascade
from runner.routing.route.work_folder import WorkFolder

log = logging.getLogger(__name__)

HIDDEN = ("_row", "_label", "_task")
"""Columns a shard keeps for the run's counts; ``decisions.parquet`` leaves them out."""


@dataclass
class RoutedBatch:
    """One routed batch: decisions (no ``audit`` yet), skipped rows and what it cost;
    ``last`` when ``limit`` ends the stream with it."""

    index: int
    decisions: pd.DataFrame
    skipped: list[dict]
    gate_seconds: float
    verifier: dict[str, float] | None = None
    last: bool = False


@dataclass(frozen=True)
class Admission:
    """What of one read batch is routed (`StreamDriver.admit`).

    Attributes
    ----------
    index : int
        The batch.
    keep : ndarray of int
        Positions in the batch's frame of the rows to route, in order.
    skipped : list of dict
        The batch's problems: the loader's, before the limit, and the repeated ids.
    last : bool
        The limit is reached in this batch: no later batch is read.
    """

    index: int
    keep: np.ndarray
    skipped: list[dict]
    last: bool = False

    def apply(self, batch: Any) -> Any:
        """`batch` with only the admitted rows and the admission's problems."""
        frame = batch.frame.iloc[self.keep].reset_index(drop=True)
        rows = [batch.rows[i] for i in self.keep]
        return type(batch)(batch.spec, frame, rows, list(self.skipped))


def route_frame(
    model: Any,
    frame: pd.DataFrame,
    on_unseen_source: str,
    training_sources: list[str],
    plan: cascade.RoutedCascade | None = None,
) -> tuple[pd.DataFrame, float, dict[str, float] | None]:
    """Decisions of one canonical frame, the gate's seconds and the verifier's cost.

    Columns, in ``decisions.parquet``'s order without ``audit``: ``id, risk, decision,
    source, unseen_source, model, reason`` and, with a cascade (`plan`), ``<name>_risk``
    (empty outside the rows sent to the verifier: the verify band, or none when the
    calibrated verifier accepts nothing) and ``final_decision``; then `HIDDEN`.
    """
    frame = frame.reset_index(drop=True)
    n = len(frame)
    start = time.perf_counter()
    if n:
        from runner.routing.model import INPUT_FIELDS  # MLflow's pyfunc: only when routing

        routed = model.pyfunc.predict(frame[list(INPUT_FIELDS)])
    else:
        routed = pd.DataFrame({"risk": np.zeros(0), "decision": np.zeros(0, dtype=object)})
    gate_seconds = time.perf_counter() - start
    decision = routed["decision"].to_numpy(dtype=object)
    is_unseen = ~frame["source"].astype(str).isin(set(training_sources)).to_numpy()
    reason = (
        routed["reason"].to_numpy(dtype=object).astype(str)
        if "reason" in routed
        else np.full(n, "", dtype=object)
    ).astype(object)
    if on_unseen_source == "review":
        decision[is_unseen] = "review"
        reason[is_unseen & (reason == "")] = "unseen source"
    decisions = pd.DataFrame(
        {
            "id": frame["example_id"].to_numpy(),
            "risk": routed["risk"].to_numpy(np.float64),
            "decision": decision.astype(str),
            "source": frame["source"].to_numpy(),
            "unseen_source": is_unseen,
            "model": f"{model.name}/{model.version}",
            "reason": reason.astype(str),
        }
    )
    cost = None
    if plan is not None:
        sent = (decisions["decision"].to_numpy() == "verify") & plan.sends
        scored = cascade.score_band(plan.verifier, frame, sent)
        risk = pd.array(scored.risk, dtype="Float64")
        risk[~sent] = pd.NA
        decisions[f"{plan.name}_risk"] = risk
        final = plan.decide(decisions["decision"].to_numpy(), scored.risk)
        decisions["final_decision"] = final.astype(str)
        cost = {
            "rows_sent": scored.rows_sent,
            "seconds": scored.ms_per_row * scored.rows_sent / 1000.0,
            "load_seconds": scored.load_seconds,
        }
    return decisions, gate_seconds, cost


class BatchRouter:
    """Routes any planned batch of a stream; the model is loaded once, when it is built.

    The local engine builds one in the driving process; the Ray engine one per worker
    (`runner.routing.route.engines`). `model_uri` names a fixed version (``models:/NAME/N``),
    so every worker routes with the model the run recorded, even if an alias moves.
    """

    def __init__(
        self,
        stream: Any,
        specs: list[Any],
        tracking_uri: str,
        model_uri: str,
        on_unseen_source: str,
        plan: cascade.RoutedCascade | None = None,
        model: Any = None,
    ) -> None:
        from runner.routing.route.registry import load_routed_model

        self.stream, self.specs = stream, {s.index: s for s in specs}
        # in the driving process the run's loaded model serves; a Ray worker loads its own
        self.model = model if model is not None else load_routed_model(tracking_uri, model_uri)
        self.training_sources = list(self.model.metadata.get("training_sources") or [])
        self.on_unseen_source = on_unseen_source
        self.plan = plan

    def read(self, index: int) -> Any:
        """Read and map batch `index` (a `runner.data.rag_stream.Batch`)."""
        return self.stream.read(self.specs[index])

    def __call__(self, index: int, admission: Admission) -> RoutedBatch:
        """Read batch `index` and route the rows `admission` admits (a Ray worker)."""
        return self.route(admission.apply(self.read(index)), admission.last)

    def route(self, batch: Any, last: bool = False) -> RoutedBatch:
        """Route an admitted batch: only its rows reach the gate and the verifier."""
        decisions, gate_seconds, cost = route_frame(
            self.model,
            batch.frame,
            self.on_unseen_source,
            self.training_sources,
            self.plan,
        )
        frame = batch.frame.reset_index(drop=True)
        decisions["_row"] = np.asarray(batch.rows, dtype=np.int64)
        decisions["_label"] = (
            frame["label"].to_numpy(dtype=np.int64)
            if self.stream.labelled
            else np.full(len(frame), -1, dtype=np.int64)
        )
        decisions["_task"] = frame["task"].astype(str).to_numpy(dtype=object)
        return RoutedBatch(batch.spec.index, decisions, batch.skipped, gate_seconds, cost, last)


@dataclass
class StreamDriver:
    """Admits batches in input order, stores them routed, keeps what crosses batches.

    Parameters
    ----------
    work : WorkFolder
    specs : list of BatchSpec
        The planned batches (for file names in messages).
    limit : int, optional
        Route only the first `limit` valid rows (``dataset.limit``).
    skip_invalid : bool
        A repeated id is listed as skipped (True) or stops the run (False).
    id_field : str
        The file's column holding ids (named in a duplicate's problem).
    ids_from_file : bool
        Whether ids come from the file (else from the content), for the duplicate reason.
    stream : the stream, optional
        Re-read to find where a repeated id was first seen when that batch is admitted but
        not routed yet (the Ray engine admits every batch before routing any).
    """

    work: WorkFolder | None
    specs: list[Any]
    limit: int | None = None
    skip_invalid: bool = False
    id_field: str = "id"
    ids_from_file: bool = True
    stream: Any = None
    routed: int = 0
    full: bool = False
    _seen: np.ndarray = field(default_factory=lambda: np.zeros(0, dtype=np.uint64))
    _admitted: dict[int, Admission] = field(default_factory=dict)

    def resume(self) -> list[int]:
        """Load the finished prefix of batches; return the indices still to route."""
        done = self.work.done
        if self.work.complete:
            return []
        prefix = 0
        while prefix in done:
            prefix += 1
        for index in range(prefix):
            ids = self.work.read(index, ["id"])["id"]
            self._remember(ids)
            self.routed += len(ids)
        return [s.index for s in self.specs if s.index >= prefix]

    def admit(self, batch: Any) -> Admission:
        """Which rows of `batch` (read, not routed; the next in order) are routed.

        A row whose id an earlier batch admitted is a problem of this row (raised, or
        listed with ``skip_invalid``); the rows after the limit-th valid row are not
        routed, and their problems are not reported, as the in-memory loader never reads
        them. Call in input order, once per batch.
        """
        if self.full:
            raise RuntimeError("StreamDriver.admit after the limit was reached")
        ids = batch.frame["example_id"].astype(str).to_numpy(dtype=object)
        rows = np.asarray(batch.rows, dtype=np.int64)
        keep, repeats = self._drop_repeats(batch.spec.index, ids, rows)
        skipped = list(batch.skipped) + repeats
        if repeats:  # else the loader's order, as the in-memory route lists them
            skipped.sort(key=lambda p: p["row"] if isinstance(p["row"], int) else -1)
        last = self.limit is not None and self.routed + keep.size >= self.limit
        if last:
            keep = keep[: self.limit - self.routed]
            last_row = int(rows[keep[-1]]) if keep.size else -1
            skipped = [p for p in skipped if not isinstance(p["row"], int) or p["row"] < last_row]
        self._remember(pd.Series(ids[keep]))
        self.routed += keep.size
        self.full = bool(last)
        admission = Admission(batch.spec.index, keep, skipped, bool(last))
        if self.stream is not None:
            self._admitted[admission.index] = admission
        return admission

    def take(self, batch: RoutedBatch) -> bool:
        """Store one routed batch (the next in order); False once ``limit`` is reached."""
        record = {
            "rows": len(batch.decisions),
            "skipped": batch.skipped,
            "gate_seconds": batch.gate_seconds,
            "verifier": batch.verifier,
        }
        self.work.write(batch.index, batch.decisions, record)
        self._admitted.pop(batch.index, None)
        if batch.last:
            self.work.finish(batch.index)
        return not batch.last

    def _remember(self, ids: pd.Series) -> None:
        hashes = pd.util.hash_array(ids.astype(str).to_numpy(dtype=object))
        self._seen = np.union1d(self._seen, hashes)

    def _drop_repeats(
        self, index: int, ids: np.ndarray, rows: np.ndarray
    ) -> tuple[np.ndarray, list[dict]]:
        """Positions to keep, and the problems of rows whose id an earlier batch admitted
        (a problem of the later row)."""
        everything = np.arange(ids.size)
        if not ids.size or not len(self._seen):
            return everything, []
        hits = np.flatnonzero(np.isin(pd.util.hash_array(ids), self._seen))
        if not hits.size:
            return everything, []
        first = self._first_rows({str(ids[i]) for i in hits}, index)
        spec = self.specs[index]
        repeats, problems = [], []
        for i in hits:
            ident = str(ids[i])
            if ident not in first:
                continue  # a hash collision, not a repeated id
            row = int(rows[i])
            first_file, first_row = first[ident]
            reason = duplicate_reason(
                ident,
                first_row,
                {"id"} if self.ids_from_file else set(),
                first_file if first_file != spec.file else None,
            )
            if not self.skip_invalid:
                raise DataError(reason, file=spec.file, row=row, field=self.id_field, ident=ident)
            log.warning("skipping %s row %s (id %r): %s", spec.file, row, ident, reason)
            problems.append(
                {
                    "file": spec.file,
                    "row": row,
                    "field": self.id_field,
                    "reason": reason,
                    "id": ident,
                }
            )
            repeats.append(i)
        keep = np.ones(ids.size, dtype=bool)
        keep[repeats] = False
        return np.flatnonzero(keep), problems

    def _first_rows(self, wanted: set[str], before: int) -> dict[str, tuple[str, int]]:
        """File and row of each wanted id's first occurrence in batches before `before`
        (exact): the file matters when the batches are a folder's shards."""
        found: dict[str, tuple[str, int]] = {}
        done = self.work.done if self.work is not None else {}
        for index in range(before):
            if index in done:
                shard = self.work.read(index, ["id", "_row"])
                ids, rows = shard["id"].astype(str), shard["_row"].to_numpy()
            elif index in self._admitted:
                admitted = self._admitted[index].apply(self.stream.read(self.specs[index]))
                ids, rows = admitted.frame["example_id"].astype(str), admitted.rows
            else:
                continue
            hit = np.flatnonzero(ids.isin(wanted - set(found)).to_numpy())
            for i in hit:
                found.setdefault(ids.iloc[i], (self.specs[index].file, int(rows[i])))
        return found


def drive(driver: StreamDriver, results: Iterable[RoutedBatch], progress: Any = None) -> None:
    """Store routed batches (in order) with `driver` until the stream or ``limit`` ends."""
    last = None
    for batch in results:
        last = batch.index
        more = driver.take(batch)
        if progress is not None:
            progress.update(1)
        if not more:
            return
    if not driver.work.complete:
        driver.work.finish(last if last is not None else max(driver.work.done, default=-1))


def unseen_before_routing(
    stream: Any, specs: list[Any], training_sources: list[str], admit: StreamDriver
) -> dict[str, int]:
    """Rows per unseen source over the rows the run would route, read before any is routed.

    Why a pass of its own: ``on_unseen_source=error`` must stop before any row is routed,
    as the whole-file route did; the sources are only known once every batch is read.
    `admit` (a `StreamDriver` without a work folder) drops repeated ids and stops at
    ``limit`` as the run will, so a row the run would not route is not counted.
    """
    seen: Counter[str] = Counter()
    known = set(training_sources)
    for spec in specs:
        batch = stream.read(spec)
        admission = admit.admit(batch)
        sources = batch.frame["source"].astype(str).to_numpy(dtype=object)[admission.keep]
        seen.update(s for s in sources.tolist() if s not in known)
        if admission.last:
            break
    return dict(sorted(seen.items()))
