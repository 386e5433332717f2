"""Fingerprints: the sha256 of files, of a loaded frame, and the group id of a context.

Equal fingerprints mean the same rows (file bytes + loader + version + selection), so
caches can key on them.
"""

from __future__ import annotations

import hashlib
import json
from collections.abc import Iterable, Mapping
from pathlib import Path

_CHUNK = 1 << 20


def sha256_file(path: str | Path) -> str:
    """sha256 hex digest of one file's bytes, read in 1 MiB chunks."""
    digest = hashlib.sha256()
    with open(path, "rb") as handle:
        while chunk := handle.read(_CHUNK):
            digest.update(chunk)
    return digest.hexdigest()


def fingerprint_files(paths: Iterable[str | Path]) -> str:
    """sha256 over the bytes of files, streamed.

    Parameters
    ----------
    paths : iterable of path
        Files, in a meaningful order (order changes the result).

    Returns
    -------
    str
        For one file, its plain sha256 (what ``sha256sum`` prints). For several, the sha256
        of their per-file digests joined by newlines, so no two file lists collide by
        concatenation.
    """
    digests = [sha256_file(p) for p in paths]
    if not digests:
        raise ValueError("fingerprint_files: no files given")
    if len(digests) == 1:
        return digests[0]
    return hashlib.sha256("\n".join(digests).encode()).hexdigest()


def frame_fingerprint(files_digest: str, loader: str, version: int, params: Mapping) -> str:
    """Fingerprint of a loaded frame: file bytes + loader identity + selection parameters."""
    payload = json.dumps(
        {"files": files_digest, "loader": loader, "version": version, "params": dict(params)},
        sort_keys=True,
        default=str,
    )
    return hashlib.sha256(payload.encode()).hexdigest()


def group_key(prefix: str, text: str) -> str:
    """Group id ``"<prefix>:<sha1(text)[:16]>"``: one id per (task or source, context)."""
    return f"{prefix}:{hashlib.sha1(text.encode('utf-8')).hexdigest()[:16]}"
