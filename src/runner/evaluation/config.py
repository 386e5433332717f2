"""The ``bootstrap`` config group: settings, not a part (nothing is instantiated).

Why a record of its own: `bootstrap.n_resamples=abc` or a misspelt key must fail when Hydra
composes the config, and `bootstrap.n_resamples=-5` in `__post_init__`, which
`runner.pipeline.check_config` runs (through `OmegaConf.to_object`) before any data load.
``conf/bootstrap/*.yaml`` name this class in their defaults list and set only what differs.
(Splitters have no hand-written schema: theirs is derived from their ``__init__``,
`runner.settings.derive`.)
"""

from __future__ import annotations

from dataclasses import dataclass

from runner.evaluation._checks import check_bootstrap_settings
from runner.settings import SEED


@dataclass
class BootstrapConf:
    """Group-bootstrap settings.

    The pipeline hands them to a study typed (`Inputs.bootstrap`), and the study passes
    them to `runner.evaluation.bootstrap.group_bootstrap` / `resample_weights`.
    """

    n_resamples: int = 1000
    level: float = 0.95
    seed: int = SEED

    def __post_init__(self) -> None:
        check_bootstrap_settings(self.n_resamples, self.level)
