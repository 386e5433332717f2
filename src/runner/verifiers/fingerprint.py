"""What a verifier's scores depend on, as one hashable record.

Why: a score cache may hand back earlier scores only for exactly the computation that
produced them. Names and paths are not enough (a file replaced under the same path, random
weights under another seed, another tokenizer), so the record hashes what the model
actually holds: every tensor of the loaded weights and the tokenizer's full definition,
beside every setting that changes inputs or arithmetic (maximum length, evidence policy,
batch size and length sorting, since padded batches round differently; dtype,
quantisation, device, threads) and the library versions that run it.
"""

from __future__ import annotations

import hashlib
import json
from dataclasses import fields
from typing import Any

RUNTIME_KEYS_AFTER_SCORING = ("mean_tokens_per_example", "truncation", "input_stats")
"""`Verifier.runtime_info` keys that describe the last call, not the computation."""


def weights_sha256(model: Any) -> str:
    """sha256 over a torch module's state dict: every name, dtype, shape and byte."""
    import torch

    digest = hashlib.sha256()
    for name, tensor in sorted(model.state_dict().items()):
        t = tensor.detach().to("cpu").contiguous().reshape(-1)
        digest.update(f"{name}|{t.dtype}|{tuple(tensor.shape)}|".encode())
        digest.update(t.view(torch.uint8).numpy().tobytes())
    return digest.hexdigest()


def tokenizer_sha256(tokenizer: Any) -> str:
    """sha256 of a fast tokenizer's full definition (vocabulary, merges, normalisation)."""
    backend = getattr(tokenizer, "backend_tokenizer", None)
    if backend is None:
        raise TypeError(f"{type(tokenizer).__name__} is not a fast tokenizer: cannot fingerprint")
    definition = backend.to_str()
    special = json.dumps(getattr(tokenizer, "special_tokens_map", {}), sort_keys=True)
    return hashlib.sha256(f"{definition}\n{special}".encode()).hexdigest()


def score_fingerprint(verifier: Any, ignore: tuple[str, ...] = ()) -> dict[str, Any]:
    """The record a verifier's scores depend on (the verifier is loaded first).

    Parameters
    ----------
    verifier : runner.verifiers.base.Verifier
    ignore : tuple of str
        Settings left out because the scores in question do not read them (e.g. the flag
        threshold, for token probabilities).

    Returns
    -------
    dict
        JSON-serialisable: ``class``, ``settings`` (every dataclass field), ``runtime``
        (`Verifier.runtime_info` without the last call's statistics), ``weights_sha256``,
        ``tokenizer_sha256`` and the ``torch`` / ``transformers`` versions.
    """
    import torch
    import transformers

    verifier.load()
    loaded = verifier.loaded
    runtime = {
        k: v for k, v in verifier.runtime_info().items() if k not in RUNTIME_KEYS_AFTER_SCORING
    }
    settings = {f.name: getattr(verifier, f.name) for f in fields(verifier) if f.name not in ignore}
    record = {
        "class": f"{type(verifier).__module__}.{type(verifier).__qualname__}",
        "settings": settings,
        "runtime": runtime,
        "weights_sha256": weights_sha256(loaded.model),
        "tokenizer_sha256": tokenizer_sha256(loaded.tokenizer),
        "torch": torch.__version__,
        "transformers": transformers.__version__,
    }
    # Settings may hold config mappings or paths: one canonical JSON form.
    return json.loads(json.dumps(record, sort_keys=True, default=str))


def folder_sha256(source: str) -> str:
    """sha256 over a model folder: every file's relative path and bytes, in path order."""
    from pathlib import Path

    from runner.model_files import files_under

    root = Path(source).expanduser().resolve()
    digest = hashlib.sha256()
    for path in files_under(source):
        name = str(path.relative_to(root)) if path.is_relative_to(root) else path.name
        digest.update(f"{name}|".encode())
        with open(path, "rb") as handle:
            while chunk := handle.read(1 << 20):
                digest.update(chunk)
    return digest.hexdigest()
