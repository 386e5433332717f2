"""Reading a judge's verdict out of free text, failing closed.

Why strict: a judge that rambles, stops mid-JSON or invents a label has not said the claim
is supported, so nothing here guesses. A verdict is a JSON object with a ``"verdict"`` key
whose value is ``green``, ``yellow`` or ``red`` (case and surrounding spaces ignored).
Everything else is a parse failure with a reason; after the one repair attempt the judge
base class turns a failure into an abstention, routed to review (yellow), never green.

Rules, in order:

1. Every top-level JSON object in the text is decoded (``json.JSONDecoder.raw_decode`` at
   each ``{`` not inside an object already decoded); Markdown fences around it are fine.
2. Objects without a ``"verdict"`` key are ignored. None left: failure ("no JSON verdict":
   prose only, or JSON cut off by the token limit).
3. The *last* verdict object decides (a reasoning-first answer ends with its verdict). Its
   value must be one of the three labels, else failure ("unknown label").
4. If two verdict objects carry different valid labels, the answer is ambiguous: failure.
"""

from __future__ import annotations

import json
from dataclasses import dataclass

from runner.data import LABELS

REPAIR_MESSAGE = (
    'Answer only with JSON: {"verdict": "green"}, {"verdict": "yellow"} or {"verdict": "red"}.'
)
"""The one follow-up sent when the first answer holds no valid verdict."""


@dataclass(frozen=True)
class ParsedVerdict:
    """Outcome of reading one model answer.

    Attributes
    ----------
    label : str or None
        ``green`` / ``yellow`` / ``red``, or None when the answer holds no valid verdict.
    reasoning : str
        The ``"reasoning"`` field when the verdict object has one, else the text before the
        verdict object (stripped).
    error : str or None
        Why no label could be read (None on success).
    """

    label: str | None
    reasoning: str
    error: str | None

    @property
    def ok(self) -> bool:
        """True when a valid label was read."""
        return self.label is not None


def json_objects(text: str) -> list[tuple[int, int, dict]]:
    """Top-level JSON objects in ``text`` as ``(start, end, object)``, in order."""
    decoder = json.JSONDecoder()
    found: list[tuple[int, int, dict]] = []
    pos = text.find("{")
    while pos != -1:
        try:
            obj, end = decoder.raw_decode(text, pos)
        except json.JSONDecodeError:
            pos = text.find("{", pos + 1)
            continue
        if isinstance(obj, dict):
            found.append((pos, end, obj))
        pos = text.find("{", end)
    return found


def parse_verdict(text: str) -> ParsedVerdict:
    """Read the verdict from one model answer (see the module docstring for the rules).

    Parameters
    ----------
    text : str
        The model's answer, as decoded.

    Returns
    -------
    ParsedVerdict
    """
    if not isinstance(text, str):
        return ParsedVerdict(None, "", f"answer is not text: {type(text).__name__}")
    objects = [(s, e, o) for s, e, o in json_objects(text) if "verdict" in o]
    if not objects:
        return ParsedVerdict(None, text.strip(), "no JSON verdict object in the answer")
    start, _, last = objects[-1]
    value = last["verdict"]
    reasoning = last.get("reasoning")
    reasoning = reasoning.strip() if isinstance(reasoning, str) else text[:start].strip()
    label = _label(value)
    if label is None:
        return ParsedVerdict(None, reasoning, f"unknown label {value!r} (expected {LABELS})")
    others = {_label(o["verdict"]) for _, _, o in objects[:-1]} - {None, label}
    if others:
        return ParsedVerdict(
            None, reasoning, f"conflicting verdicts {sorted(others | {label})} in one answer"
        )
    return ParsedVerdict(label, reasoning, None)


def _label(value: object) -> str | None:
    if not isinstance(value, str):
        return None
    key = value.strip().lower()
    return key if key in LABELS else None
