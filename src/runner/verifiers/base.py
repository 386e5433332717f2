"""The verifier interface shared with gates, and the batched inference loop all verifiers use.

Why: a study treats gates and verifiers alike (``score(frame) -> risk``, larger = more
likely unfaithful; ``needs_fit = False`` tells the out-of-fold loop there is nothing to fit),
so a verifier is a scikit-learn-style estimator whose constructor arguments are its whole
configuration (``get_params`` / ``clone`` work, Hydra instantiates it from YAML). Those
arguments are dataclass fields, declared once: the shared ones here, each verifier's own in
its class; the config schemas are derived from them (`runner.settings.derive`).

Inference is the same for every verifier: evidence selection, tokenisation with
evidence-only truncation, length-sorted batches padded to the batch's longest, one forward
pass per batch under ``torch.inference_mode`` (bf16 autocast or int8 dynamic quantisation
when configured) with the configured number of threads. Scores are returned in the frame's
row order whatever the batching; in float32 they equal one-example-at-a-time scoring
within 1e-5.
"""

from __future__ import annotations

import logging
from collections.abc import Sequence
from dataclasses import field, fields
from pathlib import Path
from typing import Any, ClassVar

import numpy as np
import pandas as pd
from sklearn.base import BaseEstimator, clone

from runner.errors import ConfigError, DataError
from runner.settings import SEED, settings_class
from runner.verifiers.checkpoint_check import check_verifier_folder
from runner.verifiers.encoding import Encoded, TruncationStats, length_sorted_batches, pad
from runner.verifiers.evidence import check_policy, select_evidence
from runner.verifiers.loading import (
    WEIGHTS,
    LoadedModel,
    check_precision,
    load_pretrained,
    load_random,
    precision,
    prepare,
    resolve_source,
    torch_threads,
)

log = logging.getLogger(__name__)

FRAME_COLUMNS = ("example_id", "question", "context", "answer")
"""Columns of the canonical response frame a verifier reads."""

INFERENCE = "inference"
"""Field metadata key: the setting is an inference setting (see `inference`)."""

PRECISION_NAMES = {
    ("float32", None): "fp32",
    ("bfloat16", None): "bf16-autocast",
    ("float16", None): "fp16-autocast",
    ("float32", "int8_dynamic"): "int8-dynamic",
    ("float32", "int8_mixed"): "int8-mixed",
}


def softmax(logits: np.ndarray) -> np.ndarray:
    """Softmax over the last axis, in float64."""
    z = np.asarray(logits, dtype=np.float64)
    z = z - z.max(axis=-1, keepdims=True)
    e = np.exp(z)
    return e / e.sum(axis=-1, keepdims=True)


def log_odds_against(logits: np.ndarray, index: int) -> np.ndarray:
    """log P(not class `index`) - log P(class `index`) from logits, without saturating."""
    z = np.asarray(logits, dtype=np.float64)
    others = np.delete(z, index, axis=-1)
    top = others.max(axis=-1, keepdims=True)
    log_rest = top[..., 0] + np.log(np.exp(others - top).sum(axis=-1))
    return log_rest - z[..., index]


def check_frame(frame: pd.DataFrame, columns: Sequence[str] = FRAME_COLUMNS) -> None:
    """Raise `DataError` naming the first missing column or non-string cell."""
    for column in columns:
        if column not in frame.columns:
            raise DataError(
                f"verifier input has no column (has {list(frame.columns)})",
                row="header",
                field=column,
            )
    for column in columns:
        values = frame[column].tolist()
        for pos, value in enumerate(values):
            if not isinstance(value, str):
                row = frame["example_id"].iloc[pos] if column != "example_id" else pos
                raise DataError(
                    f"expected a string, got {type(value).__name__}", row=row, field=column
                )


def inference(default: Any) -> Any:
    """A setting `Verifier.with_settings` may change without reloading the weights."""
    return field(default=default, metadata={INFERENCE: True})


@settings_class()
class Verifier(BaseEstimator):
    """Base of model-backed scorers; subclasses set the head and the input format.

    Every parameter is a dataclass field (declared here once for all verifiers; a subclass
    adds its own and overrides defaults with `settings_class`); YAML keys and CLI overrides
    (``verifiers.<name>.batch_size=4``) are these names.

    Parameters
    ----------
    model : str
        Local model directory or Hub id (from the local cache while offline). With
        ``weights="random"`` it is only a label; the architecture decides the model.
    revision : str or None
        Hub revision (branch, tag or commit); None = the cached default.
    weights : {"pretrained", "random"}
        ``random``: the exact architecture of `architecture` with seeded random weights, to
        measure cost only; its scores must never be reported as accuracy.
    architecture : mapping or str or None
        Architecture spec (``conf/architecture/*.yaml``) for random weights.
    tokenizer : str or None
        Tokenizer directory or id, if not the model's own (random weights: instead of the
        stand-in trained on `tokenizer_corpus`).
    tokenizer_corpus : str or None
        Corpus for the stand-in tokenizer (default RAGTruth train under the data dir).
    device : {"cpu", "cuda"}
    batch_size : int
        Examples per forward pass (1 allowed), length-sorted.
    max_length : int
        Longest input in tokens; the evidence is cut to fit, never the answer.
    dtype : {"float32", "bfloat16", "float16"}
        bfloat16 / float16: autocast (float16 on cuda only).
    quantize : {None, "int8_dynamic", "int8_mixed"}
        int8 dynamic quantisation of the encoder's ``nn.Linear`` layers, the head kept in
        float32; ``int8_mixed`` runs the feed-forward down-projections in bfloat16
        (`runner.verifiers.quantization`; CPU).
    threads : int or None
        torch intra-op threads while scoring (None: torch's default).
    evidence : {"top_k_sentences", "full_context"}
        Evidence policy (`runner.verifiers.evidence`).
    top_k : int
        Sentences kept by ``top_k_sentences`` (unused with ``full_context``).
    sort_by_length : bool
        Sort by length before batching (False: input order, the naive loop).
    seed : int
        Seed of random weights (the configs follow the master ``seed``).
    """

    needs_fit: ClassVar[bool] = False
    kind: ClassVar[str] = "verifier"
    head: ClassVar[str] = "sequence"  # "sequence" | "first_token" | "tokens"

    # model source: changing one of these reloads the weights (or moves them)
    model: str
    revision: str | None = None
    weights: str = "pretrained"
    architecture: Any = None
    tokenizer: str | None = None
    tokenizer_corpus: str | None = None
    device: str = "cpu"
    seed: int = SEED
    # inference: `with_settings` may change these on loaded weights
    batch_size: int = inference(1)
    max_length: int = inference(512)
    dtype: str = inference("float32")
    quantize: str | None = inference(None)
    threads: int | None = inference(None)
    evidence: str = inference("top_k_sentences")
    top_k: int = inference(3)
    sort_by_length: bool = inference(True)

    def __post_init__(self) -> None:
        self._validate()

    @property
    def inference_settings(self) -> frozenset[str]:
        """Settings `with_settings` may change without reloading the weights (fields so marked)."""
        return frozenset(f.name for f in fields(self) if f.metadata.get(INFERENCE))

    # --- configuration -------------------------------------------------------------------

    def _validate(self) -> None:
        """Cheap checks of the settings, no disk: run once per change of settings (at
        construction, which `clone` is too, and in `set_params`). Whether the model files
        exist is `check_sources`, asked once before loading (the pipeline's pre-flight)."""
        if self.weights not in WEIGHTS:
            raise ConfigError(f"{self.kind}: weights {self.weights!r} not in {WEIGHTS}")
        check_precision(self.device, self.dtype, self.quantize)
        check_policy(self.evidence, self.top_k)
        for name in ("batch_size", "max_length"):
            value = getattr(self, name)
            if not isinstance(value, int) or isinstance(value, bool) or value < 1:
                raise ConfigError(f"{self.kind}: {name} must be a positive int, got {value!r}")
        if self.threads is not None and (not isinstance(self.threads, int) or self.threads < 1):
            raise ConfigError(f"{self.kind}: threads must be a positive int or null")
        if self.weights == "random" and self.architecture is None:
            raise ConfigError(f"{self.kind}: weights=random needs an architecture")

    def check_sources(self) -> None:
        """Find the model files pretrained weights need (a missing one fails here, saying how
        to bring it; a local folder without weights or without this verifier's trained head
        is refused: `runner.verifiers.checkpoint_check`); random weights need none. Touches
        the disk: ask it once, before work."""
        if self.weights != "pretrained":
            return
        source = resolve_source(self.model, self.revision)
        check_verifier_folder(self._model_class(), source, f"{self.kind}: model")
        if self.tokenizer:
            resolve_source(self.tokenizer)

    @property
    def precision_name(self) -> str:
        """Short name of the numeric path: fp32, bf16-autocast, int8-dynamic, int8-mixed."""
        return PRECISION_NAMES[(self.dtype, self.quantize)]

    # --- scikit-learn protocol -----------------------------------------------------------

    def set_params(self, **params: Any) -> Verifier:
        """Set parameters (scikit-learn); the next use re-prepares (and, for model
        settings, reloads) the model, so no stale precision or weights are ever used."""
        super().set_params(**params)
        self._prepared = None
        if set(params) - self.inference_settings:
            self._base = None
        self._validate()
        if getattr(self, "_base", None) is not None:
            self._after_load(self._base)
        return self

    def fit(self, frame: pd.DataFrame | None = None, y: Any = None) -> Verifier:
        """Nothing to fit (``needs_fit = False``); returns self."""
        return self

    # --- loading -------------------------------------------------------------------------

    def _model_class(self) -> type:
        raise NotImplementedError

    def _random_model_class(self) -> type:
        return self._model_class()

    def _load_base(self) -> LoadedModel:
        if self.weights == "random":
            return load_random(
                self._random_model_class(),
                self.architecture,
                self.seed,
                self.tokenizer,
                self.tokenizer_corpus,
            )
        return load_pretrained(self._model_class(), self.model, self.revision, self.tokenizer)

    def load(self) -> Verifier:
        """Load (once) the model and tokenizer, and prepare the configured precision."""
        if getattr(self, "_prepared", None) is not None:
            return self
        if getattr(self, "_base", None) is None:
            self._base = self._load_base()
            self._after_load(self._base)
        self._int8_range = None
        if self.quantize is not None:
            from runner.verifiers.quantization import int8_range

            self._int8_range = int8_range()
        self._prepared = prepare(
            self._base.model,
            self.device,
            self.quantize,
            self._fused_attention(),
            full_range=None if self._int8_range is None else self._int8_range.full_range,
        )
        return self

    def _fused_attention(self) -> bool:
        """Hook: whether `prepare` fuses the attention modules (DeBERTa)."""
        return False

    def _after_load(self, loaded: LoadedModel) -> None:
        """Hook: check the loaded model (labels, head size)."""

    def __getstate__(self) -> dict[str, Any]:
        """Pickled with its loaded weights, not with their preparation for this machine.

        Why: int8 layers are chosen by the CPU they run on (`runner.verifiers.quantization.
        int8_range`; the full-range layer is not even picklable), so a verifier registered
        inside a gate, or sent to a worker, is prepared again by `load` where it scores.
        """
        state = dict(self.__dict__)
        state["_prepared"] = None
        state["_int8_range"] = None
        return state

    def release(self) -> Verifier:
        """Drop the loaded model (the next use reloads it), so its memory can be freed."""
        import gc

        self._base = None
        self._prepared = None
        gc.collect()
        return self

    def with_settings(self, **params: Any) -> Verifier:
        """A copy with other inference settings that shares this one's loaded weights.

        Parameters
        ----------
        **params
            Inference settings only (`inference_settings`: batch_size, dtype, quantize,
            threads, sort_by_length, max_length, evidence, top_k and each verifier's own,
            e.g. LettuceDetect's risk); the weights, and their device, stay the same.

        Returns
        -------
        Verifier
            Quantisation makes its own quantised copy; the float32 weights are shared.
        """
        bad = set(params) - self.inference_settings
        if bad:
            raise ConfigError(
                f"with_settings: {sorted(bad)} change the model; build a new verifier"
            )
        self.load()
        other = clone(self).set_params(**params)  # settings checked once, by set_params
        other._base = self._base
        other._after_load(self._base)
        other._prepared = None
        return other.load()

    @property
    def loaded(self) -> LoadedModel:
        """The loaded model record (loads on first access)."""
        self.load()
        return self._base

    # --- inference -----------------------------------------------------------------------

    def select_evidence(self, contexts: Sequence[str], answers: Sequence[str]) -> list[str]:
        """Evidence text per example under this verifier's policy."""
        return select_evidence(contexts, answers, self.evidence, self.top_k)

    def encode(self, frame: pd.DataFrame) -> Encoded:
        """Tokenise a frame into model inputs (evidence selected, evidence-only truncation)."""
        raise NotImplementedError

    def forward(self, encoded: Encoded) -> list[np.ndarray]:
        """Run the model over length-sorted padded batches.

        Parameters
        ----------
        encoded : Encoded

        Returns
        -------
        list of ndarray
            Per example in input order, float32 logits: ``(n_labels,)`` for the sequence
            head and the first-token head, ``(length, n_labels)`` for the token head.
        """
        import torch

        self.load()
        model = self._prepared
        pad_id = self._base.tokenizer.pad_token_id
        if pad_id is None:
            raise ConfigError(f"{self.kind}: tokenizer has no pad token")
        use_types = (
            encoded.token_type_ids is not None
            and int(getattr(model.config, "type_vocab_size", 0) or 0) > 0
        )
        out: list[np.ndarray | None] = [None] * len(encoded.input_ids)
        batches = length_sorted_batches(encoded.lengths(), self.batch_size, self.sort_by_length)
        with precision(self.device, self.dtype):
            for rows in batches:
                ids, mask = pad([encoded.input_ids[i] for i in rows], pad_id)
                inputs = {
                    "input_ids": torch.from_numpy(ids).to(self.device),
                    "attention_mask": torch.from_numpy(mask).to(self.device),
                }
                if use_types:
                    types, _ = pad([encoded.token_type_ids[i] for i in rows], 0)
                    inputs["token_type_ids"] = torch.from_numpy(types).to(self.device)
                logits = model(**inputs).logits.float().cpu().numpy()
                for b, i in enumerate(rows):
                    if self.head == "sequence":
                        out[i] = logits[b]
                    elif self.head == "first_token":
                        out[i] = logits[b, 0]
                    else:
                        out[i] = logits[b, : int(mask[b].sum())]
        return out  # type: ignore[return-value]

    def _risk(self, logits: list[np.ndarray], encoded: Encoded) -> np.ndarray:
        raise NotImplementedError

    def _risk_logit(self, logits: list[np.ndarray], encoded: Encoded) -> np.ndarray:
        raise NotImplementedError

    def _outputs(self, frame: pd.DataFrame) -> tuple[list[np.ndarray], Encoded]:
        check_frame(frame)
        if len(frame) == 0:
            raise DataError("verifier input frame has no rows")
        self.load()
        with torch_threads(self.threads):
            encoded = self.encode(frame)
            logits = self.forward(encoded)
        self.last_truncation_ = encoded.stats
        return logits, encoded

    def _finite(self, values: np.ndarray, frame: pd.DataFrame) -> np.ndarray:
        values = np.asarray(values, dtype=np.float64)
        if not np.all(np.isfinite(values)):
            bad = int(np.flatnonzero(~np.isfinite(values))[0])
            raise DataError(
                f"{self.kind} produced a non-finite risk",
                row=frame["example_id"].iloc[bad],
                field="answer",
            )
        return values

    def score(self, frame: pd.DataFrame) -> np.ndarray:
        """Risk per row (larger = more likely unfaithful), in the frame's row order.

        Parameters
        ----------
        frame : DataFrame
            Canonical response frame (``example_id``, ``question``, ``context``,
            ``answer`` are read).

        Returns
        -------
        ndarray of float64, shape (n,)
            Truncation of this call is in ``last_truncation_``.
        """
        logits, encoded = self._outputs(frame)
        return self._finite(self._risk(logits, encoded), frame)

    def risk_logit(self, frame: pd.DataFrame) -> np.ndarray:
        """The risk on the log-odds scale, computed from the logits without saturating.

        A strictly increasing function of `score` in exact arithmetic, so it ranks rows the
        same way; useful to compare numeric paths where probabilities round to 0 or 1 (as
        random weights often do).
        """
        logits, encoded = self._outputs(frame)
        return self._finite(self._risk_logit(logits, encoded), frame)

    def score_and_logit(self, frame: pd.DataFrame) -> tuple[np.ndarray, np.ndarray | None]:
        """`score` and `risk_logit` from one forward pass (logit None where undefined)."""
        logits, encoded = self._outputs(frame)
        risk = self._finite(self._risk(logits, encoded), frame)
        try:
            logit = self._finite(self._risk_logit(logits, encoded), frame)
        except ConfigError:  # e.g. LettuceDetect's flagged share has no log-odds form
            logit = None
        return risk, logit

    # --- reporting -----------------------------------------------------------------------

    def model_files(self) -> list[Path]:
        """Files the scores depend on, for the manifest (none with random weights)."""
        from runner.model_files import files_under

        if self.weights == "random":
            return []
        files = files_under(resolve_source(self.model, self.revision), self.revision)
        if self.tokenizer:
            files += files_under(resolve_source(self.tokenizer))
        return files

    def runtime_info(self) -> dict[str, Any]:
        """What identifies this verifier's cost: model, size, device, precision, input sizes.

        Returns
        -------
        dict
            ``model`` (path / Hub id, or ``random:<arch>``), ``revision``, ``weights``,
            ``n_parameters``, ``device``, ``threads``, ``batch_size``, ``dtype``,
            ``quantize``, ``precision``, ``int8_range`` (int8 only: the activation range
            and why, `runner.verifiers.quantization.int8_range`), ``attention`` (DeBERTa's
            ``fused`` / ``stock``, else ``stock``), ``evidence``, ``top_k``, ``max_length``,
            ``tokenizer``;
            after a `score` call also ``mean_tokens_per_example`` and ``truncation``.
        """
        import torch

        loaded = self.loaded
        rng = getattr(self, "_int8_range", None)
        info: dict[str, Any] = {
            "verifier": self.kind,
            "model": loaded.name,
            "model_label": self.model,
            "revision": loaded.revision,
            "weights": self.weights,
            "n_parameters": loaded.n_parameters,
            "device": self.device,
            "threads": self.threads if self.threads is not None else torch.get_num_threads(),
            "batch_size": self.batch_size,
            "sort_by_length": self.sort_by_length,
            "dtype": self.dtype,
            "quantize": self.quantize,
            "precision": self.precision_name,
            "int8_range": None if rng is None else rng.to_dict(),
            "attention": getattr(self, "attention", "stock"),
            "evidence": self.evidence,
            "top_k": self.top_k if self.evidence == "top_k_sentences" else None,
            "max_length": self.max_length,
            "tokenizer": loaded.tokenizer_info,
        }
        stats: TruncationStats | None = getattr(self, "last_truncation_", None)
        if stats is not None:
            info["mean_tokens_per_example"] = stats.mean_tokens
            info["truncation"] = stats.to_dict()
        return info

    def score_fingerprint(self) -> dict[str, Any]:
        """What this verifier's scores depend on: weights and tokenizer hashes, every
        setting, library versions (`runner.verifiers.fingerprint`); for score caches."""
        from runner.verifiers.fingerprint import score_fingerprint

        return score_fingerprint(self)
