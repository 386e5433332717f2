"""Structured-config schemas for splits and the bootstrap (registered by `runner.config`).

Why: `split.n_splits=abc` or a misspelt key must fail when Hydra composes the config, not
halfway through a study. Values that are the right type but cannot work
(`bootstrap.n_resamples=-5`, `split.n_splits=1`) fail in `__post_init__`, which
`runner.pipeline.check_config` runs (through `OmegaConf.to_object`) before any data load.
Each YAML in `conf/split/` and `conf/bootstrap/` names one of these schemas in its
defaults list; `SCHEMAS` lists (group, name, "module:Class") entries in the form
`runner.config.PART_SCHEMAS` uses.
"""

from __future__ import annotations

from dataclasses import dataclass, field

from runner.evaluation._checks import check_bootstrap_settings
from runner.evaluation.splits import check_n_splits, check_target_adaptation


@dataclass
class GroupedKFoldConf:
    """`runner.evaluation.splits.GroupedKFold`: StratifiedGroupKFold on label and group."""

    _target_: str = "runner.evaluation.splits.GroupedKFold"
    n_splits: int = 5
    seed: int = 13
    shuffle: bool = True
    y_col: str = "label"
    group_col: str = "group_id"
    order_col: str | None = "example_id"

    def __post_init__(self) -> None:
        check_n_splits(self.n_splits)


@dataclass
class KFoldConf:
    """`runner.evaluation.splits.KFold`: row-level (stratified) K-fold."""

    _target_: str = "runner.evaluation.splits.KFold"
    n_splits: int = 5
    seed: int = 13
    stratified: bool = True
    shuffle: bool = True
    y_col: str = "label"

    def __post_init__(self) -> None:
        check_n_splits(self.n_splits)


@dataclass
class LeaveSourceOutConf:
    """`runner.evaluation.splits.LeaveSourceOut`: each source held out in turn."""

    _target_: str = "runner.evaluation.splits.LeaveSourceOut"
    column: str = "source"
    y_col: str = "label"


@dataclass
class TargetAdaptationConf:
    """`runner.evaluation.splits.TargetAdaptation`: fixed test set, k-row target samples."""

    _target_: str = "runner.evaluation.splits.TargetAdaptation"
    test_fraction: float = 0.2
    ks: list[int] = field(default_factory=lambda: [25, 50, 100, 200])
    n_seeds: int = 10
    seed: int = 13
    column: str = "source"
    y_col: str = "label"
    group_col: str | None = None

    def __post_init__(self) -> None:
        check_target_adaptation(self.test_fraction, self.ks, self.n_seeds)


@dataclass
class BootstrapConf:
    """Group-bootstrap settings: settings, not a part (nothing is instantiated).

    The pipeline hands them to a study typed (`Inputs.bootstrap`), and the study passes
    them to `runner.evaluation.bootstrap.group_bootstrap` / `resample_weights`.
    """

    n_resamples: int = 1000
    level: float = 0.95
    seed: int = 13

    def __post_init__(self) -> None:
        check_bootstrap_settings(self.n_resamples, self.level)


SCHEMAS: list[tuple[str, str, str]] = [
    ("split", "grouped_kfold_schema", "runner.evaluation.config:GroupedKFoldConf"),
    ("split", "kfold_schema", "runner.evaluation.config:KFoldConf"),
    ("split", "leave_source_out_schema", "runner.evaluation.config:LeaveSourceOutConf"),
    ("split", "target_adaptation_schema", "runner.evaluation.config:TargetAdaptationConf"),
    ("bootstrap", "bootstrap_schema", "runner.evaluation.config:BootstrapConf"),
]
