"""Structured-config schemas, registered in Hydra's ConfigStore.

Why: a typo in an override (`split.n_splits=abc`, `dataset.pth=...`) must fail at compose
time, naming the key, before any data is read or model loaded. Every YAML in `conf/`
starts from one of these schemas (its defaults list names `<kind>_schema`), so OmegaConf
checks types and rejects unknown keys. Parts' own schemas live beside the parts
(`runner.gates.config`, `runner.data.config`, ...); this module only registers them.
"""

from __future__ import annotations

import dataclasses
import importlib
import warnings
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from hydra.core.config_store import ConfigStore
from omegaconf import MISSING, DictConfig, OmegaConf

OPEN_KEYS = "open_keys"
"""Field metadata of a ``dict`` whose keys are the user's to choose.

Why: Hydra closes every dict before it applies the command line, so the documented
``dataset.columns.id=request_id`` (and ``'dataset.columns={id: request_id}'``) would be
refused as "not in struct" and only the ``+`` form would work. A field declared with
``field(default_factory=dict, metadata={OPEN_KEYS: True})`` keeps its own node open
(`register_configs`); whoever reads it still checks its keys.
"""


@dataclass
class StudyConf:
    """Which study module runs (`runner.studies.<name>`) and its typed parameters."""

    name: str = MISSING
    params: dict[str, Any] = field(default_factory=dict)


@dataclass
class PathsConf:
    """Filesystem locations (data sets are found by each loader: `$RUNNER_DATA_DIR`).

    `output_dir` is the experiment's folder: each run writes `runs/<id>/` there and
    `latest` points at the newest complete one. `keep_runs` bounds how many complete runs
    stay (null: all; the latest and runs still writing are never removed).
    """

    artifacts_dir: str = MISSING
    output_dir: str = MISSING
    cache_dir: str | None = None
    keep_runs: int | None = None


@dataclass
class TrackingConf:
    """MLflow tracking: a SQLite backend under `artifacts/` unless `uri` says otherwise."""

    enabled: bool = True
    server: bool = False  # true (tracking=server): `uri` must be an http(s) tracking server
    uri: str | None = None
    artifact_root: str | None = None
    experiment_name: str | None = None
    run_name: str | None = None


@dataclass
class RunConfig:
    """The whole composed run: one experiment, its data, its parts and the protocol."""

    experiment: str = MISSING
    seed: int = 13
    progress: bool = True
    study: StudyConf = field(default_factory=StudyConf)
    dataset: Any = None
    split: Any = None
    # Further named splitters, e.g. RQ5's `splits.cross_source` and `splits.target`
    # (composed with `- /split@splits.<name>: <option>`; built into `Inputs.splits`).
    splits: dict[str, Any] = field(default_factory=dict)
    bootstrap: Any = None
    tracking: TrackingConf = field(default_factory=TrackingConf)
    hri: Any = None
    gates: dict[str, Any] = field(default_factory=dict)
    verifiers: dict[str, Any] = field(default_factory=dict)
    judges: dict[str, Any] = field(default_factory=dict)
    span_detector: Any = None
    routing: Any = None
    detector: Any = None
    train: Any = None
    paths: PathsConf = field(default_factory=PathsConf)


# (config group, schema name, "module:Class"). Schemas live beside the parts they type,
# each module listing its own in `SCHEMAS`; a missing module fails loudly at registration.
PART_SCHEMAS: list[tuple[str, str, str]] = [
    ("tracking", "tracking_schema", "runner.config:TrackingConf"),
]
SCHEMA_MODULES: tuple[str, ...] = (
    "runner.data.config",
    "runner.evaluation.config",
    "runner.gates.config",
    "runner.hri.config",
    "runner.claims.judges.config",
    "runner.claims.span_detector",
    "runner.verifiers.config",
    "runner.routing.config",
    "runner.verifiers.detector_config",
)


def _load(spec: str) -> type:
    module, _, name = spec.partition(":")
    return getattr(importlib.import_module(module), name)


def register_configs(extra: list[tuple[str, str, str]] | None = None) -> ConfigStore:
    """Register the run schema and every part schema; safe to call more than once."""
    from runner.paths import PROJECT_ROOT

    # conf/hydra/launcher/{ray,submitit_*}.yaml share their names with the plugins' own
    # schemas on purpose (`hydra/launcher=ray`): Hydra validates them against those schemas
    # and warns that this matching is deprecated; the warning is expected, not a fault.
    warnings.filterwarnings(
        "ignore", message=r"(?s).*is validated against ConfigStore schema with the same name"
    )
    if not OmegaConf.has_resolver("project_root"):
        OmegaConf.register_new_resolver("project_root", lambda: str(PROJECT_ROOT))
    cs = ConfigStore.instance()
    cs.store(name="config_schema", node=RunConfig)
    specs = list(PART_SCHEMAS)
    for module in SCHEMA_MODULES:
        specs += importlib.import_module(module).SCHEMAS
    for group, name, spec in specs + list(extra or []):
        cs.store(group=group, name=name, node=_schema_node(_load(spec)))
    return cs


def _schema_node(schema: type) -> Any:
    """The schema as stored: the class itself, or, when a field is marked `OPEN_KEYS`, its
    structured node with that field's dict left open (its own flag outlives Hydra's
    closing of the root, so plain overrides may add keys to it)."""
    opened = [f.name for f in dataclasses.fields(schema) if f.metadata.get(OPEN_KEYS)]
    if not opened:
        return schema
    node = OmegaConf.structured(schema)
    for name in opened:
        OmegaConf.set_struct(node._get_node(name), False)
    return node


def load_part_yaml(path: str | Path) -> DictConfig:
    """One part's YAML (a gate, a dataset, ...) without its Hydra defaults list.

    For building a part outside Hydra (`instantiate(load_part_yaml(p))`) and for tests
    that check a file against its schema.
    """
    node = OmegaConf.load(path)
    if "defaults" in node:
        node = OmegaConf.masked_copy(node, [k for k in node if k != "defaults"])
    return node
