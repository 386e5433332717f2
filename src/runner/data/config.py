"""Structured configs for the dataset group, so a typo or a wrong type fails before any work.

Every dataset schema lives here, one per loader; `runner.config` registers them in Hydra's
ConfigStore (group ``dataset``); the YAML files in
``conf/dataset/`` are instances of them. Field names match the loader parameters one to one,
so ``hydra.utils.instantiate(cfg.dataset)`` calls the loader with exactly these keys.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Optional

from omegaconf import MISSING

from runner.config import OPEN_KEYS
from runner.data.factbench import COLLECTIONS, DEFAULT_IMPORTANCE
from runner.data.hri_claims import DEFAULT_CLAIMS_FILE

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
        from runner.data.ragtruth import SPLITS
        from runner.data.split_files import check_split_file

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


@dataclass
class WiceConf:
    """Parameters of `load_wice` (full cited-article evidence)."""

    _target_: str = "runner.data.wice.load_wice"
    name: str = "wice"
    split: str = "test"
    path: Optional[str] = None
    limit: Optional[int] = None
    data_dir: Optional[str] = None

    def __post_init__(self) -> None:
        from runner.data.split_files import check_split_file
        from runner.data.wice import WICE_SPLITS

        check_split_file(self.name, self.split, self.path, WICE_SPLITS)


@dataclass
class WiceOracleConf(WiceConf):
    """Parameters of `load_wice_oracle` (oracle evidence chunks, several per claim)."""

    _target_: str = "runner.data.wice.load_wice_oracle"
    name: str = "wice_oracle"


@dataclass
class FactcheckStanceConf:
    """Parameters of `load_factcheck_stance` (claim-evidence stance pairs)."""

    _target_: str = "runner.data.factcheck_stance.load_factcheck_stance"
    name: str = "factcheck_stance"
    irrelevant: str = "exclude"
    path: Optional[str] = None
    limit: Optional[int] = None
    data_dir: Optional[str] = None


@dataclass
class ClaimsJsonlConf:
    """Parameters of `load_claims_jsonl` (a user's own claim file)."""

    _target_: str = "runner.data.claims_jsonl.load_claims_jsonl"
    name: str = "claims_jsonl"
    path: str = MISSING
    limit: Optional[int] = None
    skip_invalid: bool = False


@dataclass
class RagFileConf:
    """Parameters of `load_rag_file` (see its docstring)."""

    _target_: str = "runner.data.rag_file.load_rag_file"
    name: str = "rag_file"
    path: str = MISSING
    # open: `dataset.columns.<field>=<column>` adds a key (checked by `check_settings`)
    columns: dict[str, str] = field(default_factory=dict, metadata={OPEN_KEYS: True})
    extra_columns: str = "error"
    limit: Optional[int] = None
    skip_invalid: bool = False

    def __post_init__(self) -> None:
        from runner.data.rag_file import check_settings

        check_settings(dict(self.columns), self.extra_columns, self.limit)


@dataclass
class FactbenchConf:
    """Dataset schema for ``conf/dataset/factbench.yaml`` (register as ``factbench_schema``)."""

    _target_: str = "runner.data.factbench.load_factbench"
    path: Optional[str] = None
    collections: list[str] = field(default_factory=lambda: list(COLLECTIONS))
    importance_criticality: dict[str, int] = field(default_factory=lambda: dict(DEFAULT_IMPORTANCE))
    name: str = "factbench"


@dataclass
class HRIClaimsConf:
    """Dataset schema for ``conf/dataset/hri_claims.yaml`` (register as ``hri_claims_schema``)."""

    _target_: str = "runner.data.hri_claims.load_hri_claims"
    path: str = DEFAULT_CLAIMS_FILE
    name: str = "hri_claims"


@dataclass
class AuditLabelsConf:
    """Parameters of `load_audit_labels`."""

    _target_: str = "runner.data.audit_labels.load_audit_labels"
    name: str = "audit_labels"
    decisions: str = MISSING
    labels: str = MISSING
    scope: str = "marked"
    id_column: str = "id"
    label_column: str = "label"


@dataclass
class MlflowTracesConf:
    """Parameters of `load_mlflow_traces` (see its docstring)."""

    _target_: str = "runner.data.mlflow_traces.load_mlflow_traces"
    name: str = "mlflow_traces"
    experiment: str = MISSING
    tracking_uri: Optional[str] = None
    filter_string: Optional[str] = None
    since: Optional[str] = None
    until: Optional[str] = None
    max_results: Optional[int] = None
    question_key: Optional[str] = "question"
    answer_key: Optional[str] = None
    source_tag: str = "source"
    task_tag: str = "task"
    label: Optional[str] = None
    skip_invalid: bool = False

    def __post_init__(self) -> None:
        from runner.data.mlflow_traces import check_settings

        if self.experiment != MISSING:
            check_settings(self.experiment, self.max_results, self.since, self.until)


@dataclass
class TraceAuditConf:
    """Parameters of `load_trace_audit_labels` (see its docstring)."""

    _target_: str = "runner.data.trace_audit.load_trace_audit_labels"
    name: str = "mlflow_trace_audit"
    experiment: str = MISSING
    tracking_uri: Optional[str] = None
    label: str = "hallucinated"
    scope: str = "marked"
    model: Optional[str] = None


SCHEMAS: list[tuple[str, str, str]] = [
    ("dataset", "ragtruth_schema", "runner.data.config:RagTruthConf"),
    ("dataset", "halubench_schema", "runner.data.config:HaluBenchConf"),
    ("dataset", "wice_schema", "runner.data.config:WiceConf"),
    ("dataset", "wice_oracle_schema", "runner.data.config:WiceOracleConf"),
    ("dataset", "factcheck_stance_schema", "runner.data.config:FactcheckStanceConf"),
    ("dataset", "claims_jsonl_schema", "runner.data.config:ClaimsJsonlConf"),
    ("dataset", "rag_file_schema", "runner.data.config:RagFileConf"),
    ("dataset", "factbench_schema", "runner.data.config:FactbenchConf"),
    ("dataset", "hri_claims_schema", "runner.data.config:HRIClaimsConf"),
    ("dataset", "audit_labels_schema", "runner.data.config:AuditLabelsConf"),
    ("dataset", "mlflow_traces_schema", "runner.data.config:MlflowTracesConf"),
    ("dataset", "mlflow_trace_audit_schema", "runner.data.config:TraceAuditConf"),
]
