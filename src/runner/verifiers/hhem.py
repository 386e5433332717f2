"""HHEM-2.1-open scored on stock `T5ForTokenClassification` (no remote code).

HHEM-2.1-open is a flan-t5-base token classifier with two labels. Its Hub checkpoint ships a
custom class (``HHEMv2ForSequenceClassification``) that needs ``trust_remote_code``; the
runner never runs remote code, so it rebuilds the same computation from stock parts:

- input: ``template.format(text1=evidence, text2=answer)`` with the template
  ``"<pad> Determine if the hypothesis is true given the premise?\\n\\nPremise: {text1}\\n\\n"
  "Hypothesis: {text2}"``, tokenised by the flan-t5 tokenizer (``</s>`` appended);
- consistency = softmax of the logits at the first position, class 1; risk = 1 - consistency.

`T5ForTokenClassification` wraps `T5EncoderModel`: only the 12-layer encoder and the
linear head run (flan-t5-base's decoder is never built), which is exactly HHEM's forward
pass and what the cost measurement times.

Accepted checkpoints: a stock T5ForTokenClassification directory (``model_type: t5``); or the
HHEM-2.1-open directory as downloaded from the Hub (``model_type`` other than t5, weights
under the ``t5.`` prefix): its T5 configuration and tokenizer come from ``foundation`` (a
local google/flan-t5-base directory; default: the checkpoint's own ``foundation`` entry),
and its weights are loaded into the stock class with the prefix removed, every key checked.
The evidence is cut to fit ``max_length`` (512 for ``hhem_full``), never the answer.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import numpy as np
import pandas as pd

from runner.env import hub_offline
from runner.errors import ConfigError
from runner.settings import settings_class
from runner.verifiers.base import Verifier, inference, log_odds_against, softmax
from runner.verifiers.encoding import Encoded, encode_template
from runner.verifiers.loading import (
    LoadedModel,
    count_parameters,
    load_tokenizer,
    read_config_json,
    resolve_source,
)

HHEM_TEMPLATE = (
    "<pad> Determine if the hypothesis is true given the premise?\n\n"
    "Premise: {text1}\n\nHypothesis: {text2}"
)
"""HHEM-2.1-open's prompt (premise = evidence, hypothesis = answer)."""

CONSISTENT_CLASS = 1
"""HHEM's class 1 = the hypothesis is consistent with the premise."""

_PREFIX = "t5."
_TIED = {"transformer.encoder.embed_tokens.weight"}


def _state_dict(source: str, revision: str | None) -> dict[str, Any]:
    import torch

    folder = Path(source)
    names = ["model.safetensors", "pytorch_model.bin"]
    for name in names:
        path = folder / name
        if not path.is_file() and not folder.is_dir():
            from huggingface_hub import try_to_load_from_cache

            cached = try_to_load_from_cache(source, name, revision=revision)
            path = Path(cached) if isinstance(cached, str) else path
        if path.is_file():
            if name.endswith(".safetensors"):
                from safetensors.torch import load_file

                return load_file(str(path))
            return torch.load(str(path), map_location="cpu", weights_only=True)
    raise ConfigError(f"HHEM checkpoint {source}: none of {names} found")


def load_hhem_checkpoint(source: str, revision: str | None, foundation: str | None) -> Any:
    """Load an HHEM-style checkpoint (``t5.``-prefixed weights) into `T5ForTokenClassification`.

    Parameters
    ----------
    source : str
        Resolved checkpoint directory or cached Hub id.
    revision : str or None
    foundation : str or None
        flan-t5-base directory or id for the T5 configuration (default: the checkpoint's
        ``foundation`` entry).

    Returns
    -------
    (model, foundation source)
    """
    from transformers import T5Config, T5ForTokenClassification

    raw = read_config_json(source, revision)
    base = foundation or raw.get("foundation")
    if not base:
        raise ConfigError(
            f"HHEM checkpoint {source}: model_type {raw.get('model_type')!r} "
            f"is not t5 and no foundation is configured (set foundation=DIR of "
            f"google/flan-t5-base)"
        )
    base_source = resolve_source(base)
    config = T5Config.from_pretrained(base_source, local_files_only=hub_offline())
    config.num_labels = 2
    config.id2label = {0: "hallucinated", 1: "consistent"}
    config.label2id = {"hallucinated": 0, "consistent": 1}
    model = T5ForTokenClassification(config)
    weights = _state_dict(source, revision)
    stripped = {k[len(_PREFIX) :]: v for k, v in weights.items() if k.startswith(_PREFIX)}
    if len(stripped) != len(weights):
        other = sorted(k for k in weights if not k.startswith(_PREFIX))[:5]
        raise ConfigError(f"HHEM checkpoint {source}: weights outside '{_PREFIX}': {other}")
    result = model.load_state_dict(stripped, strict=False)
    missing = set(result.missing_keys) - _TIED
    if missing or result.unexpected_keys:
        raise ConfigError(
            f"HHEM checkpoint {source} does not match T5ForTokenClassification({base}): "
            f"missing {sorted(missing)[:5]}, unexpected {sorted(result.unexpected_keys)[:5]}"
        )
    model.tie_weights()
    return model.eval(), base_source


@settings_class(
    model="vectara/hallucination_evaluation_model",
    architecture="flan_t5_base_encoder",
    evidence="full_context",
)
class HHEMVerifier(Verifier):
    """HHEM-2.1-open: risk = 1 - softmax(first-position logits)[class 1].

    Parameters
    ----------
    template : str
        Prompt with ``{text1}`` (evidence) and ``{text2}`` (answer).
    foundation : str or None
        google/flan-t5-base directory or id, for HHEM-format checkpoints.
    Other parameters are `runner.verifiers.base.Verifier`'s, with the defaults given to
    `settings_class` above.
    """

    kind = "hhem"
    head = "first_token"

    template: str = inference(HHEM_TEMPLATE)
    foundation: str | None = None

    def _validate(self) -> None:
        super()._validate()
        for field in ("{text1}", "{text2}"):
            if field not in self.template:
                raise ConfigError(f"hhem: template has no {field} field")

    def check_sources(self) -> None:
        super().check_sources()
        if self.foundation and self.weights == "pretrained":
            resolve_source(self.foundation)

    def _model_class(self) -> type:
        from transformers import T5ForTokenClassification

        return T5ForTokenClassification

    def _load_base(self) -> LoadedModel:
        if self.weights == "random":
            return super()._load_base()
        source = resolve_source(self.model, self.revision)
        raw = read_config_json(source, self.revision)
        if raw.get("model_type") == "t5":
            return super()._load_base()
        model, base_source = load_hhem_checkpoint(source, self.revision, self.foundation)
        tok_source = (
            resolve_source(self.tokenizer)
            if self.tokenizer
            else source
            if _has_tokenizer(source)
            else base_source
        )
        tok = load_tokenizer(tok_source)
        return LoadedModel(
            model,
            tok,
            self.model,
            self.revision,
            count_parameters(model),
            {"source": tok_source, "foundation": base_source},
        )

    def _after_load(self, loaded: LoadedModel) -> None:
        if loaded.model.config.num_labels != 2:
            raise ConfigError(
                f"hhem: model {loaded.name} has {loaded.model.config.num_labels} labels, HHEM has 2"
            )

    def encode(self, frame: pd.DataFrame) -> Encoded:
        """Template prompts; only the evidence is truncated."""
        evidence = self.select_evidence(frame["context"].tolist(), frame["answer"].tolist())
        return encode_template(
            self.loaded.tokenizer,
            self.template,
            evidence,
            frame["answer"].tolist(),
            self.max_length,
            frame["example_id"].tolist(),
        )

    def _risk(self, logits: list[np.ndarray], encoded: Encoded) -> np.ndarray:
        return 1.0 - softmax(np.stack(logits))[:, CONSISTENT_CLASS]

    def _risk_logit(self, logits: list[np.ndarray], encoded: Encoded) -> np.ndarray:
        return log_odds_against(np.stack(logits), CONSISTENT_CLASS)


def _has_tokenizer(source: str) -> bool:
    folder = Path(source)
    return folder.is_dir() and any(
        (folder / n).is_file() for n in ("tokenizer.json", "spiece.model")
    )
