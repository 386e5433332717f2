"""Structured configs for the judge group, so a typo or a wrong type fails at compose time.

The lead registers these in Hydra's ConfigStore (group ``judge``); the YAML files in
``conf/judge/`` are instances of them. Field names match the judge constructors one to one,
so ``hydra.utils.instantiate(cfg.judges.<name>)`` builds the judge with exactly these keys.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any, Optional

from omegaconf import MISSING

# OmegaConf reads these annotations at runtime and does not understand `X | None`.
# ruff: noqa: UP045


@dataclass
class TransformersJudgeConf:
    """Parameters of `runner.claims.judges.TransformersJudge` (see its docstring)."""

    _target_: str = "runner.claims.judges.TransformersJudge"
    name: str = MISSING
    family: str = MISSING
    model: str = MISSING
    gguf_file: Optional[str] = None
    tokenizer: Optional[str] = None
    dtype: str = "float32"
    device: str = "cpu"
    chat_template: Optional[str] = None
    merge_system: bool = False
    max_input_tokens: Optional[int] = None
    batch_size: int = 1
    reuse_prefix: bool = True
    prompt: str = "reason_then_json"
    max_new_tokens: int = 192
    repair: str = "reask"
    repair_max_new_tokens: int = 24
    max_passage_chars: Optional[int] = 16000
    seed: int = 13


@dataclass
class OpenAICompatibleJudgeConf:
    """Parameters of `runner.claims.judges.OpenAICompatibleJudge` (see its docstring)."""

    _target_: str = "runner.claims.judges.OpenAICompatibleJudge"
    name: str = MISSING
    family: str = MISSING
    base_url: str = MISSING
    model: str = MISSING
    api_key_env: Optional[str] = None
    timeout_s: float = 120.0
    extra_body: dict[str, Any] = field(default_factory=dict)
    prompt: str = "reason_then_json"
    max_new_tokens: int = 192
    repair: str = "reask"
    repair_max_new_tokens: int = 24
    max_passage_chars: Optional[int] = 16000
    seed: int = 13


SCHEMAS: list[tuple[str, str, str]] = [
    ("judge", "transformers_judge_schema", "runner.claims.judges.config:TransformersJudgeConf"),
    (
        "judge",
        "openai_compatible_judge_schema",
        "runner.claims.judges.config:OpenAICompatibleJudgeConf",
    ),
]
"""(group, name, "module:Class") for `runner.config.register_configs` (``SCHEMA_MODULES``)."""
