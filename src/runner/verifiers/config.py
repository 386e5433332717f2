"""Structured-config schemas of the verifier configs (``conf/verifier/*.yaml``).

Why: registered in Hydra's ConfigStore (by `runner.config`), they make OmegaConf reject a
misspelt key or a wrongly typed value (``verifiers.hhem.batch_size=abc``) at compose time,
before any model is loaded. Field meanings are those of the verifier classes'
constructor parameters (`runner.verifiers.base.Verifier` and subclasses); defaults here
equal the classes' defaults.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

from runner.verifiers.hhem import HHEM_TEMPLATE


@dataclass
class ArchitectureConf:
    """An exact model architecture for ``weights: random`` (``conf/architecture/*.yaml``)."""

    name: str = "???"
    model_type: str = "???"
    config: dict[str, Any] = field(default_factory=dict)
    tokenizer: dict[str, Any] = field(default_factory=dict)


@dataclass
class VerifierConf:
    """Settings shared by every verifier."""

    _target_: str = "???"
    model: str = "???"
    revision: str | None = None
    weights: str = "pretrained"
    architecture: Any = None
    tokenizer: str | None = None
    tokenizer_corpus: str | None = None
    device: str = "cpu"
    batch_size: int = 1
    max_length: int = 512
    dtype: str = "float32"
    quantize: str | None = None
    threads: int | None = None
    evidence: str = "top_k_sentences"
    top_k: int = 3
    sort_by_length: bool = True
    seed: int = 13


@dataclass
class DebertaNLIConf(VerifierConf):
    """`runner.verifiers.DebertaNLIVerifier`."""

    _target_: str = "runner.verifiers.DebertaNLIVerifier"
    model: str = "cross-encoder/nli-deberta-v3-small"
    batch_size: int = 2
    entailment_label: str = "entailment"
    attention: str = "fused"


@dataclass
class HHEMConf(VerifierConf):
    """`runner.verifiers.HHEMVerifier`."""

    _target_: str = "runner.verifiers.HHEMVerifier"
    model: str = "vectara/hallucination_evaluation_model"
    evidence: str = "full_context"
    template: str = HHEM_TEMPLATE
    foundation: str | None = None


@dataclass
class LettuceDetectConf(VerifierConf):
    """`runner.verifiers.LettuceDetectVerifier`."""

    _target_: str = "runner.verifiers.LettuceDetectVerifier"
    model: str = "KRLabsOrg/lettucedect-base-modernbert-en-v1"
    evidence: str = "full_context"
    max_length: int = 4096
    threshold: float = 0.5
    risk: str = "max_prob"
    include_question: bool = True


SCHEMAS: list[tuple[str, str, str]] = [
    ("verifier", "deberta_nli_schema", "runner.verifiers.config:DebertaNLIConf"),
    ("verifier", "hhem_schema", "runner.verifiers.config:HHEMConf"),
    ("verifier", "lettucedetect_schema", "runner.verifiers.config:LettuceDetectConf"),
    ("architecture", "architecture_schema", "runner.verifiers.config:ArchitectureConf"),
]
"""(group, name, "module:Class") entries for `runner.config.PART_SCHEMAS`."""
