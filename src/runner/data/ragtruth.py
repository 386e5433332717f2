"""RAGTruth as a canonical response-level frame, from the processed parquet or the original JSONL.

RAGTruth (Niu et al., 2024) ships in two forms. The processed one on the Hub
(``wandb/RAGTruth-processed``, one parquet per split) has a row per response and its span
labels as a JSON string; it is what the offline data directory holds. The original release
(``response.jsonl`` + ``source_info.jsonl``) keeps sources and responses apart. Both map to
the same columns, so a study does not care which one a user has.

Mapping (processed): ``example_id`` = id, ``task`` = ``source`` = task_type (QA, Summary,
Data2txt), ``question`` = query, ``context`` = context, ``answer`` = output, ``spans`` = the
parsed span list, ``label`` = 1 iff it is non-empty (as in the RAGTruth paper: any annotated
span, ``implicit_true`` ones included), ``group_id`` = ``task:sha1(context)[:16]`` (the
processed form has no source id; a source is its task and context). Extra columns: ``model``,
``temperature``, ``quality``.

Mapping (original): as above with ``response`` as the answer and, from ``source_info``:
QA ``question``/``passages``; Summary the article text (question ""); Data2txt the
structured record as its Python repr, which is how the generation prompt showed it
(question ""). ``group_id`` = ``task:source_id``. Extra columns: ``model``, ``temperature``,
``quality``, ``source_id`` and ``source_corpus`` (MARCO, CNN/DM, Recent News, Yelp).
The two forms name the same source differently; grouped folds and the group bootstrap
order groups by their smallest example id (`runner.evaluation.group_order`), not by name,
so both forms get the same folds and resamples.
The processed form's contexts keep prompt residue ("\\n\\noutput:" after every Summary
article; "\\n" before and "\\nOverview:" after every Data2txt record); the original form's
do not, so the two forms give equal answers and labels but not byte-equal contexts.
"""

from __future__ import annotations

import hashlib
import json
import logging
import os
from pathlib import Path
from typing import Any

import numpy as np
import pandas as pd

from runner.data.base import LoadedData, Located, located_info
from runner.data.hashing import fingerprint_files, frame_fingerprint, group_key
from runner.data.hub import load_hub_split
from runner.data.response_frame import as_id, check_columns, require_rows, screen_rows, summarise
from runner.data.row_issues import IssueLog, is_missing
from runner.data.split_files import check_split_file
from runner.data.text_files import read_jsonl
from runner.errors import ConfigError, DataError, DataNotFoundError
from runner.frames import REQUIRED_COLUMNS
from runner.paths import data_dir as default_data_dir
from runner.settings import checked_by

logger = logging.getLogger(__name__)

LOADER_VERSION = 1
"""Bump when the mapping changes, so fingerprints (and caches keyed on them) change too."""

HUB_ID = "wandb/RAGTruth-processed"
SPLITS = ("train", "test")
"""RAGTruth's splits (both forms); anything else is a `ConfigError`, not a Hub lookup."""
TASKS = ("QA", "Summary", "Data2txt")
FORMATS = ("auto", "processed", "original")
PROCESSED_COLUMNS = ("id", "query", "context", "output", "task_type", "hallucination_labels")
RESPONSE_FILE = "response.jsonl"
SOURCE_FILE = "source_info.jsonl"
_EXTRAS = ("model", "temperature", "quality")


def check_ragtruth_settings(name: str, split: str, path: Any, **_: Any) -> None:
    """Refuse a split the release does not have, before any file is read (run by the schema)."""
    check_split_file(name, split, path, SPLITS)


@checked_by(check_ragtruth_settings)
def load_ragtruth(
    split: str = "test",
    path: str | os.PathLike | None = None,
    format: str = "auto",
    hub_id: str = HUB_ID,
    limit: int | None = None,
    skip_invalid: bool = False,
    data_dir: str | os.PathLike | None = None,
    name: str = "ragtruth",
) -> LoadedData:
    """Load one RAGTruth split as a canonical response-level frame (`runner.data.base`).

    Sources, first found wins: ``path`` (a processed parquet file; a folder holding
    ``{split}.parquet`` or the original pair ``response.jsonl`` + ``source_info.jsonl``; or
    a ``response.jsonl`` with ``source_info.jsonl`` beside it); else
    ``<data_dir>/ragtruth/``; else the Hub's processed split, unless ``format`` is
    ``original``; else a `DataNotFoundError` says where to put the files and how to get them.

    ``split`` is ``test`` (2,700 rows) or ``train`` (15,090): it names the parquet file in
    a folder and filters the original JSONL's ``split`` field; any other split, or a
    ``path`` file named after the other split (``test.parquet`` with ``split="train"``), is
    a `ConfigError`. ``format`` (``auto``, ``processed``, ``original``): ``auto`` decides
    from the path (``.parquet`` processed, ``.jsonl`` original; in a folder
    ``{split}.parquet`` first); a path and format that disagree are a `ConfigError`.
    ``limit`` applies before validation. A bad row (malformed JSON, an unparsable or
    out-of-range span list, an empty answer or context, a duplicate id, an unknown source
    id) is named by file, row (the 0-based row for parquet and the Hub, the 1-based line
    for JSONL) and field. ``info`` adds ``format``, ``split``, ``limit`` and
    ``files_sha256``.
    """
    _check_settings(split, path, format, limit, name)
    issues = IssueLog(skip_invalid)
    params = {"split": split, "limit": limit, "skip_invalid": skip_invalid}
    found = _locate(split, path, format, data_dir, hub_id)
    located, kind, frame = _read(found, split, hub_id, limit, issues)
    require_rows(frame, located.where, issues)
    return _record(frame, located, issues, name, kind, params)


def _check_settings(
    split: str, path: str | os.PathLike | None, format: str, limit: int | None, name: str
) -> None:
    """Refuse an unknown ``format``, a ``limit`` below 1 or a split the release lacks."""
    if format not in FORMATS:
        raise ConfigError(f"ragtruth: format must be one of {FORMATS}, got {format!r}")
    if limit is not None and limit < 1:
        raise ConfigError(f"ragtruth: limit must be a positive integer or null, got {limit!r}")
    check_split_file(name, split, path, SPLITS)


def _read(
    found: tuple | None, split: str, hub_id: str, limit: int | None, issues: IssueLog
) -> tuple[Located, str, pd.DataFrame]:
    """Where the rows are, their form, and the split mapped to the canonical frame.

    ``found`` is `_locate`'s answer (None: the Hub's processed split).
    """
    if found is None:
        hub_split = load_hub_split(hub_id, split, _how_to(split, hub_id))
        where = ", ".join(hub_split.files) or hub_id
        located = Located(hub_split.files, hub_split.digest, "hub", where, hub_id)
        label = f"hf://datasets/{hub_id} (split {split})"
        return located, "processed", _from_processed(hub_split.frame, label, limit, issues)
    files = [str(f) for f in found[1:]]
    located = Located(files, fingerprint_files(files), "local", ", ".join(files))
    if found[0] == "processed":
        raw = _read_parquet(found[1])
        return located, "processed", _from_processed(raw, files[0], limit, issues)
    return located, "original", _from_original(found[1], found[2], split, limit, issues)


def _record(
    frame: pd.DataFrame,
    located: Located,
    issues: IssueLog,
    name: str,
    kind: str,
    params: dict[str, Any],
) -> LoadedData:
    """The result: ``info``, and a fingerprint of the files, the form and ``params``."""
    split, limit = params["split"], params["limit"]
    info = located_info(summarise(frame), located, issues, format=kind, split=split, limit=limit)
    fingerprint = frame_fingerprint(located.digest, f"ragtruth/{kind}", LOADER_VERSION, params)
    logger.info(
        "ragtruth %s: %d rows, %d groups from %s (%d rows skipped)",
        split,
        info["rows"],
        info["groups"],
        located.origin,
        info["skipped_rows"],
    )
    return LoadedData(
        name=name, frame=frame, files=located.files, fingerprint=fingerprint, info=info
    )


def _locate(
    split: str,
    path: str | os.PathLike | None,
    format: str,
    data_dir: str | os.PathLike | None,
    hub_id: str,
) -> tuple | None:
    """``("processed", parquet)``, ``("original", responses, sources)``, or None for the Hub."""
    if path is not None:
        target = Path(path).expanduser()
        if not target.exists():
            raise DataNotFoundError(
                f"ragtruth: path {target} does not exist. {_how_to(split, hub_id)}"
            )
        found = _in_path(target, split, format)
        if found is None:
            raise DataNotFoundError(
                f"ragtruth: {target} holds neither {split}.parquet nor the original pair "
                f"{RESPONSE_FILE} + {SOURCE_FILE} (format={format!r})"
            )
        return found
    root = Path(data_dir).expanduser() if data_dir is not None else default_data_dir()
    found = None
    if root is not None and (root / "ragtruth").is_dir():
        found = _in_path(root / "ragtruth", split, format)
    if found is None and format == "original":
        where = root / "ragtruth" if root is not None else "$RUNNER_DATA_DIR/ragtruth (unset)"
        raise DataNotFoundError(
            f"ragtruth: format='original' needs {RESPONSE_FILE} + {SOURCE_FILE}; none in "
            f"{where}. Pass path= to the folder holding them (the Hub has only the processed "
            "form, so there is no Hub fallback for this format)."
        )
    return found


def _in_path(target: Path, split: str, format: str) -> tuple | None:
    if target.is_file():
        suffix = target.suffix.lower()
        kind = (
            format
            if format != "auto"
            else {".parquet": "processed", ".jsonl": "original"}.get(suffix)
        )
        if kind == "processed":
            return ("processed", target)
        if kind == "original":
            sources = target.parent / SOURCE_FILE
            if not sources.is_file():
                raise DataNotFoundError(
                    f"ragtruth: original format needs {SOURCE_FILE} beside {target}; not found"
                )
            return ("original", target, sources)
        raise ConfigError(
            f"ragtruth: cannot tell the format of {target} (expected .parquet or .jsonl); "
            "set format to 'processed' or 'original'"
        )
    parquet = target / f"{split}.parquet"
    responses, sources = target / RESPONSE_FILE, target / SOURCE_FILE
    if format in ("auto", "processed") and parquet.is_file():
        return ("processed", parquet)
    if format in ("auto", "original") and responses.is_file():
        if not sources.is_file():
            raise DataNotFoundError(
                f"ragtruth: {responses} found but {SOURCE_FILE} is missing beside it"
            )
        return ("original", responses, sources)
    return None


def _how_to(split: str, hub_id: str) -> str:
    target = f"$RUNNER_DATA_DIR/ragtruth/{split}.parquet"
    return (
        f"Put the processed RAGTruth parquet at {target} (set RUNNER_DATA_DIR, or pass "
        "data_dir= / path=), or download it from the Hub id "
        f'{hub_id} with: python -c "import os; from datasets import load_dataset; '
        f"load_dataset('{hub_id}', split='{split}').to_parquet("
        f"os.path.expandvars('{target}'))\" (the folder must exist)."
    )


def _read_parquet(path: Path) -> pd.DataFrame:
    try:
        return pd.read_parquet(path)
    except Exception as exc:  # pyarrow raises several types for a broken file
        raise DataError(
            f"cannot read parquet: {type(exc).__name__}: {exc}", file=str(path)
        ) from exc


def _from_processed(
    raw: pd.DataFrame, file: str, limit: int | None, issues: IssueLog
) -> pd.DataFrame:
    """Map processed rows (index = 0-based row) to the canonical frame, validated."""
    check_columns(raw, file, PROCESSED_COLUMNS)
    raw = raw.reset_index(drop=True)
    if limit is not None:
        raw = raw.iloc[:limit]
    rows = list(range(len(raw)))
    spans: list[Any] = []
    parsed_ok = np.ones(len(raw), dtype=bool)
    for pos, value in enumerate(raw["hallucination_labels"].tolist()):
        parsed, reason = _parse_spans(value)
        if reason is not None:
            issues.add(file, pos, "hallucination_labels", reason)
            parsed_ok[pos] = False
        spans.append(parsed)
    ids = raw["id"].tolist()
    tasks = raw["task_type"].tolist()
    contexts = raw["context"].tolist()
    frame = pd.DataFrame(
        {
            "example_id": [as_id(v) for v in ids],
            "group_id": [_group(t, c) for t, c in zip(tasks, contexts, strict=True)],
            "task": tasks,
            "source": tasks,
            "question": raw["query"].tolist(),
            "context": contexts,
            "answer": raw["output"].tolist(),
            "label": [int(len(s) > 0) if ok else 0 for s, ok in zip(spans, parsed_ok, strict=True)],
            "spans": spans,
        }
    )
    for extra in _EXTRAS:
        if extra in raw.columns:
            frame[extra] = raw[extra].to_numpy()  # values and dtype as in the file
    _check_tasks(frame, [file] * len(frame), rows, issues, parsed_ok)
    keep = parsed_ok
    frame = frame.loc[keep].reset_index(drop=True)
    rows = [r for r, k in zip(rows, keep, strict=True) if k]
    return screen_rows(frame, [file] * len(frame), rows, issues)


def _from_original(
    responses: Path, sources: Path, split: str, limit: int | None, issues: IssueLog
) -> pd.DataFrame:
    """Join the original pair, keep one split, map to the canonical frame, validate."""
    by_id = _sources_by_id(sources, issues)
    chosen = _split_responses(responses, split, limit, issues)
    records, rows = [], []
    for line, record in chosen:
        mapped = _map_response(record, by_id, str(responses), line, issues)
        if mapped is not None:
            records.append(mapped)
            rows.append(line)
    columns = [*REQUIRED_COLUMNS, "spans", *_EXTRAS, "source_id", "source_corpus"]
    frame = pd.DataFrame.from_records(records, columns=columns)
    return screen_rows(frame, [str(responses)] * len(frame), rows, issues)


def _sources_by_id(sources: Path, issues: IssueLog) -> dict[str, dict[str, Any]]:
    """``source_info.jsonl`` mapped (`_map_source`) and keyed by source id; a repeated id is
    a bad row."""
    source_rows, _ = read_jsonl(sources, issues)
    by_id: dict[str, dict[str, Any]] = {}
    for line, record in source_rows:
        mapped = _map_source(record, str(sources), line, issues)
        if mapped is None:
            continue
        if mapped["source_id"] in by_id:
            first = by_id[mapped["source_id"]]["line"]
            issues.add(
                str(sources),
                line,
                "source_id",
                f"duplicate source_id {mapped['source_id']!r} (first at line {first})",
            )
            continue
        by_id[mapped["source_id"]] = mapped
    return by_id


def _split_responses(
    responses: Path, split: str, limit: int | None, issues: IssueLog
) -> list[tuple[int, dict[str, Any]]]:
    """The (line, record) pairs of ``response.jsonl`` in ``split``, up to ``limit``; a file
    with responses but none of this split is an error (naming the splits it has)."""
    response_rows, _ = read_jsonl(responses, issues)
    splits_seen = sorted({str(r.get("split")) for _, r in response_rows})
    chosen = [(n, r) for n, r in response_rows if r.get("split") == split]
    if not chosen and response_rows:
        raise DataError(
            f"no response has split {split!r} (splits present: {', '.join(splits_seen)})",
            file=str(responses),
            field="split",
        )
    if limit is not None:
        chosen = chosen[:limit]
    return chosen


def _map_source(
    record: dict[str, Any], file: str, line: int, issues: IssueLog
) -> dict[str, Any] | None:
    """One source_info.jsonl record as task, question, context; None if it is bad."""
    for key in ("source_id", "task_type", "source_info"):
        if key not in record or is_missing(record[key]):
            issues.add(file, line, key, "missing")
            return None
    task = record["task_type"]
    if task not in TASKS:
        issues.add(file, line, "task_type", f"must be one of {TASKS}, got {task!r}")
        return None
    texts = _source_texts(task, record["source_info"], file, line, issues)
    if texts is None:
        return None
    question, context = texts
    return {
        "source_id": as_id(record["source_id"]),
        "task": task,
        "question": question,
        "context": context,
        "corpus": record.get("source"),
        "line": line,
    }


def _source_texts(
    task: str, info: Any, file: str, line: int, issues: IssueLog
) -> tuple[str, str] | None:
    """A source's question and context by task (see the module docstring); None if bad."""
    if task == "QA":
        if not isinstance(info, dict):
            issues.add(
                file,
                line,
                "source_info",
                f"QA source_info must be a dict with question and passages, got "
                f"{type(info).__name__}",
            )
            return None
        for key in ("question", "passages"):
            if not isinstance(info.get(key), str):
                issues.add(file, line, f"source_info.{key}", "missing or not a string")
                return None
        return info["question"], info["passages"]
    if isinstance(info, str):
        return "", info
    if isinstance(info, dict) and task == "Data2txt":
        return "", repr(info)
    issues.add(
        file,
        line,
        "source_info",
        f"{task} source_info must be a string{' or dict' if task == 'Data2txt' else ''}, "
        f"got {type(info).__name__}",
    )
    return None


def _map_response(
    record: dict[str, Any],
    by_id: dict[str, dict[str, Any]],
    file: str,
    line: int,
    issues: IssueLog,
) -> dict[str, Any] | None:
    """One response.jsonl record joined with its source; None if it is bad."""
    for key in ("id", "source_id", "labels", "response"):
        if key not in record:
            issues.add(file, line, key, "missing")
            return None
    source_id = as_id(record["source_id"])
    source = by_id.get(source_id)
    if source is None:
        issues.add(file, line, "source_id", f"source_id {source_id!r} not found in {SOURCE_FILE}")
        return None
    spans = record["labels"]
    if not isinstance(spans, list):
        issues.add(file, line, "labels", f"must be a list of spans, got {type(spans).__name__}")
        return None
    task = source["task"]
    return {
        "example_id": as_id(record["id"]),
        "group_id": f"{task}:{source_id}",
        "task": task,
        "source": task,
        "question": source["question"],
        "context": source["context"],
        "answer": record["response"],
        "label": int(len(spans) > 0),
        "spans": spans,
        "model": record.get("model"),
        "temperature": record.get("temperature"),
        "quality": record.get("quality"),
        "source_id": source_id,
        "source_corpus": source["corpus"],
    }


def _parse_spans(value: Any) -> tuple[list, str | None]:
    """The span list of a ``hallucination_labels`` cell, or ([], reason) when it is bad."""
    if isinstance(value, np.ndarray):
        value = value.tolist()
    if isinstance(value, list):
        return value, None
    if is_missing(value):
        return [], "missing value (expected a JSON list of spans, '[]' for none)"
    if not isinstance(value, str):
        return [], f"expected a JSON string, got {type(value).__name__}"
    try:
        parsed = json.loads(value)
    except json.JSONDecodeError as exc:
        return [], f"not valid JSON: {exc}"
    if not isinstance(parsed, list):
        return [], f"expected a JSON list of spans, got {type(parsed).__name__}"
    return parsed, None


def _check_tasks(
    frame: pd.DataFrame,
    files: list[str],
    rows: list[int],
    issues: IssueLog,
    ok: np.ndarray,
) -> None:
    """Flag rows whose task is not a RAGTruth task (marks them not ok)."""
    for pos, task in enumerate(frame["task"].tolist()):
        if ok[pos] and task not in TASKS:
            issues.add(files[pos], rows[pos], "task_type", f"must be one of {TASKS}, got {task!r}")
            ok[pos] = False


def _group(task: Any, context: Any) -> str:
    """Group id from task and context (a placeholder when the context is not a string: the
    validator rejects that row for its context)."""
    if isinstance(context, str):
        return group_key(str(task), context)
    return f"{task}:<invalid context>"


def load_ragtruth_pooled(
    splits: tuple[str, ...] | list[str] = ("train", "test"),
    path: str | os.PathLike | None = None,
    format: str = "auto",
    hub_id: str = HUB_ID,
    skip_invalid: bool = False,
    data_dir: str | os.PathLike | None = None,
    name: str = "ragtruth_pooled",
) -> LoadedData:
    """Several RAGTruth splits as one frame (train then test by default: 17,790 rows).

    Why: a check of a population quantity needs a population as large as the release
    has (`runner.studies.guarantee_check`'s population check draws calibration rows from
    it and knows every row's label). No context is shared between RAGTruth's splits, so
    their context groups stay apart; a repeated id or group across splits is an error.
    `path` is a directory holding each ``{split}.parquet`` (or the original pair); the
    other settings are `load_ragtruth`'s.
    """
    splits = list(splits)
    if not splits or len(set(splits)) != len(splits):
        raise ConfigError(f"ragtruth_pooled: splits must be distinct splits, got {splits!r}")
    for split in splits:
        check_split_file(name, split, path, SPLITS)
    parts = [
        load_ragtruth(split, path, format, hub_id, None, skip_invalid, data_dir, name)
        for split in splits
    ]
    frame = pd.concat([p.frame for p in parts], ignore_index=True)
    _check_disjoint(splits, parts)
    files = [f for p in parts for f in p.files]
    digest = hashlib.sha256("".join(p.fingerprint for p in parts).encode()).hexdigest()
    info: dict[str, Any] = summarise(frame)
    info.update(
        splits=splits,
        parts={s: p.info for s, p in zip(splits, parts, strict=True)},
        skipped_rows=sum(p.info["skipped_rows"] for p in parts),
    )
    fingerprint = frame_fingerprint(
        digest, "ragtruth/pooled", LOADER_VERSION, {"splits": splits, "skip_invalid": skip_invalid}
    )
    return LoadedData(name=name, frame=frame, files=files, fingerprint=fingerprint, info=info)


def _check_disjoint(splits: list[str], parts: list[LoadedData]) -> None:
    """Refuse an example id or a context group found in two splits: RAGTruth's splits
    share no context, so pooled their groups stay apart."""
    seen: dict[str, dict[str, str]] = {"example_id": {}, "group_id": {}}
    for split, part in zip(splits, parts, strict=True):
        for column, owner in seen.items():
            for value in part.frame[column].astype(str).unique():
                if owner.setdefault(value, split) != split:
                    raise DataError(
                        f"{column} {value!r} is in split {owner[value]!r} and in split "
                        f"{split!r}: pooled splits must not share rows or contexts",
                        file=", ".join(part.files),
                        field=column,
                    )
