"""The ``architecture`` config group: an exact model shape for ``weights: random``.

A record, its own schema (``conf/architecture/*.yaml`` name it). Verifier schemas are not
written here: each is derived from its class's fields when ``conf/verifier/<x>.yaml`` names
the class (`runner.settings.derive`, `runner.config.register_configs`).
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any


@dataclass
class ArchitectureConf:
    """An exact model architecture for ``weights: random`` (``conf/architecture/*.yaml``)."""

    name: str = "???"
    model_type: str = "???"
    config: dict[str, Any] = field(default_factory=dict)
    tokenizer: dict[str, Any] = field(default_factory=dict)
