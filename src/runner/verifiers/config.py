"""Structured-config schemas of the verifier configs (``conf/verifier/*.yaml``).

Why: registered in Hydra's ConfigStore (by `runner.config`), they make OmegaConf reject a
misspelt key or a wrongly typed value (``verifiers.hhem.batch_size=abc``) at compose time,
before any model is loaded. Each schema is derived from its verifier class's fields
(`schema`), so a parameter is declared once, in the class, and its type and default reach
the config from there.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

from runner import settings
from runner.verifiers.deberta_nli import DebertaNLIVerifier
from runner.verifiers.hhem import HHEMVerifier
from runner.verifiers.lettuce_detect import LettuceDetectVerifier


@dataclass
class ArchitectureConf:
    """An exact model architecture for ``weights: random`` (``conf/architecture/*.yaml``)."""

    name: str = "???"
    model_type: str = "???"
    config: dict[str, Any] = field(default_factory=dict)
    tokenizer: dict[str, Any] = field(default_factory=dict)


def schema(cls: type, name: str) -> type:
    """The structured config of verifier class `cls`: ``_target_`` plus one key per field.

    ``_target_`` is the class's public path, ``runner.verifiers.<Class>``; types and
    defaults are the class's own (`runner.settings.schema`; ``Any`` stays unchecked, e.g.
    ``architecture``, which is a name or a mapping).
    """
    return settings.schema(cls, name, "runner.verifiers", __name__)


DebertaNLIConf = schema(DebertaNLIVerifier, "DebertaNLIConf")
HHEMConf = schema(HHEMVerifier, "HHEMConf")
LettuceDetectConf = schema(LettuceDetectVerifier, "LettuceDetectConf")

SCHEMAS: list[tuple[str, str, str]] = [
    ("verifier", "deberta_nli_schema", "runner.verifiers.config:DebertaNLIConf"),
    ("verifier", "hhem_schema", "runner.verifiers.config:HHEMConf"),
    ("verifier", "lettucedetect_schema", "runner.verifiers.config:LettuceDetectConf"),
    ("architecture", "architecture_schema", "runner.verifiers.config:ArchitectureConf"),
]
"""(group, name, "module:Class") entries for `runner.config.PART_SCHEMAS`."""
