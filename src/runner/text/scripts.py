"""Which texts the lexical features can read: the share of letters the tokeniser cannot see.

Why: `runner.text.tokenize` keeps runs of ``[a-z0-9]`` (the ROUGE rule every published
number is computed with), so text in a script without Latin letters (Chinese, Japanese,
Korean, Cyrillic, Greek, ...) yields few or no tokens and every lexical feature sees nothing
of it. Changing the tokeniser would move published numbers; instead a row whose letters are
mostly invisible to it is detected here, and routing sends it to review with that reason
rather than trusting a risk computed from text the gate could not read.
"""

from __future__ import annotations

import re

UNSEEN_LETTERS_MAX = 0.5
"""Above this share of invisible letters the lexical features cannot judge a text. Latin
text with accents (German, French: a few per cent) stays far below it."""

_NON_ASCII = re.compile(r"[^\x00-\x7f]+")
_ASCII_NON_LETTERS = bytes(c for c in range(128) if not chr(c).isalpha())


def unseen_letter_share(text: str) -> float:
    """Share of the letters of `text` that `tokenize` drops (not ASCII ``a-z``).

    Parameters
    ----------
    text : str

    Returns
    -------
    float
        In [0, 1]; 0.0 for a text without letters. ``"Über die Größe"`` -> 0.25;
        ``"数据"`` -> 1.0.
    """
    if text.isascii():  # O(1) in CPython: every letter is a-z or A-Z, so none is unseen
        return 0.0
    # Only the non-ASCII letters are unseen; the ASCII ones are counted in C.
    seen = len(text.encode("ascii", "ignore").translate(None, _ASCII_NON_LETTERS))
    unseen = sum(c.isalpha() for run in _NON_ASCII.findall(text) for c in run)
    letters = seen + unseen
    return unseen / letters if letters else 0.0


def unreadable_reason(*texts: str) -> str | None:
    """Why the lexical features cannot read these texts, or None when they can."""
    for text in texts:
        share = unseen_letter_share(text)
        if share > UNSEEN_LETTERS_MAX:
            return (
                f"unsupported script: {share:.0%} of the letters are not a-z, which the "
                "lexical features cannot see (docs/rag_file_format.md, Languages)"
            )
    return None
