"""Structured configs for the judge group, so a typo or a wrong type fails at compose time.

Registered in Hydra's ConfigStore (group ``judge``, by `runner.config`); the YAML files in
``conf/judge/`` are instances of them. Each schema is derived from its judge class's fields
(`runner.settings.schema`), so a parameter is declared once, in the class, and
``hydra.utils.instantiate(cfg.judges.<name>)`` builds the judge with exactly these keys.
A field without a default (name, family, model, base_url) is mandatory (``???``).
"""

from __future__ import annotations

from runner import settings
from runner.claims.judges.openai_compatible import OpenAICompatibleJudge
from runner.claims.judges.transformers_judge import TransformersJudge


def schema(cls: type, name: str) -> type:
    """The structured config of judge class `cls`: ``_target_`` (its public path,
    ``runner.claims.judges.<Class>``) plus one key per field."""
    return settings.schema(cls, name, "runner.claims.judges", __name__)


TransformersJudgeConf = schema(TransformersJudge, "TransformersJudgeConf")
OpenAICompatibleJudgeConf = schema(OpenAICompatibleJudge, "OpenAICompatibleJudgeConf")

SCHEMAS: list[tuple[str, str, str]] = [
    ("judge", "transformers_judge_schema", "runner.claims.judges.config:TransformersJudgeConf"),
    (
        "judge",
        "openai_compatible_judge_schema",
        "runner.claims.judges.config:OpenAICompatibleJudgeConf",
    ),
]
"""(group, name, "module:Class") for `runner.config.register_configs` (``SCHEMA_MODULES``)."""
