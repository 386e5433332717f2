"""A team's RAG outputs read in batches: a JSONL file, a Parquet file or a folder of shards.

Why beside `runner.data.rag_file`: routing a week of logs must not hold the whole file in
memory, and a run killed at row 900,000 must be able to continue. Both need batches that
are fixed before any row is routed: a batch is a range of one file's rows (Parquet row
indices, JSONL lines), planned from the files alone, so it can be read again from anywhere
(a resumed run, a Ray worker) and always holds the same rows. Each batch is mapped by the
same rules as `load_rag_file` (`map_header`, `map_records`): the same ids, the same
problems, named by file, row and field.

Fields are decided once, before the first batch is routed: from the Parquet schema (every
shard of a folder must hold the same columns) or from the first batch of a JSONL file (a
field first seen in a later batch fails, naming its line). Repeated ids across batches and
``limit`` belong to the router (`runner.routing.route.stream`), which sees batches in order.
"""

from __future__ import annotations

import functools
from abc import ABC, abstractmethod
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, ClassVar

import pandas as pd
import pyarrow as pa
import pyarrow.parquet as pq

from runner.data.hashing import fingerprint_files, frame_fingerprint, sha256_file
from runner.data.rag_file import (
    FIELDS,
    GENERATED_IDS,
    IDS_FROM_FILE,
    LOADER_VERSION,
    canonical_frame,
    check_rag_file_settings,
    load_rag_file,
    map_header,
    map_records,
    with_ids,
)
from runner.data.row_issues import IssueLog
from runner.data.text_files import read_jsonl
from runner.errors import ConfigError, DataError, DataNotFoundError

STREAM_SUFFIXES = (".jsonl", ".parquet")
CANONICAL = ("example_id", "group_id", "task", "source", "question", "context", "answer")


@dataclass(frozen=True)
class BatchSpec:
    """Rows ``[start, stop)`` of one file: 0-based row indices of a Parquet file, 1-based
    line numbers of a JSONL file (``offset``: the byte where line ``start`` begins)."""

    index: int
    file: str
    start: int
    stop: int
    offset: int = 0


@dataclass
class Batch:
    """One batch, mapped: its valid rows (canonical frame), their row numbers, its problems."""

    spec: BatchSpec
    frame: pd.DataFrame
    rows: list[int]
    skipped: list[dict] = field(default_factory=list)


class RowStream(ABC):
    """A data set as planned batches: what `route` reads, whether from files or a frame.

    Why one interface: `route` has one path for a file read in batches (`RagStream`) and
    for a data set a loader has read whole (`FrameStream`); what differs between them is
    answered here, not probed by the study.
    """

    reads_in_batches: ClassVar[bool]
    """True when rows are read batch by batch (problems are found as batches are read)."""
    name: str
    files: list[str]
    fingerprint: str
    info: dict[str, Any]
    limit: int | None
    skip_invalid: bool

    @property
    @abstractmethod
    def labelled(self) -> bool:
        """Whether the rows carry labels."""

    @property
    @abstractmethod
    def ids(self) -> str:
        """Where the ids come from, as the run's summary says it (`IDS_FROM_FILE` or
        `GENERATED_IDS`)."""

    @property
    def ids_from_file(self) -> bool:
        """Whether the ids are the file's own (else made from each row's content)."""
        return self.ids == IDS_FROM_FILE

    @property
    def id_field(self) -> str:
        """The file's field holding the ids (named in a repeated id's problem)."""
        return "id"

    @property
    def where(self) -> str | None:
        """The file (or place) the rows come from, for messages."""
        return self.files[0] if self.files else self.info.get("location")

    @property
    def loader_skipped(self) -> list[dict]:
        """Rows the loader skipped before routing (``skip_invalid``), as problem records."""
        return []

    @property
    def rows_read(self) -> int | None:
        """Rows the loader read, when it read them all before routing (else None)."""
        return None

    @abstractmethod
    def plan(self, batch_rows: int) -> list[BatchSpec]:
        """The batches, at most `batch_rows` rows each."""

    @abstractmethod
    def read(self, spec: BatchSpec) -> Batch:
        """One batch's rows, mapped and checked."""


def as_stream(data: Any) -> RowStream:
    """`data` as batches: a `RowStream` as it is, a loaded data set as a `FrameStream`."""
    return data if isinstance(data, RowStream) else FrameStream(data)


class RagStream(RowStream):
    """The files of ``dataset=rag_file`` as batches (see the module docstring).

    Opening reads no row: it lists the files and hashes their bytes (the fingerprint, and
    the key a resumed run checks). `plan` fixes the batches; `read` maps one.
    """

    reads_in_batches = True

    def __init__(
        self,
        path: str,
        columns: dict[str, str] | None = None,
        extra_columns: str = "error",
        limit: int | None = None,
        skip_invalid: bool = False,
        name: str = "rag_file",
    ) -> None:
        self.columns = dict(columns or {})
        check_rag_file_settings(self.columns, extra_columns, limit)
        self.extra_columns, self.limit, self.skip_invalid = extra_columns, limit, skip_invalid
        self.name = name
        self.location = str(Path(path).expanduser())
        self.files = stream_files(path)
        self.format = Path(self.files[0]).suffix.lstrip(".")
        digests = {f: sha256_file(f) for f in self.files}
        params = {
            "columns": dict(sorted(self.columns.items())),
            "extra_columns": extra_columns,
            "limit": limit,
            "skip_invalid": skip_invalid,
            "name": name,
        }
        files_digest = (
            digests[self.files[0]] if len(self.files) == 1 else fingerprint_files(self.files)
        )
        self.fingerprint = frame_fingerprint(
            files_digest, "runner.data.rag_file", LOADER_VERSION, params
        )
        self.present: set[str] | None = None
        self.info: dict[str, Any] = {
            "origin": "local",
            "format": self.format,
            "streamed": True,
            "location": self.location,
            "files_sha256": digests,
        }

    @property
    def labelled(self) -> bool:
        """Whether the file has a ``label`` field (known once planned)."""
        return self.present is not None and "label" in self.present

    @property
    def ids(self) -> str:
        """Where the ids come from, as the run's summary says it."""
        return IDS_FROM_FILE if self.present and "id" in self.present else GENERATED_IDS

    @property
    def id_field(self) -> str:
        """The file's field mapped to ``id`` (``dataset.columns.id``)."""
        return self.columns.get("id", "id")

    def plan(self, batch_rows: int) -> list[BatchSpec]:
        """The batches, at most `batch_rows` rows each; fixes the fields (`present`)."""
        if batch_rows < 1:
            raise ConfigError(f"routing.batch_rows={batch_rows}: a positive number of rows")
        plan = _plan_parquet if self.format == "parquet" else _plan_jsonl
        specs, self.present = plan(self, batch_rows)
        self.info["fields_present"] = sorted(self.present)
        self.info["labelled"] = self.labelled
        self.info["ids"] = self.ids
        return specs

    def read(self, spec: BatchSpec) -> Batch:
        """Map one batch's rows; a bad row raises, or is listed when ``skip_invalid``."""
        if self.present is None:
            raise RuntimeError("RagStream.read before plan")
        issues = IssueLog(skip_invalid=self.skip_invalid)
        if self.format == "parquet":
            records = arrow_records(parquet_rows(spec.file, spec.start, spec.stop))
            rows = list(range(spec.start, spec.start + len(records)))
        else:
            pairs, _ = read_jsonl(
                Path(spec.file), issues, spec.offset, spec.start, spec.stop - spec.start
            )
            records, rows = [rec for _, rec in pairs], [line for line, _ in pairs]
            self._check_later_fields(records, rows, spec.file)
        out, kept = map_records(
            records, rows, self.present, self.columns, self.name, spec.file, issues
        )
        frame = (
            canonical_frame(out, self.labelled)
            if out
            else pd.DataFrame({c: pd.Series([], dtype=object) for c in (*CANONICAL, "label")})
        )
        skipped = with_ids(issues.skipped(), dict(zip(rows, records, strict=True)), self.columns)
        return Batch(spec, frame, kept, skipped)

    def _check_later_fields(self, records: list[dict], rows: list[int], file: str) -> None:
        """A JSONL field the first batch did not have fails here, naming its line."""
        known = {self.columns.get(f, f) for f in self.present or ()}
        inverse = {c: f for f, c in self.columns.items()}
        for row, rec in zip(rows, records, strict=True):
            for column in rec:
                field_name = inverse.get(column, column)
                if column in known or field_name not in FIELDS:
                    continue  # an unknown column is the mapping's business
                raise DataError(
                    f"field {field_name!r} first appears here, after the first batch fixed the "
                    f"fields {sorted(self.present or ())}; give every row of the first batch "
                    "the same fields (null for none)",
                    file=file,
                    row=row,
                    field=column,
                )


def stream_files(path: str) -> list[str]:
    """The files a path names: itself (.jsonl/.parquet) or a folder's Parquet shards, sorted."""
    target = Path(path).expanduser()
    if target.is_dir():
        shards = sorted(str(p) for p in target.iterdir() if p.suffix.lower() == ".parquet")
        if not shards:
            raise DataNotFoundError(
                f"{target} holds no .parquet shards: a folder is read as Parquet shards "
                "(part-00000.parquet, ...)"
            )
        return shards
    if target.suffix.lower() not in STREAM_SUFFIXES:
        raise ConfigError(f"dataset.path={path!r}: streams read {', '.join(STREAM_SUFFIXES)}")
    if not target.is_file():
        raise DataNotFoundError(f"{target} not found: set dataset.path=<your data file>")
    return [str(target)]


def open_stream(path: str, **settings: Any) -> Any:
    """`dataset=rag_file` for a study that reads in batches (`runner.studies.route`).

    A JSONL or Parquet file, or a folder of Parquet shards, streams (`RagStream`); a CSV
    (one text the CSV parser reads whole) is loaded by `load_rag_file` as before. The
    settings are `load_rag_file`'s (``columns``, ``extra_columns``, ``limit``,
    ``skip_invalid``, ``name``).
    """
    target = Path(path).expanduser()
    if target.is_dir() or target.suffix.lower() in STREAM_SUFFIXES:
        return RagStream(path, **settings)
    return load_rag_file(path, **settings)


# Its settings, their types and their check are `load_rag_file`'s: its config schema is
# derived from them (`runner.settings.derive` reads the signature through `__wrapped__`).
functools.update_wrapper(open_stream, load_rag_file, assigned=("__annotations__",))


def arrow_records(table: pa.Table) -> list[dict]:
    """The table's rows as dicts, exactly as ``table.to_pandas().to_dict("records")`` gives
    them: straight from Arrow (about five times faster) where the two agree — no null, and
    only string, integer and boolean columns — else through pandas, whose NaN for a null is
    what the row checks then name."""

    def plain(column: pa.ChunkedArray) -> bool:
        kind = column.type
        typed = pa.types.is_string(kind) or pa.types.is_large_string(kind)
        typed = typed or pa.types.is_integer(kind) or pa.types.is_boolean(kind)
        return typed and column.null_count == 0

    if all(plain(column) for column in table.columns):
        return table.to_pylist()
    return table.to_pandas().to_dict("records")


def parquet_rows(file: str, start: int, stop: int) -> pa.Table:
    """Rows ``[start, stop)`` of a Parquet file, decoding only the row groups they touch."""
    handle = pq.ParquetFile(file)
    groups, first, position = [], None, 0
    for g in range(handle.metadata.num_row_groups):
        n = handle.metadata.row_group(g).num_rows
        if position + n > start and position < stop:
            groups.append(g)
            first = position if first is None else first
        position += n
    parts, at = [], first or 0
    if groups:
        for batch in handle.iter_batches(
            batch_size=max(stop - start, 1), row_groups=groups, use_threads=False
        ):
            low, high = max(start - at, 0), min(stop - at, batch.num_rows)
            if high > low:
                parts.append(batch.slice(low, high - low))
            at += batch.num_rows
            if at >= stop:
                break
    return pa.Table.from_batches(parts, schema=handle.schema_arrow)


def _plan_parquet(stream: RagStream, batch_rows: int) -> tuple[list[BatchSpec], set[str]]:
    specs: list[BatchSpec] = []
    present: set[str] | None = None
    first_columns: list[str] = []
    for file in stream.files:
        try:
            handle = pq.ParquetFile(file)
        except Exception as exc:  # pyarrow raises several types for a broken file
            raise DataError(f"cannot read Parquet: {type(exc).__name__}: {exc}", file=file) from exc
        names = list(handle.schema_arrow.names)
        if present is None:
            present = map_header([dict.fromkeys(names)], stream.columns, stream.extra_columns, file)
            first_columns = names
        elif set(names) != set(first_columns):
            differ = sorted(set(names) ^ set(first_columns))
            raise DataError(
                f"shard's columns differ from {stream.files[0]}'s ({differ}): every shard "
                "of a folder holds the same columns",
                file=file,
                row="header",
                field=str(differ[0]),
            )
        n = handle.metadata.num_rows
        for start in range(0, n, batch_rows):
            specs.append(BatchSpec(len(specs), file, start, min(start + batch_rows, n)))
    if not specs:
        raise DataError("no rows: every shard is empty", file=stream.location)
    return specs, present or set()


def _plan_jsonl(stream: RagStream, batch_rows: int) -> tuple[list[BatchSpec], set[str]]:
    file = stream.files[0]
    specs: list[BatchSpec] = []
    offset, line = 0, 0
    with open(file, "rb") as handle:
        for line, raw in enumerate(handle, start=1):
            if (line - 1) % batch_rows == 0:
                specs.append(BatchSpec(len(specs), file, line, line + batch_rows, offset))
            offset += len(raw)
    if not specs:
        raise DataError("no rows: the file is empty", file=file)
    last = specs[-1]
    specs[-1] = BatchSpec(last.index, file, last.start, line + 1, last.offset)
    probe = IssueLog(skip_invalid=True)  # a bad line is reported when its batch is read
    for spec in specs:
        pairs, _ = read_jsonl(Path(file), probe, spec.offset, spec.start, spec.stop - spec.start)
        if pairs:
            records = [rec for _, rec in pairs]
            return specs, map_header(records, stream.columns, stream.extra_columns, file)
    # no line parses as a record: reading the first batch names the first problem
    stream.present = set()
    stream.read(specs[0])
    raise DataError("no rows: the file holds no JSON record", file=file)


class FrameStream(RowStream):
    """An in-memory data set (a CSV, MLflow traces, any loader's frame) seen as batches.

    Why: `route` has one path; a loader that cannot stream has read and checked its rows
    already, so its batches are slices of the frame and its skipped rows are the loader's.
    """

    reads_in_batches = False

    def __init__(self, data: Any) -> None:
        self.data = data
        self.name, self.files, self.fingerprint = data.name, data.files, data.fingerprint
        self.info = data.info
        self.frame = data.frame.reset_index(drop=True)
        self.skip_invalid = True
        self.limit = None

    @property
    def labelled(self) -> bool:
        """Whether the rows carry labels."""
        return bool(self.info.get("labelled"))

    @property
    def ids(self) -> str:
        """Where the ids come from, as the loader said."""
        return self.info.get("ids", IDS_FROM_FILE)

    @property
    def loader_skipped(self) -> list[dict]:
        """The rows the loader skipped (``dataset.skip_invalid=true``)."""
        return list(self.info.get("skipped") or [])

    @property
    def rows_read(self) -> int | None:
        """The rows the loader read."""
        return self.info.get("rows_read")

    def plan(self, batch_rows: int) -> list[BatchSpec]:
        """Slices of `batch_rows` rows."""
        if batch_rows < 1:
            raise ConfigError(f"routing.batch_rows={batch_rows}: a positive number of rows")
        where = self.files[0] if self.files else self.info.get("location") or self.name
        n = len(self.frame)
        return [
            BatchSpec(k, str(where), start, min(start + batch_rows, n))
            for k, start in enumerate(range(0, n, batch_rows))
        ]

    def read(self, spec: BatchSpec) -> Batch:
        """The slice; the loader has checked its rows."""
        frame = self.frame.iloc[spec.start : spec.stop].reset_index(drop=True)
        return Batch(spec, frame, list(range(spec.start, spec.stop)))
