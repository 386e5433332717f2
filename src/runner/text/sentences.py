"""Sentence splitting for sentence-level support features and evidence selection.

Boundaries are the characters ``. ! ? ;`` and line breaks. A single terminator between two
digits is not a boundary: it is a decimal point ("$23.70" stays one sentence). The rule is
deliberately simple: RAGScope only needs sentence-sized pieces of context to score support
against, and a simple rule is one a reader can predict.
"""

from __future__ import annotations

import re

# A boundary is a run of line breaks or of terminators, except that a single terminator
# between two digits is not one ("3.5", "1;2"). Every match starts with one character of
# the class (so the regex engine can skip ahead to candidates); look-arounds then decide:
#   line break:                       take the following line breaks;
#   terminator not after a digit:     a boundary, take the run;
#   terminator after a digit:         a boundary only if no digit follows the run.
_BOUNDARY = re.compile(
    r"[\r\n.!?;]"
    r"(?:(?<=[\r\n])[\r\n]*|(?<![0-9][.!?;])[.!?;]*|[.!?;]*(?![0-9]))"
)


def split_sentences(text: str) -> list[str]:
    """Split text into sentences at ``. ! ? ;`` and line breaks.

    Returns
    -------
    list of str
        The pieces between boundaries, stripped of surrounding whitespace, terminators
        removed; pieces that are empty after stripping are dropped. ``"A b. C!\\n\\nPi is
        3.14; end"`` -> ``["A b", "C", "Pi is 3.14", "end"]``.
    """
    return [piece for raw in _BOUNDARY.split(text) if (piece := raw.strip())]
