"""A content-keyed cache of judge answers, in memory for one run and on disk across runs.

Why: a judge answer is a pure function of (model weights, exact prompt text, decoding
settings) under greedy decoding. Two judge setups that share a model and a first prompt
compute the same first answer, and a re-run that changes only how verdicts are combined
(thresholds, k-of-n rules) asks the same questions again. Keying each answer by what
determines it lets both reuse earlier work, and makes sharing impossible when anything that
matters differs: another model file (its sha256), another prompt text (a new prompt version
or other passages) or other decoding settings (token budget, dtype, repair mode).

The key holds the claim's *content* (the prompt text), never its position in a data set,
so any study that builds the same prompt (e.g. another study judging the same claims) can
share answers: build an `AnswerCache` on the same folder and call `TransformersJudge.judge_many`
(or `AnswerCache.get` / `AnswerCache.put` directly with `answer_key`).

Layout: ``<root>/<key[:2]>/<key>.json``, each file ``{"key_fields": ..., "text": ...,
"generated_tokens": ...}``, written atomically (temporary file + ``os.replace``), so a run
killed mid-write never leaves a half answer and concurrent writers of the same key agree.
A file that does not parse, or whose recorded key fields differ from the request, is a
`CacheError` naming the file: nothing wrong is ever returned silently.
"""

from __future__ import annotations

import hashlib
from collections.abc import Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from runner.claims.keyed_files import (
    CacheError,
    content_key,
    read_record,
    record_path,
    write_record,
)

CACHE_VERSION = 1
"""Bump when the meaning of a cached answer changes (e.g. how it is decoded to text)."""

__all__ = [
    "AnswerCache",
    "CacheError",
    "CacheStats",
    "answer_fields",
    "answer_key",
    "file_sha256",
]

_FILE_HASHES: dict[tuple[str, int, int], str] = {}


def file_sha256(path: str | Path) -> str:
    """sha256 of a file's bytes (memoised per path, size and mtime within a process)."""
    p = Path(path).resolve()
    st = p.stat()
    memo = (str(p), st.st_size, st.st_mtime_ns)
    if memo not in _FILE_HASHES:
        digest = hashlib.sha256()
        with p.open("rb") as fh:
            for block in iter(lambda: fh.read(1 << 22), b""):
                digest.update(block)
        _FILE_HASHES[memo] = digest.hexdigest()
    return _FILE_HASHES[memo]


def answer_fields(model_sha256: str, prompt_text: str, decoding: Mapping[str, Any]) -> dict:
    """The fields an answer depends on, as stored beside it (see `answer_key`)."""
    return {
        "cache_version": CACHE_VERSION,
        "model_sha256": model_sha256,
        "decoding": {k: decoding[k] for k in sorted(decoding)},
        "prompt_sha256": hashlib.sha256(prompt_text.encode("utf-8")).hexdigest(),
    }


def answer_key(model_sha256: str, prompt_text: str, decoding: Mapping[str, Any]) -> str:
    """Cache key of one answer: sha256 over model hash, exact prompt text and decoding.

    Parameters
    ----------
    model_sha256 : str
        Hash of the model's weights (`file_sha256` of a GGUF file, or of a folder's files).
    prompt_text : str
        The exact text the model reads (chat template applied), including any forced start
        of the answer.
    decoding : mapping
        Every setting that changes the answer: ``max_new_tokens``, greedy or not, dtype,
        device, tokenizer, etc. Values must be JSON-serialisable.

    Returns
    -------
    str
        64 hex digits.
    """
    return content_key(answer_fields(model_sha256, prompt_text, decoding))


@dataclass
class CacheStats:
    """Lookups of one judge (or one caller), for ``runtime.json``."""

    memory_hits: int = 0
    disk_hits: int = 0
    misses: int = 0

    def to_dict(self) -> dict[str, int]:
        """Counts as a plain dict."""
        return {
            "memory_hits": self.memory_hits,
            "disk_hits": self.disk_hits,
            "misses": self.misses,
        }


@dataclass
class AnswerCache:
    """Answers by `answer_key`: a memory layer (this run) over an optional disk folder.

    Parameters
    ----------
    root : Path or None
        Folder of the disk cache; None keeps answers in memory only (still shared between
        the judges of one run).
    """

    root: Path | None = None
    _memory: dict[str, dict[str, Any]] = field(default_factory=dict, repr=False)

    def path(self, key: str) -> Path | None:
        """Where ``key`` lives on disk (None without a disk folder)."""
        return None if self.root is None else record_path(self.root, key)

    def get(
        self, key: str, fields: Mapping[str, Any], stats: CacheStats | None = None
    ) -> dict[str, Any] | None:
        """The stored record for ``key`` (``text``, ``generated_tokens``), or None.

        ``fields`` (from `answer_fields`) are compared with the stored ones, so a record is
        returned only for exactly the request that produced it.
        """
        stats = stats if stats is not None else CacheStats()
        if key in self._memory:
            stats.memory_hits += 1
            return self._memory[key]
        path = self.path(key)
        record = None
        if path is not None:
            record = read_record(
                path, fields, "judge answer cache", lambda r: isinstance(r.get("text"), str)
            )
        if record is None:
            stats.misses += 1
            return None
        self._memory[key] = record
        stats.disk_hits += 1
        return record

    def put(
        self, key: str, fields: Mapping[str, Any], text: str, generated_tokens: int
    ) -> dict[str, Any]:
        """Store one answer (memory, and disk when a folder is set); returns the record."""
        record = {"key_fields": dict(fields), "text": text, "generated_tokens": generated_tokens}
        self._memory[key] = record
        path = self.path(key)
        if path is not None:
            write_record(path, record)
        return record
