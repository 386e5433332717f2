"""What a streamed route reports: counts over every shard, ``decisions.parquet``, the cascade.

Why apart from `runner.routing.route.stream`: routing a batch needs none of this; once every
batch is in, the run's tables, summary and decisions file are computed from the shards of
the `WorkFolder`, read a few columns at a time, so memory holds a few bytes per row
(`Totals`) and one shard, never the decisions of the whole stream.

`shift_check` asks whether the routed traffic still looks like the rows the thresholds
were calibrated on (`runner.routing.audit.shift`): rows from sources the gate never saw, and a
KS test of the routed gate risks (the shards' ``risk`` column, read shard by shard)
against the model's ``calibration_profile``. Every guarantee of the contract assumes that
exchangeability, so a flag is said loudly (log, ``summary.json``, table ``shift``, run tag
``shift_flagged``), never silently.
"""

from __future__ import annotations

import logging
from collections import Counter
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import numpy as np
import pandas as pd
import pyarrow as pa
import pyarrow.parquet as pq

from runner.data import RowStream
from runner.results import StudyResult
from runner.routing.audit import shift
from runner.routing.contract import RoutedCascade
from runner.routing.route import HIDDEN, WorkFolder, traffic

log = logging.getLogger(__name__)

BANDS = ("accept", "review", "verify")
NO_PROFILE = (
    "the model version was registered before fit_gate kept its calibration risk profile "
    "(metadata calibration_profile): refit to have the risk test"
)


@dataclass
class Totals:
    """What the run reports, counted over every routed row (shards read column-wise).

    ``decision``/``final``: the bands as a code per row into `BANDS`; ``labels``: int64 per
    row (-1 when unlabelled); the rest are counters and sums over batches.
    """

    decision: np.ndarray
    final: np.ndarray | None
    labels: np.ndarray
    unseen: dict[str, int]
    per_source: dict[str, int]
    per_task: dict[str, int]
    skipped: list[dict]
    gate_seconds: float
    verifier: dict[str, float] | None
    batches: int

    @property
    def rows(self) -> int:
        """Routed rows."""
        return int(self.decision.size)

    def names(self, codes: np.ndarray) -> np.ndarray:
        """Band names of codes, as the in-memory path holds them."""
        return np.asarray(BANDS, dtype=object)[codes]


def _codes(values: pd.Series) -> np.ndarray:
    codes = pd.Categorical(values.astype(str), categories=BANDS).codes
    if (codes < 0).any():
        raise ValueError(f"unexpected decision in a shard: {set(values) - set(BANDS)}")
    return codes.astype(np.int8)


def count(work: WorkFolder, cascade: bool) -> Totals:
    """Read every shard of a complete stream once, a few columns at a time."""
    decision, final, labels = [], [], []
    unseen: Counter[str] = Counter()
    per_source: Counter[str] = Counter()
    per_task: Counter[str] = Counter()
    skipped: list[dict] = []
    gate_seconds, verifier = 0.0, None
    columns = ["decision", "source", "unseen_source", "_label", "_task"]
    if cascade:
        columns.append("final_decision")
    done = work.done
    for index in range(int(work.last) + 1 if work.last is not None else 0):
        shard = work.read(index, columns)
        decision.append(_codes(shard["decision"]))
        if cascade:
            final.append(_codes(shard["final_decision"]))
        labels.append(shard["_label"].to_numpy(np.int64))
        sources = shard["source"].astype(str)
        unseen.update(sources[shard["unseen_source"].to_numpy(bool)].tolist())
        per_source.update(sources.tolist())
        per_task.update(shard["_task"].astype(str).tolist())
        record = done[index]
        skipped.extend(record["skipped"])
        gate_seconds += float(record["gate_seconds"])
        if record.get("verifier"):
            verifier = verifier or {"rows_sent": 0, "seconds": 0.0, "load_seconds": 0.0}
            for key in verifier:
                verifier[key] += record["verifier"][key]
    join = np.concatenate
    return Totals(
        decision=join(decision) if decision else np.zeros(0, np.int8),
        final=(join(final) if final else np.zeros(0, np.int8)) if cascade else None,
        labels=join(labels) if labels else np.zeros(0, np.int64),
        unseen=dict(sorted(unseen.items())),
        per_source=dict(sorted(per_source.items())),
        per_task=dict(sorted(per_task.items())),
        skipped=skipped,
        gate_seconds=gate_seconds,
        verifier=verifier,
        batches=int(work.last) + 1 if work.last is not None else 0,
    )


class DecisionsFile:
    """``decisions.parquet`` assembled from the shards, with the audit mark, shard by shard.

    One shard is written exactly as the in-memory path writes its frame
    (`runner.reporting.outputs.write_parquet`), so a small input gives the same bytes;
    several become one file with a row group per shard, in flat memory.
    """

    def __init__(self, work: WorkFolder, batches: int, audit: np.ndarray) -> None:
        self.work, self.batches, self.audit = work, batches, audit

    def frames(self) -> Iterator[pd.DataFrame]:
        """Each shard as its rows of ``decisions.parquet``, in order."""
        start = 0
        for index in range(self.batches):
            shard = self.work.read(index).drop(columns=list(HIDDEN))
            shard.insert(3, "audit", self.audit[start : start + len(shard)])
            start += len(shard)
            yield shard

    def frame(self) -> pd.DataFrame:
        """All decisions in memory (for inputs that were in memory already, e.g. traces)."""
        return pd.concat(list(self.frames()), ignore_index=True)

    def write_to(self, path: Path) -> None:
        """Write ``decisions.parquet`` at `path`."""
        from runner.reporting import write_parquet

        if self.batches == 1:
            write_parquet(next(self.frames()), path)
            return
        writer = None
        try:
            for shard in self.frames():
                table = pa.Table.from_pandas(shard, preserve_index=False)
                if writer is None:
                    writer = pq.ParquetWriter(path, table.schema)
                writer.write_table(table.cast(writer.schema))
        finally:
            if writer is not None:
                writer.close()


def audit_mask(totals: Totals, fraction: float, seed: int) -> np.ndarray:
    """The audit sample over the whole stream (the in-memory path's draw, same ids), drawn
    from the rows finally accepted: with a cascade, the verifier's accepts too, so the
    audit watches the accepted risk the cascade's bound is about."""
    accepted = totals.decision if totals.final is None else totals.final
    return traffic.audit_sample(totals.names(accepted), fraction, seed)


def decision_counts(names: np.ndarray) -> dict[str, int]:
    """Rows per decision, sorted by name, present decisions only (as ``value_counts``)."""
    values, counts = np.unique(names.astype(str), return_counts=True)
    return {str(v): int(c) for v, c in zip(values, counts, strict=True)}


def stream_info(totals: Totals, counts: dict[str, int], skipped: Any, labelled: bool) -> dict:
    """What the run's manifest says of streamed data (a loader says it of a loaded frame)."""
    info = {
        "rows": totals.rows,
        "counts_per_source": totals.per_source,
        "counts_per_task": totals.per_task,
        "skipped": skipped.to_dict("records"),
        "skipped_rows": counts["skipped"],
        "rows_read": counts["read"],
        "groups": "not counted when streamed",
    }
    if labelled:
        info["positives"] = int(totals.labels.sum())
    return info


def cascade_record(
    plan: RoutedCascade, names: np.ndarray, totals: Totals, gate_ms: float
) -> dict[str, Any]:
    """The cascade's record (runtime, summary): how it decides, rows sent and what the
    verifier cost."""
    cost = totals.verifier or {"rows_sent": 0, "seconds": 0.0, "load_seconds": 0.0}
    rows_sent = int(cost["rows_sent"])
    ms_per_row = cost["seconds"] * 1000.0 / rows_sent if rows_sent else 0.0
    threshold = plan.threshold
    return {
        "verifier": plan.name,
        # -inf: a calibrated cascade whose verifier accepts nothing (JSON has no infinity)
        "threshold": threshold if np.isfinite(threshold) else str(threshold),
        "threshold_source": plan.source,
        "calibrated": plan.calibrated,
        "not_accepted_by_verifier": plan.not_accepted,
        "verify_rows": int((names == "verify").sum()),
        "rows_sent_to_verifier": rows_sent,
        "verifier_ms_per_verified_row": ms_per_row,
        "verifier_load_seconds": cost["load_seconds"],
        "cascade_ms_per_example": gate_ms + rows_sent / names.size * ms_per_row,
        "verifier_on_every_row_ms_per_example": ms_per_row,
        "note": "verifier on every row is the measured per-row verifier cost on the verify band",
    }


def add_final_table(
    result: StudyResult, names: np.ndarray, final: np.ndarray, sent: int, not_accepted: str
) -> None:
    """The ``final`` table: rows sent to the verifier and the final decisions (verified:
    of the rows sent; a band row the verifier does not accept is `not_accepted`)."""
    n = names.size
    verified = (names == "verify") & (sent > 0)  # the whole band is sent, or none of it
    result.add("final", "sent to verifier", "rows", sent)
    result.add("final", "sent to verifier", "share", sent / n)
    for outcome in dict.fromkeys(("accept", not_accepted, "review")):
        for source, mask in (("verified", verified), ("total", np.ones(n, dtype=bool))):
            count = int(((final == outcome) & mask).sum())
            result.add("final", f"{outcome} ({source})", "rows", count)
            result.add("final", f"{outcome} ({source})", "share", count / n)


def add_row_counts(result: StudyResult, rows: RowStream, totals: Totals) -> tuple[dict, Any]:
    """The ``rows`` table (read, routed, skipped); the counts and the skipped rows."""
    skipped = traffic.skipped_rows(rows.loader_skipped + totals.skipped)
    counts = traffic.row_counts(rows.rows_read, totals.rows, len(skipped))
    result.titles["rows"] = f"Input rows: {traffic.accounting(counts)}"
    for key, value in counts.items():
        result.add("rows", "input", key, value)
    return counts, skipped


def add_decision_counts(result: StudyResult, totals: Totals, audit: Any) -> Any:
    """The ``decisions`` table; each routed row's decision name."""
    names = totals.names(totals.decision)
    for band in ("accept", "verify", "review"):
        count = int((names == band).sum())
        result.add("decisions", band, "rows", count)
        result.add("decisions", band, "share", count / totals.rows)
    result.add("decisions", "audit", "rows", int(audit.sum()))
    result.add("decisions", "unseen source", "rows", int(sum(totals.unseen.values())))
    return names


def add_cascade(
    result: StudyResult, plan: RoutedCascade, names: Any, final: Any, totals: Totals
) -> dict[str, Any]:
    """The ``final`` table (the verifier decides the verify band); the cascade's record."""
    gate_ms = totals.gate_seconds * 1000.0 / totals.rows
    info = cascade_record(plan, names, totals, gate_ms)
    add_final_table(result, names, final, info["rows_sent_to_verifier"], plan.not_accepted)
    return info


def add_realised(result: StudyResult, model: Any, labels: Any, names: Any, final: Any) -> None:
    """The ``realised`` table: this file's review precision and accepted risk beside the
    model's out-of-fold promise (and after the verifier)."""
    promise = model.metadata.get("oof_realised") or {}
    for key, value in traffic.realised(labels, names).items():
        result.add("realised", key, "this file", value)
    if final is not None:
        for key, value in traffic.realised(labels, final).items():
            result.add("realised", key, "after verifier", value)
    result.add("realised", "review precision", "OOF promise", promise.get("review_precision"))
    result.add("realised", "accepted risk", "OOF promise", promise.get("accepted_risk"))


def summary(
    routing: Any, model: Any, rows: RowStream, counts: dict, names: Any, audit: Any, totals: Totals
) -> dict[str, Any]:
    """``summary.json``: the model, the row accounting and what was decided."""
    return {
        "model": {
            "uri": model.uri,
            "name": model.name,
            "version": model.version,
            "training_run_id": model.run_id,
        },
        "rows": {**counts, "accounting": traffic.accounting(counts)},
        "ids": rows.ids,
        "counts": decision_counts(names),
        "audit_rows": int(audit.sum()),
        "unseen_sources": totals.unseen,
        "on_unseen_source": routing.on_unseen_source,
        "training_sources": list(model.metadata.get("training_sources") or []),
        "thresholds": model.metadata.get("thresholds"),
    }


def routed_risks(work: WorkFolder, batches: int) -> np.ndarray:
    """The gate risk of every routed row, read shard by shard (the ``risk`` column only)."""
    parts = [work.read(index, ["risk"])["risk"].to_numpy(np.float64) for index in range(batches)]
    return np.concatenate(parts) if parts else np.zeros(0, np.float64)


def shift_check(work: WorkFolder, totals: Totals, model: Any) -> dict[str, Any]:
    """Has the routed traffic moved from the calibration data? The ``shift`` block.

    Flagged when any row comes from a source the gate was not fitted on, or when the KS
    test of the routed risks against the model's ``calibration_profile`` rejects at
    `shift.SHIFT_P`. A model without a profile (registered before it was kept) has the
    risk test ``available: false``, and only the source check decides.
    """
    unseen = int(sum(totals.unseen.values()))
    share = unseen / totals.rows if totals.rows else 0.0
    profile = model.metadata.get("calibration_profile")
    risk_test: dict[str, Any]
    if profile is None:
        risk_test, risk_flag = {"available": False, "why": NO_PROFILE}, False
    elif totals.rows == 0:
        risk_test, risk_flag = {"available": False, "why": "no routed rows"}, False
    else:
        test = shift.risk_shift(profile, routed_risks(work, totals.batches))
        risk_test, risk_flag = {"available": True, **test.to_dict()}, test.flagged
    reasons = []
    if unseen:
        reasons.append(f"{unseen} of {totals.rows} rows ({share:.1%}) from unseen sources")
    if risk_flag:
        reasons.append(
            f"routed risks unlike the calibration risks (KS p = {risk_test['p_value']:.3g} "
            f"< {risk_test['level']})"
        )
    if reasons:
        why = "; ".join(reasons)
    elif risk_test["available"]:
        why = (
            f"no unseen source; routed risks like the calibration risks (KS p = "
            f"{risk_test['p_value']:.3g})"
        )
    else:
        why = f"no unseen source; risk test not available: {risk_test['why']}"
    return {
        "flagged": bool(reasons),
        "unseen_source_rows": unseen,
        "unseen_source_share": share,
        "risk_test": risk_test,
        "why": why,
    }


def add_shift(result: StudyResult, block: dict[str, Any]) -> None:
    """The ``shift`` table, the run tag ``shift_flagged`` and the metrics
    ``unseen_source_share`` and ``shift_ks_p`` (when the risk test ran); warns when flagged."""
    test = block["risk_test"]
    result.add("shift", "routed", "unseen source share", block["unseen_source_share"])
    result.add("shift", "routed", "KS statistic", test.get("statistic"))
    result.add("shift", "routed", "KS p", test.get("p_value"))
    result.add("shift", "routed", "flagged", float(block["flagged"]))
    result.tags["shift_flagged"] = str(block["flagged"]).lower()
    result.metrics["unseen_source_share"] = block["unseen_source_share"]
    if test.get("available"):
        result.metrics["shift_ks_p"] = test["p_value"]
    if block["flagged"]:
        log.warning(
            "TRAFFIC SHIFT: %s. The contract's guarantee assumes traffic like the "
            "calibration data; audit this traffic before trusting its accepted risk",
            block["why"],
        )
