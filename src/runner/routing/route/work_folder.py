"""The folder a streamed route keeps its finished batches in, so a killed run continues.

Why a folder of its own, keyed by what decides the decisions: a rerun must continue only
work that would come out the same. The key (the input files' sha256 and reading settings,
the model version, the routing settings that change a decision, the batch size) names the
folder; a folder whose ``key.json`` differs is never reused. Each finished batch is one
Parquet shard, written to a temporary name and renamed, then recorded in
``manifest.json`` (also replaced whole): a kill at any moment leaves either a recorded
shard or one that is redone, never half a shard counted as done.
"""

from __future__ import annotations

import hashlib
import json
import os
from dataclasses import asdict
from pathlib import Path
from typing import Any

import pandas as pd

from runner.errors import ConfigError

FORMAT = 3
"""Bump when a shard's content changes, so work folders of older runs are not reused
(2: limit and repeats cut before routing, so a shard's gate and verifier costs are its
rows'; repeats name the first shard; 3: a calibrated cascade's band rows the verifier
does not accept stay verify, and its -inf threshold sends the verifier nothing)."""
NOT_IN_KEY = ("engine", "ray_address", "ray_workers", "workers", "work_dir", "audit_fraction")
"""Routing settings that change how and where batches run, or the audit draw (made over
the whole stream at the end): not a shard's content, so a rerun may change them."""

MANIFEST = "manifest.json"
KEY = "key.json"


def _dump(obj: Any) -> str:
    return json.dumps(obj, indent=2, sort_keys=True, default=str) + "\n"


def _replace(path: Path, text: str) -> None:
    tmp = path.with_name(f".{path.name}.tmp")
    tmp.write_text(text)
    os.replace(tmp, path)


class WorkFolder:
    """Shards and manifest of one (input, model, settings) key under `root`.

    Parameters
    ----------
    root : path
        Where work folders live (``<cache_dir>/route`` unless ``routing.work_dir``).
    key : dict
        JSON-serialisable; its sha256 names the folder.
    batches : int
        How many batches the input was planned into.
    """

    def __init__(self, root: str | Path, key: dict[str, Any], batches: int) -> None:
        text = _dump(key)
        self.key_hash = hashlib.sha256(text.encode()).hexdigest()[:16]
        self.dir = Path(root) / self.key_hash
        self.batches = batches
        self.dir.mkdir(parents=True, exist_ok=True)
        key_file = self.dir / KEY
        if key_file.exists() and key_file.read_text() != text:
            raise ConfigError(
                f"{self.dir} holds work for another input or setting (its key.json differs): "
                "move it away or set routing.work_dir to another folder"
            )
        if not key_file.exists():
            _replace(key_file, text)
        self._manifest = self._read_manifest()

    def _read_manifest(self) -> dict[str, Any]:
        path = self.dir / MANIFEST
        if not path.exists():
            return {"batches": self.batches, "done": {}, "complete": False}
        manifest = json.loads(path.read_text())
        if manifest.get("batches") != self.batches:
            raise ConfigError(
                f"{path} was planned into {manifest.get('batches')} batches, this run into "
                f"{self.batches}: the input changed; move {self.dir} away"
            )
        return manifest

    @property
    def done(self) -> dict[int, dict[str, Any]]:
        """Finished batches, by index, with what the run recorded for each."""
        return {int(k): v for k, v in self._manifest["done"].items()}

    @property
    def complete(self) -> bool:
        """Whether the stream was routed to its end (or its ``limit``)."""
        return bool(self._manifest.get("complete"))

    def shard(self, index: int) -> Path:
        """The shard file of batch `index`."""
        return self.dir / f"batch-{index:06d}.parquet"

    def write(self, index: int, decisions: pd.DataFrame, record: dict[str, Any]) -> None:
        """Store batch `index`'s decisions, then record it done (in that order)."""
        path = self.shard(index)
        tmp = path.with_name(f".{path.name}.tmp")
        decisions.to_parquet(tmp, index=False)
        os.replace(tmp, path)
        self._manifest["done"][str(index)] = record
        self._save()

    def finish(self, last: int) -> None:
        """Record the stream complete; `last` is the index of the last batch it routed."""
        self._manifest["complete"] = True
        self._manifest["last"] = last
        self._save()

    @property
    def last(self) -> int | None:
        """Index of the last routed batch of a complete stream."""
        return self._manifest.get("last")

    def read(self, index: int, columns: list[str] | None = None) -> pd.DataFrame:
        """Batch `index`'s stored decisions (optionally some columns only)."""
        return pd.read_parquet(self.shard(index), columns=columns)

    def _save(self) -> None:
        _replace(self.dir / MANIFEST, _dump(self._manifest))


def work_key(stream: Any, model: Any, routing: Any, verifier: Any) -> dict[str, Any]:
    """What decides a shard's content: the input and how it is read, the model version,
    the routing settings, the verifier and its settings."""
    verifier_params = None
    if verifier is not None:
        get = getattr(verifier, "get_params", None)
        verifier_params = json.loads(json.dumps(get() if callable(get) else {}, default=str))
    kept = {k: v for k, v in asdict(routing).items() if k not in NOT_IN_KEY}
    return {
        "format": FORMAT,
        "input": stream.fingerprint,
        "limit": stream.limit,
        "model": f"models:/{model.name}/{model.version}",
        "routing": kept,
        "verifier": {"class": type(verifier).__qualname__, "params": verifier_params}
        if verifier is not None
        else None,
    }


def work_root(work_dir: str | None, cache_dir: str | None) -> Path:
    """``routing.work_dir``, else ``<paths.cache_dir>/route``."""
    if work_dir:
        return Path(work_dir).expanduser()
    if not cache_dir:
        raise ConfigError("route keeps finished batches in paths.cache_dir or routing.work_dir")
    return Path(cache_dir) / "route"
