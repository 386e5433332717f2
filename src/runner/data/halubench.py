"""HaluBench as a canonical response-level frame, from a CSV sample, the full parquet or the Hub.

HaluBench (Patronus AI) pools six QA sources, each answer labelled PASS (faithful) or FAIL
(hallucinated). The offline data directory holds a 1,000-row sample with only four of the
six sources, so the loader reports which sources it actually saw and can refuse to run when
a study needs sources that are absent (``require_sources``), instead of quietly computing a
"HaluBench" number on part of it.

Mapping: ``example_id`` = id, ``task`` = ``source`` = source_ds, ``question`` = question,
``context`` = passage, ``answer`` = answer, ``label`` = 1 for FAIL and 0 for PASS,
``group_id`` = ``source:sha1(passage)[:16]`` (several answers share one passage). The
CSV's ``Unnamed: 0`` (the row's index in the full 14,900-row set) is kept as ``hub_row``.

Ids: HaluBench's ``id`` is used as is when it is unique over all files read. If it is not,
ids are derived for every row, and the scheme is recorded in ``info["id_scheme"]``:
``"source:id"`` when that pair is unique, else ``"source:id#n"`` with ``n`` the 1-based
occurrence of the pair in file order. Ids are derived before the ``sources`` filter, so a
row keeps its id whichever sources are selected.
"""

from __future__ import annotations

import io
import logging
import os
from collections import Counter
from collections.abc import Sequence
from pathlib import Path
from typing import Any

import pandas as pd

from runner.data.base import LoadedData, Located, located_info
from runner.data.hashing import fingerprint_files, frame_fingerprint, group_key
from runner.data.hub import load_hub_split
from runner.data.response_frame import as_id, require_rows, screen_rows, summarise
from runner.data.row_issues import IssueLog
from runner.data.text_files import text_lines
from runner.errors import ConfigError, DataError, DataNotFoundError
from runner.paths import data_dir as default_data_dir

logger = logging.getLogger(__name__)

LOADER_VERSION = 1
"""Bump when the mapping changes, so fingerprints (and caches keyed on them) change too."""

HUB_ID = "PatronusAI/HaluBench"
DEFAULT_FILE = "halubench_sample_1000.csv"
RAW_COLUMNS = ("id", "passage", "question", "answer", "label", "source_ds")
LABELS = {"PASS": 0, "FAIL": 1}
_SUFFIXES = (".csv", ".parquet")


def load_halubench(
    path: str | os.PathLike | Sequence[str | os.PathLike] | None = None,
    sources: str | Sequence[str] | None = None,
    require_sources: str | Sequence[str] | None = None,
    hub_id: str = HUB_ID,
    limit: int | None = None,
    skip_invalid: bool = False,
    data_dir: str | os.PathLike | None = None,
    name: str = "halubench",
) -> LoadedData:
    """Load HaluBench as a canonical response-level frame (settings: `runner.data.base`).

    Sources, first found wins: ``path`` (a CSV or parquet file, a folder of them read by
    name, or a list of files read in order); else
    ``<data_dir>/halubench/halubench_sample_1000.csv``; else the Hub's test split.

    ``sources`` keeps only those ``source_ds`` values: an absent one is logged and listed in
    ``info["sources_missing"]``, none left is a `DataNotFoundError`. ``require_sources``
    must all be in the files read, else a `DataNotFoundError` names the missing and the
    present ones. ``limit`` applies after the ``sources`` filter. A bad row is named by
    file, row (the 0-based data row; CSV row ``i`` is line ``i + 2``) and field.
    ``info`` adds ``sources_found``, ``sources_missing``, ``rows_excluded_by_source``,
    ``id_scheme`` and ``files_sha256``.
    """
    wanted, required = _check_settings(sources, require_sources, limit)
    issues = IssueLog(skip_invalid)
    located, parts = _read(_locate(path, data_dir, hub_id), hub_id, issues)
    frame, id_scheme = _derive_ids(_map(parts, issues))
    frame, selection = _select(frame, wanted, required, limit, located, hub_id)
    frame = _validate(frame, located, issues)
    params = {
        "sources": wanted,
        "require_sources": required,
        "limit": limit,
        "skip_invalid": skip_invalid,
    }
    extra = {**selection, "id_scheme": id_scheme, "limit": limit}
    return _record(frame, located, issues, name, params, extra)


def _check_settings(
    sources: str | Sequence[str] | None,
    require_sources: str | Sequence[str] | None,
    limit: int | None,
) -> tuple[list[str] | None, list[str] | None]:
    """The source lists, after refusing a bad ``limit`` or a required source filtered out."""
    wanted = _as_list(sources)
    required = _as_list(require_sources)
    if limit is not None and limit < 1:
        raise ConfigError(f"halubench: limit must be a positive integer or null, got {limit!r}")
    if wanted is not None and required is not None and set(required) - set(wanted):
        raise ConfigError(
            f"halubench: require_sources {sorted(set(required) - set(wanted))} are excluded "
            f"by sources {wanted}"
        )
    return wanted, required


def _select(
    frame: pd.DataFrame,
    wanted: list[str] | None,
    required: list[str] | None,
    limit: int | None,
    located: Located,
    hub_id: str,
) -> tuple[pd.DataFrame, dict[str, Any]]:
    """The rows of the wanted sources, up to ``limit``; what was found and left out."""
    found = sorted({s for s in frame["source"].tolist() if isinstance(s, str)})
    if required is not None:
        absent = [s for s in required if s not in found]
        if absent:
            raise DataNotFoundError(
                f"halubench: required sources {absent} are not in {', '.join(located.files)}; "
                f"sources present: {found}. The full set (all six sources) is the Hub's "
                f"{hub_id}. {_how_to(hub_id)}"
            )
    missing: list[str] = []
    excluded = 0
    if wanted is not None:
        missing = [s for s in wanted if s not in found]
        if missing:
            logger.warning(
                "halubench: requested sources %s not present (present: %s)", missing, found
            )
        keep = frame["source"].isin(wanted)
        excluded = int((~keep).sum())
        frame = frame.loc[keep]
        if frame.empty:
            raise DataNotFoundError(
                f"halubench: none of the requested sources {wanted} is present; "
                f"sources present: {found}"
            )
    if limit is not None:
        frame = frame.iloc[:limit]
    selection = {
        "sources_found": found,
        "sources_missing": missing,
        "rows_excluded_by_source": excluded,
    }
    return frame, selection


def _validate(frame: pd.DataFrame, located: Located, issues: IssueLog) -> pd.DataFrame:
    """The canonical frame without its bookkeeping columns, every row checked."""
    # Rows already reported while mapping (bad label) are not reported twice.
    frame = frame.loc[frame.pop("_ok")].reset_index(drop=True)
    files_of, rows_of = frame.pop("_file").tolist(), frame.pop("_row").tolist()
    frame = screen_rows(frame, files_of, rows_of, issues)
    require_rows(frame, located.where, issues)
    return frame


def _record(
    frame: pd.DataFrame,
    located: Located,
    issues: IssueLog,
    name: str,
    params: dict[str, Any],
    extra: dict[str, Any],
) -> LoadedData:
    info = located_info(summarise(frame), located, issues, **extra)
    fingerprint = frame_fingerprint(located.digest, "halubench", LOADER_VERSION, params)
    logger.info(
        "halubench: %d rows, sources %s from %s (%d rows skipped)",
        info["rows"],
        info["counts_per_source"],
        located.origin,
        info["skipped_rows"],
    )
    return LoadedData(
        name=name, frame=frame, files=located.files, fingerprint=fingerprint, info=info
    )


def _as_list(value: str | Sequence[str] | None) -> list[str] | None:
    if value is None:
        return None
    if isinstance(value, str):
        return [value]
    return [str(v) for v in value]


def _locate(
    path: str | os.PathLike | Sequence[str | os.PathLike] | None,
    data_dir: str | os.PathLike | None,
    hub_id: str,
) -> list[Path] | None:
    """Files to read, or None for the Hub."""
    if path is not None:
        targets = [path] if isinstance(path, (str, os.PathLike)) else list(path)
        files: list[Path] = []
        for target in (Path(p).expanduser() for p in targets):
            if not target.exists():
                raise DataNotFoundError(
                    f"halubench: path {target} does not exist. {_how_to(hub_id)}"
                )
            if target.is_dir():
                inside = sorted(p for p in target.iterdir() if p.suffix.lower() in _SUFFIXES)
                if not inside:
                    raise DataNotFoundError(f"halubench: no .csv or .parquet file in {target}")
                files.extend(inside)
            elif target.suffix.lower() in _SUFFIXES:
                files.append(target)
            else:
                raise ConfigError(f"halubench: {target} is neither .csv nor .parquet")
        return files
    root = Path(data_dir).expanduser() if data_dir is not None else default_data_dir()
    if root is not None and (root / "halubench" / DEFAULT_FILE).is_file():
        return [root / "halubench" / DEFAULT_FILE]
    return None


def _read(
    files: list[Path] | None, hub_id: str, issues: IssueLog
) -> tuple[Located, list[tuple[str, pd.DataFrame]]]:
    """Each file's raw frame (or the Hub's test split), and where they came from."""
    if files is None:
        hub_split = load_hub_split(hub_id, "test", _how_to(hub_id))
        where = f"hf://datasets/{hub_id} (split test)"
        located = Located(
            hub_split.files, hub_split.digest, "hub", ", ".join(hub_split.files) or hub_id, hub_id
        )
        return located, [(where, hub_split.frame)]
    parts = [(str(f), _read_file(f, issues)) for f in files]
    names = [str(f) for f in files]
    return Located(names, fingerprint_files(names), "local", ", ".join(names)), parts


def _how_to(hub_id: str) -> str:
    return (
        f"Put {DEFAULT_FILE} in $RUNNER_DATA_DIR/halubench/ (set RUNNER_DATA_DIR, or pass "
        f"data_dir= / path=), or download the full set from the Hub id {hub_id} with: "
        f"python -c \"from datasets import load_dataset; load_dataset('{hub_id}', "
        "split='test').to_parquet('halubench_full.parquet')\" and pass "
        "path=halubench_full.parquet."
    )


def _read_file(path: Path, issues: IssueLog) -> pd.DataFrame:
    """A CSV (decoded by `text_lines`: a line that is not UTF-8 is a problem for `issues`,
    skipped with ``skip_invalid``) or a parquet file, as a raw frame."""
    if path.suffix.lower() == ".csv":
        text = "".join(line for _, line in text_lines(path, issues))
    try:
        if path.suffix.lower() == ".csv":
            # Every cell as text, and no "NA"/"None" answers turned into NaN behind our back.
            return pd.read_csv(io.StringIO(text), dtype=str, keep_default_na=False, na_filter=False)
        return pd.read_parquet(path)
    except Exception as exc:  # parsers raise several types for a broken file
        raise DataError(f"cannot read file: {type(exc).__name__}: {exc}", file=str(path)) from exc


def _map(parts: list[tuple[str, pd.DataFrame]], issues: IssueLog) -> pd.DataFrame:
    """Raw frames to one canonical frame (ids not yet derived).

    Bookkeeping columns, removed before validation: ``_file`` and ``_row`` (where the row
    came from) and ``_ok`` (False for a row already reported here).
    """
    frames = []
    for file, raw in parts:
        for column in RAW_COLUMNS:
            if column not in raw.columns:
                present = ", ".join(map(str, raw.columns))
                raise DataError(
                    f"required column missing (columns present: {present})",
                    file=file,
                    row="header",
                    field=column,
                )
        raw = raw.reset_index(drop=True)
        labels, ok = [], []
        for pos, value in enumerate(raw["label"].tolist()):
            good = isinstance(value, str) and value in LABELS
            if not good:
                issues.add(file, pos, "label", f"must be 'PASS' or 'FAIL', got {value!r}")
            labels.append(LABELS[value] if good else 0)
            ok.append(good)
        sources = raw["source_ds"].tolist()
        passages = raw["passage"].tolist()
        part = pd.DataFrame(
            {
                "example_id": [as_id(v) for v in raw["id"].tolist()],
                "group_id": [
                    group_key(str(s), p) if isinstance(p, str) else f"{s}:<invalid passage>"
                    for s, p in zip(sources, passages, strict=True)
                ],
                "task": sources,
                "source": sources,
                "question": raw["question"].tolist(),
                "context": passages,
                "answer": raw["answer"].tolist(),
                "label": labels,
            }
        )
        if "Unnamed: 0" in raw.columns:
            part["hub_row"] = _index_column(raw["Unnamed: 0"])
        part["_file"] = file
        part["_row"] = range(len(raw))
        part["_ok"] = ok
        frames.append(part)
    return pd.concat(frames, ignore_index=True) if len(frames) > 1 else frames[0]


def _index_column(values: pd.Series) -> pd.Series:
    """The full-set row index as integers, or the text as it is when not all are integers."""
    try:
        return pd.to_numeric(values, errors="raise").astype("int64")
    except (ValueError, TypeError):
        return values


def _derive_ids(frame: pd.DataFrame) -> tuple[pd.DataFrame, str]:
    """Keep ``id`` when unique; otherwise derive ids (see the module docstring)."""
    ids = frame["example_id"].tolist()
    if len(set(map(repr, ids))) == len(ids):
        return frame, "id"
    pairs = [f"{s}:{i}" for s, i in zip(frame["source"].tolist(), ids, strict=True)]
    if len(set(pairs)) == len(pairs):
        scheme, derived = "source:id", pairs
    else:
        seen: Counter[str] = Counter()
        derived = []
        for pair in pairs:
            seen[pair] += 1
            derived.append(f"{pair}#{seen[pair]}")
        scheme = "source:id#n"
    duplicates = sum(c for c in Counter(map(repr, ids)).values() if c > 1)
    logger.warning("halubench: %d rows share an id; example_id derived as %r", duplicates, scheme)
    # A missing or non-string id stays as it is, so the validator names it.
    frame = frame.copy()
    frame["example_id"] = [
        d if isinstance(i, str) and i.strip() else i for d, i in zip(derived, ids, strict=True)
    ]
    return frame, scheme
