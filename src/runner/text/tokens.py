"""Word tokens and numbers: the one definition every feature, gate and verifier shares.

RAGScope's features are only comparable across gates if every gate sees the same tokens, so
the rule lives here and nowhere else: lowercase the text, strip thousands separators from
numbers ("1,234" -> "1234"), and keep the maximal runs of ``[a-z0-9]``. Anything else
(punctuation, whitespace, non-ASCII letters) separates tokens. This is the rule of the
original ROUGE tokeniser (and ``rouge_score``'s), plus the comma stripping the study asks for.
"""

from __future__ import annotations

import re

# A comma is a thousands separator when a digit precedes it and exactly three digits follow
# ("1,234,567"); "1,2,3" (a list) keeps its commas, so its items stay separate tokens. The
# pattern starts at the comma and the preceding digit is checked in Python: commas followed
# by three digits are rare, and a leading look-behind would be tried at every position.
_COMMA_BEFORE_THOUSANDS = re.compile(r",(?=[0-9]{3}(?![0-9]))")
_TOKEN = re.compile(r"[a-z0-9]+")
# A number: digits with optional thousands groups and an optional decimal part, not glued to
# a preceding letter or digit ("covid19" holds no number; "10am" holds 10). The look-behind
# sits after the first digit so that it is only tried at digits.
_NUMBER = re.compile(r"[0-9](?<![A-Za-z0-9][0-9])[0-9]*(?:,[0-9]{3}(?![0-9]))*(?:\.[0-9]+)?")


def _drop_separator(match: re.Match[str]) -> str:
    start = match.start()
    return "" if start > 0 and match.string[start - 1] in "0123456789" else ","


def strip_thousands_separators(text: str) -> str:
    """Remove the commas that separate thousands inside numbers.

    Returns
    -------
    str
        `text` with every comma that has an ASCII digit before it and exactly three ASCII
        digits after it removed: ``"1,234,567 and 1,2"`` -> ``"1234567 and 1,2"``.
    """
    return _COMMA_BEFORE_THOUSANDS.sub(_drop_separator, text)


def tokenize(text: str) -> list[str]:
    """Split text into lowercased alphanumeric tokens.

    Returns
    -------
    list of str
        The maximal ``[a-z0-9]+`` spans of the lowercased text after thousands separators are
        stripped, in order: ``"Paid $1,234.50, it's OK"`` -> ``["paid", "1234", "50", "it",
        "s", "ok"]``.
    """
    return _TOKEN.findall(_COMMA_BEFORE_THOUSANDS.sub(_drop_separator, text.lower()))


def numbers(text: str) -> list[str]:
    """The numbers written in a text, thousands separators stripped, in order.

    Returns
    -------
    list of str
        One string per number occurrence: ``"1,234.5 and 7"`` -> ``["1234.5", "7"]``. A
        decimal part is kept (``"3.50"`` stays ``"3.50"``; no numeric normalisation), a sign
        is not, and digits glued to a preceding letter (``"covid19"``) are not a number.
    """
    return [m.replace(",", "") for m in _NUMBER.findall(text)]
