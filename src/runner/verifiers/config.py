"""Structured-config schemas of the verifier configs (``conf/verifier/*.yaml``).

Why: registered in Hydra's ConfigStore (by `runner.config`), they make OmegaConf reject a
misspelt key or a wrongly typed value (``verifiers.hhem.batch_size=abc``) at compose time,
before any model is loaded. Each schema is derived from its verifier class's fields
(`schema`), so a parameter is declared once, in the class, and its type and default reach
the config from there.
"""

from __future__ import annotations

from dataclasses import MISSING, Field, dataclass, field, fields, make_dataclass
from typing import Any, get_type_hints

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


def _default(spec: Field) -> Any:
    if spec.default is not MISSING:
        return field(default=spec.default)
    if spec.default_factory is not MISSING:
        return field(default_factory=spec.default_factory)
    return field(default="???")  # OmegaConf's mandatory value


def schema(cls: type, name: str) -> type:
    """The structured config of verifier class `cls`: ``_target_`` plus one key per field.

    Types and defaults are the class's own (`typing.get_type_hints` resolves the string
    annotations; OmegaConf 2.3 types ``X | None`` as Optional and leaves ``Any`` unchecked,
    e.g. ``architecture``, which is a name or a mapping). ``_target_`` is the class's
    public path, ``runner.verifiers.<Class>``.
    """
    hints = get_type_hints(cls)
    specs: list[tuple[str, Any, Any]] = [
        ("_target_", str, field(default=f"runner.verifiers.{cls.__name__}"))
    ]
    specs += [(f.name, hints[f.name], _default(f)) for f in fields(cls)]
    conf = make_dataclass(name, specs)
    conf.__module__ = __name__
    conf.__doc__ = f"`runner.verifiers.{cls.__name__}` (derived from its fields)."
    return conf


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
