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
from collections.abc import Iterable, Sequence
from dataclasses import asdict, dataclass, field
from typing import Any

from runner.claims.judges.parsing import REPAIR_MESSAGE, parse_verdict
from runner.claims.judges.prompts import PROMPT_VERSION, PROMPTS, build_messages
from runner.claims.labels import YELLOW
from runner.errors import ConfigError, RunnerError

REPAIR_MODES = ("reask", "prefill", "none")
PREFILL = '{"verdict": "'
"""Forced start of the answer's continuation under ``repair="prefill"``."""


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


class LLMJudge(ABC):
    """A claim judge backed by a chat model; subclasses implement `generate`.

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
        has randomness of its own).
    """

    backend = "abstract"
    supports_prefill = False  # can `continue_answer` (needed by repair="prefill")

    def __init__(
        self,
        name: str,
        family: str,
        prompt: str = "reason_then_json",
        max_new_tokens: int = 192,
        repair: str = "reask",
        repair_max_new_tokens: int = 24,
        max_passage_chars: int | None = 16000,
        seed: int = 13,
    ) -> None:
        if prompt not in PROMPTS:
            raise ConfigError(f"judge {name!r}: unknown prompt {prompt!r} (known: {PROMPTS})")
        if repair not in REPAIR_MODES:
            raise ConfigError(
                f"judge {name!r}: repair must be one of {REPAIR_MODES}, got {repair!r}"
            )
        for key, value in (
            ("max_new_tokens", max_new_tokens),
            ("repair_max_new_tokens", repair_max_new_tokens),
        ):
            if not isinstance(value, int) or value < 1:
                raise ConfigError(f"judge {name!r}: {key} must be a positive int, got {value!r}")
        if max_passage_chars is not None and max_passage_chars < 100:
            raise ConfigError(f"judge {name!r}: max_passage_chars must be >= 100 or null")
        if repair == "prefill" and not self.supports_prefill:
            raise ConfigError(
                f"judge {name!r}: repair='prefill' needs a backend that continues an answer "
                f"(transformers); {self.backend} supports 'reask' or 'none'"
            )
        self.name = name
        self.family = family
        self.prompt = prompt
        self.max_new_tokens = max_new_tokens
        self.repair = repair
        self.repair_max_new_tokens = repair_max_new_tokens
        self.max_passage_chars = max_passage_chars
        self.seed = seed

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
        first = self.generate(messages, self.max_new_tokens)
        outputs, errors = [first], []
        parsed = parse_verdict(first)
        repaired = False
        if not parsed.ok:
            errors.append(parsed.error or "no verdict")
            if self.repair != "none":
                second = self._repair(messages, first)
                outputs.append(second)
                retry = parse_verdict(second)
                if retry.ok:
                    parsed = type(retry)(retry.label, parsed.reasoning or retry.reasoning, None)
                    repaired = True
                else:
                    errors.append(retry.error or "no verdict")
        seconds = time.perf_counter() - started
        if parsed.ok:
            return Verdict(
                parsed.label,
                False,
                parsed.label,
                repaired,
                parsed.reasoning,
                outputs,
                errors,
                len(outputs),
                seconds,
                truncated,
            )
        return Verdict(
            YELLOW,
            True,
            None,
            False,
            parsed.reasoning,
            outputs,
            errors,
            len(outputs),
            seconds,
            truncated,
        )

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

    def judge_many(
        self,
        items: Iterable[tuple[str, str, Sequence[str]]],
        progress: bool = False,
        total: int | None = None,
    ) -> list[Verdict]:
        """Judge ``(question, claim, passages)`` items in order (a progress bar if asked)."""
        if progress:
            from tqdm.auto import tqdm

            items = tqdm(items, total=total, desc=f"judge {self.name}", unit="claim")
        return [self.judge(q, c, p) for q, c, p in items]

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
