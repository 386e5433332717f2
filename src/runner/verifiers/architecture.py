"""Exact model architectures for random-weight verifiers (``weights: random``).

Why: the verifier weights cannot be downloaded here, yet the cost of a verifier (ms/example,
memory) depends only on its architecture and its input lengths, not on its weights. A model
built from the real configuration (``conf/architecture/*.yaml``) with seeded random weights
costs the same to run; its scores carry no information and are never reported as accuracy.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Mapping
from pathlib import Path
from typing import Any

import yaml

from runner.errors import ConfigError
from runner.paths import PROJECT_ROOT
from runner.verifiers.config import ArchitectureConf

ARCHITECTURE_DIR = PROJECT_ROOT / "conf" / "architecture"
"""Where architecture YAMLs live; a bare name ``deberta_v3_small`` is looked up here."""

_TOKEN_ID_KEYS = {
    "pad_token_id": "pad",
    "cls_token_id": "cls",
    "sep_token_id": "sep",
    "eos_token_id": "eos",
}


def load_architecture(spec: Mapping[str, Any] | ArchitectureConf | str) -> dict[str, Any]:
    """An architecture spec: as given (a composed config node) or read from YAML.

    Parameters
    ----------
    spec : mapping, ArchitectureConf or str
        A mapping (or the record a built config hands over) with ``name``, ``model_type``,
        ``config`` and ``tokenizer``; or a name in
        `ARCHITECTURE_DIR` (``"deberta_v3_small"``); or a path to such a YAML file.

    Returns
    -------
    dict
    """
    if isinstance(spec, str):
        path = Path(spec).expanduser()
        if not path.suffix:
            path = ARCHITECTURE_DIR / f"{spec}.yaml"
        if not path.is_file():
            known = sorted(p.stem for p in ARCHITECTURE_DIR.glob("*.yaml"))
            raise ConfigError(f"architecture {spec!r}: no file {path} (known: {known})")
        spec = yaml.safe_load(path.read_text())
    spec = dataclasses.asdict(spec) if dataclasses.is_dataclass(spec) else dict(spec)
    for key in ("name", "model_type", "config", "tokenizer"):
        if key not in spec:
            raise ConfigError(f"architecture {spec.get('name', '?')}: missing key {key!r}")
    spec["config"] = dict(spec["config"])
    return spec


def build_config(arch: Mapping[str, Any], tokenizer: Any | None = None) -> Any:
    """The transformers config of an architecture.

    Parameters
    ----------
    arch : mapping
        Architecture spec (`load_architecture`).
    tokenizer : transformers tokenizer or None
        When given, the special-token ids in the config must match it (the stand-in
        tokenizer's ids are set in the YAML); a mismatch is a `ConfigError`.

    Returns
    -------
    transformers.PretrainedConfig
    """
    from transformers import AutoConfig

    kwargs = dict(arch["config"])
    if "id2label" in kwargs:
        kwargs["id2label"] = {int(k): str(v) for k, v in dict(kwargs["id2label"]).items()}
        kwargs["label2id"] = {v: k for k, v in kwargs["id2label"].items()}
    if tokenizer is not None:
        for key, role in _TOKEN_ID_KEYS.items():
            token_id = getattr(tokenizer, f"{role}_token_id", None)
            if key in kwargs and token_id is not None and kwargs[key] != token_id:
                raise ConfigError(
                    f"architecture {arch['name']}: config.{key}={kwargs[key]} but the "
                    f"tokenizer's {role} token has id {token_id}"
                )
    try:
        return AutoConfig.for_model(arch["model_type"], **kwargs)
    except (TypeError, ValueError) as exc:
        raise ConfigError(f"architecture {arch['name']}: invalid config: {exc}") from exc


def build_random_model(model_class: type, config: Any, seed: int) -> Any:
    """Instantiate `model_class(config)` with weights drawn from a seeded generator.

    The global torch RNG is forked, so building a model leaves other random streams as
    they were. Same seed and config -> identical weights.
    """
    import torch

    with torch.random.fork_rng(devices=[]):
        torch.manual_seed(seed)
        model = model_class(config)
    return model.eval()
