"""The judge prompts: reasoning first, then a JSON verdict, against the passages only.

Why fixed templates in code: a prompt is part of the method, so it is versioned with the
code and named in the config (``prompt: reason_then_json``), not typed into YAML where a
stray edit would silently change the study. Both templates ask the judge to reason before
it labels and to use nothing but the passages, with the seed's definitions of the three
labels. They differ only in the answer's shape:

- ``reason_then_json``: a few sentences of reasoning, then a last line holding only
  ``{"verdict": "..."}``.
- ``json_object``: one JSON object whose first field is ``"reasoning"`` and second
  ``"verdict"`` (reasoning still comes first, inside the object).
- ``verdict_then_reason``: a first line holding only the JSON verdict, then the reasoning.
  Not the seed's order: it exists for small models that never finish a reasoning-first
  answer (SmolLM2-135M loops on its reasoning until any token budget runs out, so its
  first answers never reach a verdict): a verdict line first fits a short budget, and
  whether a model follows that order is counted (answers without a valid verdict).

Passages are numbered ``[1]``, ``[2]``, ... and cut to a character budget shared by all of
them (`render_passages`); a cut is reported so the study can count truncated prompts.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

PROMPT_VERSION = 1
"""Bump when any template text changes, so results stay comparable across versions."""

SYSTEM = (
    "You check claims against source passages. Use only the passages you are given, never "
    "your own knowledge of the world."
)

LABEL_GUIDE = (
    "Labels:\n"
    "- green: the passages state the claim, or it follows directly from them.\n"
    "- yellow: the passages support only part of the claim: a true core with an addition "
    "they do not support, overstated certainty or scope, or words given to the wrong "
    "source.\n"
    "- red: the claim is absent from the passages, or the passages contradict it."
)

ANSWER_FORMATS: dict[str, str] = {
    "reason_then_json": (
        "First explain your reasoning in two to four sentences. Then write one last line "
        'holding only a JSON object: {"verdict": "green"}, {"verdict": "yellow"} or '
        '{"verdict": "red"}.'
    ),
    "json_object": (
        'Answer with one JSON object and nothing else. Its first field, "reasoning", '
        'explains your reasoning in two to four sentences; its second field, "verdict", '
        'is "green", "yellow" or "red". Shape: {"reasoning": "...", "verdict": "..."}'
    ),
    "verdict_then_reason": (
        'First write one line holding only a JSON object: {"verdict": "green"}, '
        '{"verdict": "yellow"} or {"verdict": "red"}. Then explain your reasoning in two to '
        "four sentences."
    ),
}
"""Prompt name -> the instruction that fixes the answer's shape."""

PROMPTS: tuple[str, ...] = tuple(ANSWER_FORMATS)


@dataclass(frozen=True)
class RenderedPassages:
    """Passages as they appear in the prompt, and whether any text was cut."""

    text: str
    truncated: bool


def render_passages(passages: Sequence[str], max_chars: int | None) -> RenderedPassages:
    """Number the passages and fit them into ``max_chars`` characters in total.

    Parameters
    ----------
    passages : sequence of str
        The claim's passages, in retrieval order.
    max_chars : int or None
        Budget for the passage text (numbering and cut markers excluded); None = no
        limit. When the
        passages are longer, each keeps an equal share of the budget (a short passage
        hands its unused share on to the later ones) and cut passages end in " [...]".

    Returns
    -------
    RenderedPassages
    """
    if len(passages) == 0:
        raise ValueError("a claim needs at least one passage to be judged against")
    if max_chars is not None and max_chars < len(passages):
        raise ValueError(f"max_chars={max_chars} leaves no room for {len(passages)} passages")
    kept: list[str] = []
    truncated = False
    remaining = max_chars
    for i, passage in enumerate(passages):
        text = passage.strip()
        if remaining is not None:
            share = remaining // (len(passages) - i)
            if len(text) > share:
                text = text[:share].rstrip() + " [...]"
                truncated = True
                remaining -= share
            else:
                remaining -= len(text)
        kept.append(f"[{i + 1}] {text}")
    return RenderedPassages("\n\n".join(kept), truncated)


def build_messages(
    question: str, claim: str, passages: Sequence[str], prompt: str, max_passage_chars: int | None
) -> tuple[list[dict[str, str]], bool]:
    """Chat messages asking for one claim's verdict.

    Parameters
    ----------
    question : str
        The user question the claim answers ("" when the data has none: then omitted).
    claim : str
        The claim to judge.
    passages : sequence of str
        The passages it is judged against.
    prompt : str
        One of `PROMPTS`.
    max_passage_chars : int or None
        Character budget for all passages together (see `render_passages`).

    Returns
    -------
    messages : list of dict
        ``[{"role": "system", ...}, {"role": "user", ...}]``.
    truncated : bool
        True when passage text was cut to fit the budget.
    """
    if prompt not in ANSWER_FORMATS:
        raise ValueError(f"unknown judge prompt {prompt!r} (known: {', '.join(PROMPTS)})")
    rendered = render_passages(passages, max_passage_chars)
    parts = []
    if question.strip():
        parts.append(f"Question: {question.strip()}")
    parts += [
        f"Passages:\n{rendered.text}",
        f"Claim: {claim.strip()}",
        "Does the passage text support the claim? Judge only against the passages.",
        LABEL_GUIDE,
        ANSWER_FORMATS[prompt],
    ]
    messages = [
        {"role": "system", "content": SYSTEM},
        {"role": "user", "content": "\n\n".join(parts)},
    ]
    return messages, rendered.truncated
