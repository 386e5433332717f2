"""DeBERTa-NLI cross-encoder verifier (the paper's DeBERTa-v3-small top-3 baseline).

Premise = evidence (by default the 3 context sentences with most lexical overlap with the
answer), hypothesis = answer, through `AutoModelForSequenceClassification`. Risk =
1 - P(entailment), where the entailment class is found by *name* in the model's
``config.id2label`` (``entailment_label``, case-insensitive), never by a fixed index:
NLI checkpoints disagree on label order (cross-encoder/nli-deberta-v3-small has
0 contradiction, 1 entailment, 2 neutral; MNLI heads often put entailment at 0). Both
"neutral" and "contradiction" therefore count as risk, which is what "not supported by the
evidence" means for a faithfulness gate.

With ``attention: fused`` (the default) the model's attention modules are replaced by
`runner.verifiers.deberta_attention.FusedDisentangledAttention`: the same numbers as the
stock transformers modules (to rounding), about 1.2-1.3x faster on CPU. ``attention: stock``
runs transformers' own modules (the benchmark's naive baseline).
"""

from __future__ import annotations

from typing import Any

import numpy as np
import pandas as pd

from runner.errors import ConfigError
from runner.settings import settings_class
from runner.verifiers.base import Verifier, inference, log_odds_against, softmax
from runner.verifiers.encoding import Encoded, encode_pairs
from runner.verifiers.loading import LoadedModel

ATTENTION = ("fused", "stock")
"""Attention implementations: `runner.verifiers.deberta_attention` or transformers' own."""


def find_label(id2label: dict[Any, str], name: str, model: str) -> int:
    """Index of the class called `name` (case-insensitive) in `id2label`.

    Raises
    ------
    ConfigError
        No class or several classes carry that name; lists the model's labels.
    """
    wanted = name.strip().lower()
    hits = [int(i) for i, label in id2label.items() if str(label).strip().lower() == wanted]
    if len(hits) != 1:
        raise ConfigError(
            f"model {model}: id2label={dict(id2label)} has {len(hits)} classes named "
            f"{name!r}; set the verifier's entailment_label to the name of the model's "
            f"entailment class"
        )
    return hits[0]


@settings_class(
    model="cross-encoder/nli-deberta-v3-small",
    architecture="deberta_v3_small",
    batch_size=2,  # the fastest on 2 cores
)
class DebertaNLIVerifier(Verifier):
    """NLI cross-encoder; risk = 1 - P(entailment | evidence, answer).

    Parameters
    ----------
    entailment_label : str
        Name of the entailment class in the model's ``id2label``.
    attention : {"fused", "stock"}
        Fused disentangled attention (same numbers, faster) or transformers' modules.
    Other parameters are `runner.verifiers.base.Verifier`'s, with the defaults given to
    `settings_class` above.
    """

    kind = "deberta_nli"
    head = "sequence"

    entailment_label: str = inference("entailment")
    attention: str = inference("fused")

    def _validate(self) -> None:
        if self.attention not in ATTENTION:
            raise ConfigError(f"{self.kind}: attention {self.attention!r} not in {ATTENTION}")
        super()._validate()

    def _fused_attention(self) -> bool:
        return self.attention == "fused"

    def _model_class(self) -> type:
        from transformers import AutoModelForSequenceClassification

        return AutoModelForSequenceClassification

    def _random_model_class(self) -> type:
        from transformers import DebertaV2ForSequenceClassification

        return DebertaV2ForSequenceClassification

    def _after_load(self, loaded: LoadedModel) -> None:
        self.entailment_index_ = find_label(
            loaded.model.config.id2label, self.entailment_label, loaded.name
        )

    def encode(self, frame: pd.DataFrame) -> Encoded:
        """(evidence, answer) pairs; only the evidence is truncated."""
        evidence = self.select_evidence(frame["context"].tolist(), frame["answer"].tolist())
        return encode_pairs(
            self.loaded.tokenizer,
            evidence,
            frame["answer"].tolist(),
            self.max_length,
            frame["example_id"].tolist(),
        )

    def _risk(self, logits: list[np.ndarray], encoded: Encoded) -> np.ndarray:
        probs = softmax(np.stack(logits))
        return 1.0 - probs[:, self.entailment_index_]

    def _risk_logit(self, logits: list[np.ndarray], encoded: Encoded) -> np.ndarray:
        return log_odds_against(np.stack(logits), self.entailment_index_)
