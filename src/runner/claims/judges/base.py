"""What every LLM judge does, whatever serves the model: prompt, parse, repair once, abstain.

Why a base class: the fail-closed contract must be identical for a local transformers
model and an HTTP endpoint. A backend only turns chat messages into text
(`LLMJudge.generate`); this class owns the rest:

1. Build the reasoning-first prompt (`runner.claims.judges.prompts`).
2. Generate greedily with a bounded ``max_new_tokens``; parse the verdict
   (`runner.claims.judges.parsing`).
3. If no valid verdict: one bounded repair attempt, answered within
   ``repair_max_new_tokens``:

   - ``repair="reask"`` (default, every backend): the conversation so far plus the short
     follow-up `REPAIR_MESSAGE` ("Answer only with JSON: ...").
   - ``repair="prefill"`` (backends that can continue an answer: transformers): the
     judge's own answer is continued after a forced ``{"verdict": "`` (`PREFILL`), so the
     model must put a label there; ``PREFILL`` + continuation is parsed by the same strict
     rules (a continuation such as ``True"}`` is still a failure).
   - ``repair="none"``: no repair.
4. Still no valid verdict: an *abstention*. Its label is yellow (routed to human review),
   ``abstained`` is True and the study counts it per judge in every table. Nothing
   unparsed is ever green.

A backend error (server down, HTTP 500) is not a verdict and is raised, never abstained.
"""

from __future__ import annotations

import time
from abc import ABC, abstractmethod
from collections.abc import Callable, Iterable, Sequence
from dataclasses import asdict, dataclass, field
from typing import Any, ClassVar, NamedTuple

from runner.claims.judges.cache import AnswerCache, CacheStats, answer_fields, answer_key
from runner.claims.judges.parsing import REPAIR_MESSAGE, parse_verdict
from runner.claims.judges.prompts import PROMPT_VERSION, PROMPTS, build_messages
from runner.data import YELLOW
from runner.errors import ConfigError, RunnerError
from runner.settings import SEED, settings_class

REPAIR_MODES = ("reask", "prefill", "none")
PREFILL = '{"verdict": "'
"""Forced start of the answer's continuation under ``repair="prefill"``."""


class Generated(NamedTuple):
    """One model answer and what it cost (zeros when it came from the cache)."""

    text: str
    prompt_tokens: int
    generated_tokens: int
    seconds: float
    cached: bool = False


@dataclass
class JudgeStats:
    """Work one judge did in a run (``runtime.json``): calls actually made, tokens, hits."""

    model_calls: int = 0
    prompt_tokens: int = 0
    generated_tokens: int = 0
    generation_seconds: float = 0.0
    cache: CacheStats = field(default_factory=CacheStats)

    def to_dict(self) -> dict[str, Any]:
        """Plain dict for ``runtime.json``."""
        return {
            "model_calls": self.model_calls,
            "prompt_tokens": self.prompt_tokens,
            "generated_tokens": self.generated_tokens,
            "generation_seconds": round(self.generation_seconds, 3),
            "cache": self.cache.to_dict(),
        }


def check_positive_int(judge: str, key: str, value: Any) -> None:
    """Raise `ConfigError` naming `key` unless `value` is an int >= 1."""
    if isinstance(value, bool) or not isinstance(value, int) or value < 1:
        raise ConfigError(f"judge {judge!r}: {key} must be a positive int, got {value!r}")


class JudgeBackendError(RunnerError):
    """The model could not be asked (server unreachable, bad response): not a verdict."""


@dataclass
class Verdict:
    """One judge's decision on one claim, with everything needed to audit it.

    Attributes
    ----------
    label : str
        Final label: the parsed one, or yellow when the judge abstained.
    abstained : bool
        True when no valid verdict could be read, even after the repair attempt.
    parsed_label : str or None
        What the judge actually said (None when it abstained).
    repaired : bool
        True when the verdict was read only from the repair answer.
    reasoning : str
        The judge's reasoning as parsed (empty when none).
    outputs : list of str
        Raw answers: the first, then the repair answer when one was asked for (under
        ``repair="prefill"`` it starts with the forced `PREFILL`).
    errors : list of str
        Parse error of each failed attempt, in order.
    calls : int
        Model calls made (1, or 2 with a repair).
    seconds : float
        Wall time of those calls.
    truncated : bool
        True when passage text was cut to fit the prompt budget.
    """

    label: str
    abstained: bool
    parsed_label: str | None
    repaired: bool
    reasoning: str
    outputs: list[str] = field(default_factory=list)
    errors: list[str] = field(default_factory=list)
    calls: int = 0
    seconds: float = 0.0
    truncated: bool = False

    def to_dict(self) -> dict[str, Any]:
        """JSON-serialisable form (for the study's audit file)."""
        return asdict(self)


@settings_class()
class LLMJudge(ABC):
    """A claim judge backed by a chat model; subclasses implement `generate`.

    Every parameter is a dataclass field (the shared ones here, each backend's own in its
    class, `runner.settings.settings_class`); the config schemas are derived from them
    (`runner.settings.derive`), so YAML keys and CLI overrides
    (``judges.<name>.max_passage_chars=1500``) are these names.

    Parameters
    ----------
    name : str
        Row label of this judge in every table (one run per configured judge).
    family : str
        Model family it belongs to (for the cross-family analysis and honest labelling;
        two judges may share a family when they differ in prompt or decoding).
    prompt : str
        One of `runner.claims.judges.prompts.PROMPTS`.
    max_new_tokens : int
        Bound on the first answer's length.
    repair : str
        ``"reask"`` (one re-ask with `REPAIR_MESSAGE`), ``"prefill"`` (continue the
        answer after a forced `PREFILL`; transformers only) or ``"none"``.
    repair_max_new_tokens : int
        Bound on the repair answer's length.
    max_passage_chars : int or None
        Character budget for all passages of one prompt; None = no limit.
    seed : int
        Seed passed to the backend (decoding is greedy, so it only matters where a backend
        has randomness of its own; the configs follow the master ``seed``).
    """

    backend: ClassVar[str] = "abstract"
    supports_prefill: ClassVar[bool] = False  # can `continue_answer` (repair="prefill")

    name: str
    family: str
    prompt: str = "reason_then_json"
    max_new_tokens: int = 192
    repair: str = "reask"
    repair_max_new_tokens: int = 24
    max_passage_chars: int | None = 16000
    seed: int = SEED

    def __post_init__(self) -> None:
        """Check the settings (fail before any model call) and start the work counters."""
        name = self.name
        if self.prompt not in PROMPTS:
            raise ConfigError(f"judge {name!r}: unknown prompt {self.prompt!r} (known: {PROMPTS})")
        if self.repair not in REPAIR_MODES:
            raise ConfigError(
                f"judge {name!r}: repair must be one of {REPAIR_MODES}, got {self.repair!r}"
            )
        for key in ("max_new_tokens", "repair_max_new_tokens"):
            check_positive_int(name, key, getattr(self, key))
        if self.max_passage_chars is not None and self.max_passage_chars < 100:
            raise ConfigError(f"judge {name!r}: max_passage_chars must be >= 100 or null")
        if self.repair == "prefill" and not self.supports_prefill:
            raise ConfigError(
                f"judge {name!r}: repair='prefill' needs a backend that continues an answer "
                f"(transformers); {self.backend} supports 'reask' or 'none'"
            )
        self.stats = JudgeStats()

    @abstractmethod
    def generate(self, messages: list[dict[str, str]], max_new_tokens: int) -> str:
        """The model's answer to a chat, decoded greedily within ``max_new_tokens``."""

    def continue_answer(self, messages: list[dict[str, str]], max_new_tokens: int) -> str:
        """Greedy continuation of the last (assistant) message; only where supported."""
        raise ConfigError(f"judge {self.name!r}: backend {self.backend} cannot continue an answer")

    def model_id(self) -> str:
        """What model answers (path, file or endpoint model name), for tags and tables."""
        return "unknown"

    def fit_messages(
        self, question: str, claim: str, passages: Sequence[str]
    ) -> tuple[list[dict[str, str]], bool]:
        """The prompt for one claim; backends may override to enforce a token budget."""
        return build_messages(question, claim, passages, self.prompt, self.max_passage_chars)

    def judge(self, question: str, claim: str, passages: Sequence[str]) -> Verdict:
        """Judge one claim against its passages.

        Parameters
        ----------
        question : str
            The question the claim answers ("" when none).
        claim : str
            The claim.
        passages : sequence of str
            The passages, the only evidence the judge may use.

        Returns
        -------
        Verdict
            Never green unless a valid green verdict was read.
        """
        messages, truncated = self.fit_messages(question, claim, passages)
        started = time.perf_counter()
        outputs = [self.generate(messages, self.max_new_tokens)]
        if not parse_verdict(outputs[0]).ok and self.repair != "none":
            outputs.append(self._repair(messages, outputs[0]))
        return self._verdict(outputs, time.perf_counter() - started, truncated)

    def _repair(self, messages: list[dict[str, str]], first: str) -> str:
        if self.repair == "reask":
            follow_up = [
                *messages,
                {"role": "assistant", "content": first},
                {"role": "user", "content": REPAIR_MESSAGE},
            ]
            return self.generate(follow_up, self.repair_max_new_tokens)
        started = [*messages, {"role": "assistant", "content": f"{first.rstrip()}\n{PREFILL}"}]
        return PREFILL + self.continue_answer(started, self.repair_max_new_tokens)

    # ------------------------------------------------------------------ batched path

    def model_fingerprint(self) -> str | None:
        """Hash of the model's weights, or None when it cannot be known (no answer caching).

        Answers are cached and shared only under a fingerprint, so a backend whose model may
        change behind the same name (an HTTP endpoint) never shares answers.
        """
        return None

    def prompt_text(self, messages: list[dict[str, str]], continue_final: bool) -> str:
        """The exact input the model reads for ``messages`` (part of the cache key)."""
        import json

        return json.dumps({"messages": messages, "continue_final": continue_final})

    def decoding_settings(self, max_new_tokens: int, continue_final: bool) -> dict[str, Any]:
        """Everything besides model and prompt that changes an answer (part of the key)."""
        return {
            "backend": self.backend,
            "greedy": True,
            "max_new_tokens": max_new_tokens,
            "continue_final": continue_final,
            "seed": self.seed,
        }

    def generate_batch(
        self,
        chats: list[list[dict[str, str]]],
        max_new_tokens: int,
        continue_final: bool,
        on_done: Callable[[int], None] | None = None,
    ) -> list[Generated]:
        """Answers to several chats; backends that batch override this (default: in turn)."""
        out = []
        for chat in chats:
            started = time.perf_counter()
            if continue_final:
                text = self.continue_answer(chat, max_new_tokens)
            else:
                text = self.generate(chat, max_new_tokens)
            out.append(Generated(text, 0, 0, time.perf_counter() - started))
            if on_done is not None:
                on_done(1)
        return out

    def _answers(
        self,
        chats: list[list[dict[str, str]]],
        max_new_tokens: int,
        continue_final: bool,
        cache: AnswerCache | None,
        stage: str,
        progress: bool,
    ) -> list[Generated]:
        """Answers to ``chats``: from the cache where the same request was answered, the
        rest generated (each distinct request once) and stored."""
        fingerprint = self.model_fingerprint() if cache is not None else None
        out: list[Generated | None] = [None] * len(chats)
        todo: dict[str, list[int]] = {}  # key -> positions asking exactly this
        todo_fields: dict[str, dict[str, Any]] = {}
        for i, chat in enumerate(chats):
            if fingerprint is None:
                todo[f"#{i}"] = [i]
                continue
            text = self.prompt_text(chat, continue_final)
            decoding = self.decoding_settings(max_new_tokens, continue_final)
            fields = answer_fields(fingerprint, text, decoding)
            key = answer_key(fingerprint, text, decoding)
            if key in todo:
                todo[key].append(i)
                self.stats.cache.memory_hits += 1
                continue
            record = cache.get(key, fields, self.stats.cache)
            if record is not None:
                out[i] = Generated(record["text"], 0, 0, 0.0, cached=True)
            else:
                todo[key] = [i]
                todo_fields[key] = fields
        # Shortest prompts first (a batch pads little), and stored batch by batch, so a run
        # stopped part way keeps every answer it finished.
        keys = sorted(
            todo,
            key=lambda k: (len(self.prompt_text(chats[todo[k][0]], continue_final)), todo[k][0]),
        )
        if keys:
            bar = None
            if progress:
                from tqdm.auto import tqdm

                bar = tqdm(total=len(keys), desc=f"judge {self.name}: {stage}", unit="claim")
            step = max(1, int(getattr(self, "batch_size", 1)))
            try:
                for start in range(0, len(keys), step):
                    part = keys[start : start + step]
                    made = self.generate_batch(
                        [chats[todo[k][0]] for k in part], max_new_tokens, continue_final
                    )
                    for key, gen in zip(part, made, strict=True):
                        self._keep(key, gen, todo[key], todo_fields.get(key), cache, out)
                    if bar is not None:
                        bar.update(len(part))
            finally:
                if bar is not None:
                    bar.close()
        return [g for g in out if g is not None]

    def _keep(
        self,
        key: str,
        gen: Generated,
        positions: list[int],
        fields: dict[str, Any] | None,
        cache: AnswerCache | None,
        out: list[Generated | None],
    ) -> None:
        """Count one generated answer, store it, and hand it to every position asking it."""
        self.stats.model_calls += 1
        self.stats.prompt_tokens += gen.prompt_tokens
        self.stats.generated_tokens += gen.generated_tokens
        self.stats.generation_seconds += gen.seconds
        if fields is not None and cache is not None:
            cache.put(key, fields, gen.text, gen.generated_tokens)
        first, *same = positions
        out[first] = gen
        for i in same:
            out[i] = Generated(gen.text, 0, 0, 0.0, cached=True)

    def judge_many(
        self,
        items: Iterable[tuple[str, str, Sequence[str]]],
        progress: bool = False,
        total: int | None = None,
        cache: AnswerCache | None = None,
    ) -> list[Verdict]:
        """Judge ``(question, claim, passages)`` items; verdicts in input order.

        The same contract as `judge`, done in stages so the work can be shared: every first
        answer (batched by backends that batch), then every repair. With a ``cache``
        (`runner.claims.judges.cache.AnswerCache`), an answer asked before under the same
        model hash, prompt text and decoding settings (by this judge or another) is reused,
        not recomputed; ``stats`` counts the hits. ``total`` is accepted for callers that
        pass a generator's length (progress bars count the distinct requests).
        """
        items = list(items)
        fitted = [self.fit_messages(q, c, p) for q, c, p in items]
        chats = [m for m, _ in fitted]
        firsts = self._answers(chats, self.max_new_tokens, False, cache, "first answers", progress)
        parsed = [parse_verdict(g.text) for g in firsts]
        need = [i for i, p in enumerate(parsed) if not p.ok and self.repair != "none"]
        repairs: dict[int, Generated] = {}
        if need:
            if self.repair == "reask":
                follow = [
                    [
                        *chats[i],
                        {"role": "assistant", "content": firsts[i].text},
                        {"role": "user", "content": REPAIR_MESSAGE},
                    ]
                    for i in need
                ]
                made = self._answers(
                    follow, self.repair_max_new_tokens, False, cache, "re-asks", progress
                )
            else:
                started = [
                    [
                        *chats[i],
                        {"role": "assistant", "content": f"{firsts[i].text.rstrip()}\n{PREFILL}"},
                    ]
                    for i in need
                ]
                made = self._answers(
                    started, self.repair_max_new_tokens, True, cache, "prefill repairs", progress
                )
                made = [Generated(PREFILL + g.text, *g[1:]) for g in made]
            repairs = dict(zip(need, made, strict=True))
        verdicts = []
        for i, first in enumerate(firsts):
            outputs = [first.text]
            seconds = first.seconds
            if i in repairs:
                outputs.append(repairs[i].text)
                seconds += repairs[i].seconds
            verdicts.append(self._verdict(outputs, seconds, fitted[i][1]))
        return verdicts

    def _verdict(self, outputs: list[str], seconds: float, truncated: bool) -> Verdict:
        """The verdict from the first answer and, when one was asked, the repair answer."""
        parsed = parse_verdict(outputs[0])
        errors: list[str] = []
        repaired = False
        if not parsed.ok:
            errors.append(parsed.error or "no verdict")
            if len(outputs) > 1:
                retry = parse_verdict(outputs[1])
                if retry.ok:
                    parsed = type(retry)(retry.label, parsed.reasoning or retry.reasoning, None)
                    repaired = True
                else:
                    errors.append(retry.error or "no verdict")
        label = parsed.label if parsed.ok else YELLOW
        return Verdict(
            label,
            not parsed.ok,
            parsed.label if parsed.ok else None,
            repaired,
            parsed.reasoning,
            outputs,
            errors,
            len(outputs),
            seconds,
            truncated,
        )

    def describe(self) -> dict[str, Any]:
        """Settings that define this judge's run (logged with the study)."""
        return {
            "name": self.name,
            "family": self.family,
            "backend": self.backend,
            "model": self.model_id(),
            "prompt": self.prompt,
            "prompt_version": PROMPT_VERSION,
            "decoding": "greedy",
            "max_new_tokens": self.max_new_tokens,
            "repair": self.repair,
            "repair_max_new_tokens": self.repair_max_new_tokens,
            "max_passage_chars": self.max_passage_chars,
            "seed": self.seed,
        }
