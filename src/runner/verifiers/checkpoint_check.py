"""Is a model folder complete: weights present, and, for a verifier, its classification head?

Why: transformers loads a checkpoint without a head (a plain encoder such as the shipped
all-MiniLM-L6-v2, saved without ``classifier.*``) into a classifier class with a freshly
initialised head and only a warning ("newly initialized"); a verifier would then score
with random numbers that look like risks. A folder holding only ``config.json`` fails
deep inside transformers with a traceback. Both are found here first, from the
checkpoint's key names (no weights are read), and refused with one line. The check is
"the head's weights are in the checkpoint", not "they were trained": a tiny random model
saved with a head passes.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

from runner.errors import ConfigError

WEIGHT_FILES = (
    "model.safetensors",
    "model.safetensors.index.json",
    "pytorch_model.bin",
    "pytorch_model.bin.index.json",
)
"""The files a transformers checkpoint keeps its weights in (single file or sharded)."""

TOKENIZER_FILES = ("tokenizer.json", "vocab.txt", "spiece.model", "vocab.json", "tokenizer.model")
"""Any one of these makes a folder's tokenizer loadable (fast or convertible)."""


def weights_file(folder: str | Path) -> Path | None:
    """The first of `WEIGHT_FILES` present in `folder` (None: the folder has no weights)."""
    for name in WEIGHT_FILES:
        path = Path(folder) / name
        if path.is_file():
            return path
    return None


def check_weights_present(folder: str | Path, what: str) -> Path:
    """The folder's weights file; a `ConfigError` naming the folder when there is none.

    `what` names the setting the folder came from (``detector.backbone``,
    ``verifiers.detector.model``), so the line says what to change.
    """
    path = weights_file(folder)
    if path is None:
        raise ConfigError(
            f"{what}={folder}: the folder holds no model weights (none of "
            f"{', '.join(WEIGHT_FILES)}); give a folder saved with save_pretrained"
        )
    return path


def check_tokenizer_present(folder: str | Path, what: str) -> None:
    """A `ConfigError` when the folder has no tokenizer files a fast tokenizer loads from."""
    if not any((Path(folder) / name).is_file() for name in TOKENIZER_FILES):
        raise ConfigError(
            f"{what}={folder}: the folder holds no tokenizer (none of "
            f"{', '.join(TOKENIZER_FILES)}); save the tokenizer beside the weights"
        )


def checkpoint_keys(path: Path) -> set[str]:
    """Parameter names stored in a weights file (read from its header or index only)."""
    if path.name.endswith(".index.json"):
        return set(json.loads(path.read_text()).get("weight_map", {}))
    try:
        if path.suffix == ".safetensors":
            from safetensors import safe_open

            with safe_open(str(path), framework="pt") as f:
                return set(f.keys())
        import torch

        state = torch.load(path, map_location="meta", weights_only=True, mmap=True)
        return set(state)
    except Exception as exc:  # a truncated or foreign file: say which, in one line
        raise ConfigError(
            f"{path} cannot be read as model weights ({type(exc).__name__}: "
            f"{str(exc).splitlines()[0] if str(exc) else 'no detail'}); it may be truncated: "
            f"save the model again"
        ) from None


def head_keys(model_class: type, config: Any) -> list[str]:
    """Parameter names of `model_class`'s task head: those outside its base model.

    The model is built on the meta device (no memory, no initialisation cost).
    """
    import torch

    with torch.device("meta"):
        if hasattr(model_class, "from_config"):
            model = model_class.from_config(config)
        else:
            model = model_class(config)
    prefix = f"{model.base_model_prefix}."
    return sorted(k for k in model.state_dict() if not k.startswith(prefix))


def missing_head(model_class: type, folder: str | Path) -> list[str] | None:
    """Head parameters of `model_class` absent from the checkpoint in `folder`.

    None when the question cannot be asked here (no local weights file, a ``config.json``
    of a model type transformers does not know): loading then decides. An empty list: the
    head is there.
    """
    from transformers import AutoConfig

    path = weights_file(folder)
    if path is None:
        return None
    try:
        config = AutoConfig.from_pretrained(str(folder), local_files_only=True)
    except (ValueError, KeyError, OSError):
        return None
    stored = checkpoint_keys(path)
    return [k for k in head_keys(model_class, config) if k not in stored]


def refuse_headless(folder: str | Path, missing: list[str], what: str) -> None:
    """Raise the one-line refusal of a verifier folder whose head is not in its weights."""
    if missing:
        raise ConfigError(
            f"{what}={folder}: the checkpoint has no trained classification head "
            f"({', '.join(missing[:4])}{' ...' if len(missing) > 4 else ''} missing), so "
            f"scores would come from a randomly initialised head; give a folder saved from "
            f"a fine-tuned classifier (e.g. one trained by experiment=train_detector), "
            f"not a plain encoder"
        )


def check_verifier_folder(model_class: type, folder: str | Path, what: str) -> None:
    """A local verifier folder has weights and its classifier's head in them (pre-flight)."""
    if not Path(folder).is_dir():
        return  # a Hub id: the cached files are checked when loading
    check_weights_present(folder, what)
    refuse_headless(folder, missing_head(model_class, folder) or [], what)
