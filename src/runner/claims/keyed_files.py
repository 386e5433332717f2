"""Content-keyed JSON records on disk: written atomically, read back only when they match.

Why one place: the judge answer cache and the span detector's score cache both keep one
record per key under ``<root>/<key[:2]>/<key>.json``, next to the fields the key was made
from. A record is written to a temporary file and moved into place, so a run killed
mid-write never leaves half a record and two writers of one key agree; it is read back
only when its stored fields equal the request's, and a file that does not parse or does
not match is an error naming the file, never a silent miss or a wrong hit.
"""

from __future__ import annotations

import hashlib
import json
import os
import tempfile
from collections.abc import Callable, Mapping
from pathlib import Path
from typing import Any

from runner.errors import RunnerError


class CacheError(RunnerError):
    """A cache file is unreadable or does not hold the record its name promises."""


def content_key(fields: Mapping[str, Any]) -> str:
    """sha256 (64 hex digits) of the canonical JSON of ``fields``."""
    canonical = json.dumps(dict(fields), sort_keys=True, ensure_ascii=True)
    return hashlib.sha256(canonical.encode("ascii")).hexdigest()


def record_path(root: str | Path, key: str) -> Path:
    """Where the record for ``key`` lives under ``root``."""
    return Path(root) / key[:2] / f"{key}.json"


def read_record(
    path: Path,
    fields: Mapping[str, Any],
    what: str,
    valid: Callable[[dict[str, Any]], bool],
) -> dict[str, Any] | None:
    """The record at ``path`` (None when absent), checked against ``fields`` and ``valid``.

    Raises
    ------
    CacheError
        The file is unreadable, its ``key_fields`` differ from ``fields`` or ``valid``
        rejects it; ``what`` names the cache in the message.
    """
    if not path.is_file():
        return None
    try:
        record = json.loads(path.read_text(encoding="utf-8"))
    except (OSError, UnicodeDecodeError, json.JSONDecodeError) as exc:
        raise CacheError(f"{what} {path}: unreadable ({exc})") from exc
    if (
        not isinstance(record, dict)
        or record.get("key_fields") != json.loads(json.dumps(dict(fields)))
        or not valid(record)
    ):
        raise CacheError(
            f"{what} {path}: stored key fields or contents do not match the request "
            "(delete the file or the cache folder)"
        )
    return record


def write_record(path: Path, record: Mapping[str, Any]) -> None:
    """Write ``record`` as JSON to ``path`` atomically (temporary file, then rename)."""
    path.parent.mkdir(parents=True, exist_ok=True)
    fd, tmp = tempfile.mkstemp(dir=path.parent, prefix=".tmp-", suffix=".json")
    try:
        with os.fdopen(fd, "w", encoding="utf-8") as fh:
            json.dump(dict(record), fh, sort_keys=True)
        os.replace(tmp, path)
    except BaseException:
        Path(tmp).unlink(missing_ok=True)
        raise
