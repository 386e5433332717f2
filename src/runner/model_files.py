"""Which files a model part's numbers depend on, so the manifest can record their sha256.

Why: a config names a model by path or Hub id, and the same name can hold other bytes
tomorrow. Parts that load weights expose ``model_files() -> list[Path]`` (the `ModelFiles`
protocol): verifiers with pretrained weights, local LLM judges, the span detector (its
verifier). Parts with nothing local (random weights, a judge behind an HTTP server) return
``[]`` or do not have the method.
"""

from __future__ import annotations

from pathlib import Path
from typing import Protocol, runtime_checkable


@runtime_checkable
class ModelFiles(Protocol):
    """A part whose outputs depend on model files on this machine."""

    def model_files(self) -> list[Path]:
        """The files (weights, config, tokenizer) the part loads."""
        ...


def files_under(source: str | Path, revision: str | None = None) -> list[Path]:
    """Every regular file of a model folder (recursively, hidden files skipped).

    A Hub id resolves to its local snapshot folder (offline: the cache only).
    """
    path = Path(source).expanduser()
    if not path.exists():
        from huggingface_hub import snapshot_download

        path = Path(snapshot_download(str(source), revision=revision, local_files_only=True))
    if path.is_file():
        return [path.resolve()]
    return sorted(
        p.resolve()
        for p in path.rglob("*")
        if p.is_file() and not any(part.startswith(".") for part in p.relative_to(path).parts)
    )
