"""Evidence units that fit the context's form: field facts of a record, sentences of prose.

Why (issue 43, item 1): the sentence recipe picks, for each answer sentence, the context
units that share most content words with it. RAGTruth's Data2txt contexts are Python dict
literals of a business record (hours, attributes, reviews); cut by a sentence splitter they
become 48-word shards of braces and quotes that start and end mid-field, so the unit a
claim like "open from 16:30 on Tuesday" needs is split, and keys such as
``RestaurantsReservations`` share no word with "reservations". Flattened into one fact per
field ("hours Tuesday: 16:30-21:0", "attributes restaurants reservations: yes") each unit is
short, whole and worded like the answer.

Units (``InputRule.units``):

- ``sentences``: the context's sentences, a sentence longer than ``unit_words`` words cut
  into pieces of that many words (the rule every detector before issue 43 was trained with;
  `runner.verifiers.detector_inputs`);
- ``by_form``: a context whose text from its first ``{`` to its last ``}`` parses as a
  Python or JSON literal of a dict becomes its field facts (`record_facts`), the text
  around the record (RAGTruth's trailing "Overview:") its sentences; any other context is
  split as ``sentences``. The form is read from the context alone, never from
  a task label, so a user's own records get facts too.

A fact is ``<key path>: <value>``: keys joined by spaces, camelCase and snake_case split
into words; ``True`` / ``False`` / ``None`` written ``yes`` / ``no`` / ``not given``; a
string value that is itself a dict literal (Yelp writes ``"{'garage': False}"``) is
expanded; a list item is numbered from 1 (``review_info 1 review_stars: 5.0``). A long
string value (a review text) is split into sentences, each a fact with the same key path,
so no unit outgrows the window.
"""

from __future__ import annotations

import ast
import json
import re
from typing import Any

from runner.errors import ConfigError
from runner.verifiers.detector_inputs import _units

UNITS = ("sentences", "by_form")

_CAMEL = re.compile(r"(?<=[a-z0-9])(?=[A-Z])")


def parse_record(text: str) -> dict | None:
    """The dict `text` spells (stripped) as a Python or JSON literal, else None."""
    text = text.strip()
    if not (text.startswith("{") and text.endswith("}")):
        return None
    for parse in (ast.literal_eval, json.loads):
        try:
            value = parse(text)
        except (ValueError, SyntaxError, TypeError, MemoryError, RecursionError):
            continue
        if isinstance(value, dict):
            return value
    return None


def find_record(context: str) -> tuple[dict, str, str] | None:
    """The record a context holds from its first ``{`` to its last ``}``, with the text
    before and after it (RAGTruth's Data2txt contexts end in "Overview:"), else None."""
    start, end = context.find("{"), context.rfind("}")
    if start < 0 or end < start:
        return None
    record = parse_record(context[start : end + 1])
    if record is None:
        return None
    return record, context[:start], context[end + 1 :]


def _key_words(key: Any) -> str:
    return _CAMEL.sub(" ", str(key)).replace("_", " ").strip()


def _scalar(value: Any) -> str:
    if value is None:
        return "not given"
    if value is True:
        return "yes"
    if value is False:
        return "no"
    text = str(value).strip()
    if text in ("None", "none", "u'none'", "'none'"):
        return "not given"
    if len(text) >= 3 and text[0] == "u" and text[1] in "'\"" and text[-1] == text[1]:
        text = text[2:-1]  # Yelp's u'free'
    return text


def record_facts(record: Any, unit_words: int, path: tuple[str, ...] = ()) -> list[str]:
    """One ``key path: value`` fact per scalar field of `record`, in its order."""
    if isinstance(record, str):
        nested = parse_record(record)
        if nested is not None:
            return record_facts(nested, unit_words, path)
    if isinstance(record, dict):
        return [
            fact
            for key, value in record.items()
            for fact in record_facts(value, unit_words, (*path, _key_words(key)))
        ]
    if isinstance(record, (list, tuple)):
        if all(not isinstance(v, (dict, list, tuple)) for v in record):
            return [f"{' '.join(path)}: {', '.join(_scalar(v) for v in record)}"]
        return [
            fact
            for k, value in enumerate(record, start=1)
            for fact in record_facts(value, unit_words, (*path, str(k)))
        ]
    head = " ".join(path)
    text = _scalar(record)
    if len(text.split()) <= unit_words:
        return [f"{head}: {text}"]
    return [f"{head}: {piece}" for piece in prose_units(text, unit_words)]


def prose_units(text: str, unit_words: int) -> list[str]:
    """The texts of `text`'s evidence units under the ``sentences`` rule
    (`runner.verifiers.detector_inputs`), white-space-only units left out."""
    return [unit for s, e in _units(text, unit_words) if (unit := text[s:e]).strip()]


def context_units(context: str, unit_words: int, units: str) -> tuple[list[str], str]:
    """The context's evidence units (texts, document order) and the joiner between them.

    ``sentences`` gives the texts of `runner.verifiers.detector_inputs`' units (joined by a
    space, as before issue 43); ``by_form`` gives a record's facts joined by ``"; "`` and
    prose as ``sentences``.
    """
    if units not in UNITS:
        raise ConfigError(f"detector units {units!r} not in {UNITS}")
    if units == "by_form":
        found = find_record(context)
        if found is not None:
            record, before, after = found
            facts = [
                *prose_units(before, unit_words),
                *record_facts(record, unit_words),
                *prose_units(after, unit_words),
            ]
            if facts:
                return facts, "; "
    return [context[s:e] for s, e in _units(context, unit_words)], " "  # as before issue 43
