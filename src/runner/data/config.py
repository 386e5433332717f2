"""Structured configs for the dataset group, so a typo or a wrong type fails before any work.

The lead registers these in Hydra's ConfigStore (group ``dataset``); the YAML files in
``conf/dataset/`` are instances of them. Field names match the loader parameters one to one,
so ``hydra.utils.instantiate(cfg.dataset)`` calls the loader with exactly these keys.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Optional

# OmegaConf reads these annotations at runtime and does not understand `X | None`.
# ruff: noqa: UP045


@dataclass
class RagTruthConf:
    """Parameters of `runner.data.ragtruth.load_ragtruth` (see its docstring)."""

    _target_: str = "runner.data.ragtruth.load_ragtruth"
    name: str = "ragtruth"
    split: str = "test"
    path: Optional[str] = None
    format: str = "auto"
    hub_id: str = "wandb/RAGTruth-processed"
    limit: Optional[int] = None
    skip_invalid: bool = False
    data_dir: Optional[str] = None

    def __post_init__(self) -> None:
        from runner.data.base import check_split_file
        from runner.data.ragtruth import SPLITS

        check_split_file(self.name, self.split, self.path, SPLITS)


@dataclass
class HaluBenchConf:
    """Parameters of `runner.data.halubench.load_halubench` (see its docstring)."""

    _target_: str = "runner.data.halubench.load_halubench"
    name: str = "halubench"
    path: Optional[str] = None
    sources: Optional[list[str]] = None
    require_sources: Optional[list[str]] = None
    hub_id: str = "PatronusAI/HaluBench"
    limit: Optional[int] = None
    skip_invalid: bool = False
    data_dir: Optional[str] = None


SCHEMAS: list[tuple[str, str, str]] = [
    ("dataset", "ragtruth_schema", "runner.data.config:RagTruthConf"),
    ("dataset", "halubench_schema", "runner.data.config:HaluBenchConf"),
]
