"""Structured configs of the gates, for Hydra's ConfigStore.

One dataclass per gate class. Registered as the schema of a ``gate`` config, they make an
unknown key or a wrongly typed value fail when the config is composed, before any work
starts. `_target_` names the class `hydra.utils.instantiate` builds. `_convert_` is "all" so
that lists reach the estimators as plain Python lists (clone-safe, picklable).
"""

from __future__ import annotations

from dataclasses import dataclass, field

from omegaconf import MISSING

from runner.gates.tfidf import TfidfKind


@dataclass
class FeatureGateConf:
    """`runner.gates.FeatureGate`: zero-shot risk = sign × one lexical feature."""

    _target_: str = "runner.gates.FeatureGate"
    feature: str = MISSING
    sign: float = 1.0


@dataclass
class TfidfGateConf:
    """`runner.gates.TfidfGate`: 1 − TF-IDF cosine, IDF fitted on the training fold."""

    _target_: str = "runner.gates.TfidfGate"
    kind: TfidfKind = TfidfKind.answer_context


@dataclass
class LogitGateConf:
    """`runner.gates.LogitGate`: standardised logistic regression on lexical [+ TF-IDF]."""

    _target_: str = "runner.gates.LogitGate"
    _convert_: str = "all"
    features: list[str] = MISSING
    tfidf: bool = False
    C: float = 1.0
    class_weight: str | None = "balanced"
    max_iter: int = 1000
    random_state: int = 13
    solver: str = "lbfgs"
    extra_features: list[str] = field(default_factory=list)


CONF_BY_TARGET: dict[str, type] = {
    conf._target_: conf for conf in (FeatureGateConf, TfidfGateConf, LogitGateConf)
}

SCHEMAS: list[tuple[str, str, str]] = [
    ("gate", "feature_gate_schema", "runner.gates.config:FeatureGateConf"),
    ("gate", "tfidf_gate_schema", "runner.gates.config:TfidfGateConf"),
    ("gate", "logit_gate_schema", "runner.gates.config:LogitGateConf"),
]
