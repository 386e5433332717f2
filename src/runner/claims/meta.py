"""Meta-claims: claims about what the sources say or do not say, found by their wording.

Why: in the seed most judge false alarms were claims such as "the passages do not mention
X". A judge looks for a passage that supports the claim and an absence has none, so it
flags them even when they are right. Their wording gives them away, so every table of the
claim study is also reported with them set aside. The patterns are configuration: the
defaults below cover the forms in the seed ("the passages do not mention", "the documents
state", "there is no information about", "is not specified in the sources"); a user adds
or replaces them for another corpus (a document's own name, "the Green Book says").
"""

from __future__ import annotations

import re
from collections.abc import Iterable, Sequence
from dataclasses import dataclass, field

import numpy as np

_SOURCE = (
    r"(?:provided |given |retrieved |cited |supplied |available |above |following )?"
    r"(?:passages?|sources?|documents?|documentation|context|texts?|excerpts?|extracts?|"
    r"materials?|information provided|evidence|references?|guidance)"
)
_VERB = (
    r"(?:mentions?|says?|states?|specif(?:y|ies)|provides?|includes?|contains?|discuss(?:es)?|"
    r"address(?:es)?|covers?|describes?|indicates?|details?|defines?|explains?|lists?|"
    r"outlines?|refers? to|suggests?|notes?|clarif(?:y|ies)|gives?|offers?|makes? clear)"
)
# Only verbs of saying: "was not included in the squad" is a claim about the world.
_PARTICIPLE = (
    r"(?:mentioned|stated|specified|discussed|addressed|described|detailed|explained|"
    r"outlined|referenced|clarified)"
)

DEFAULT_PATTERNS: tuple[str, ...] = (
    # "the passages do not mention X", "the documents state that ...", "the text says"
    rf"\b(?:the|these|those|this|that|any of the|none of the|neither)\s+{_SOURCE}\s+"
    rf"(?:(?:do|does|did)(?:\s+not|n['’]t)\s+|(?:also\s+|only\s+|explicitly\s+|further\s+)?)"
    rf"{_VERB}\b",
    # "according to the passages", "based on the provided context" (not "in the context of")
    rf"\b(?:according to|based on|as per)\s+(?:the|these)\s+{_SOURCE}\b",
    # "there is no mention / information / reference / detail ..."
    r"\bthere (?:is|are|was|were) no (?:explicit |specific |further |additional )?"
    r"(?:mention|information|reference|details?|indication|data|evidence|discussion)\b",
    # "X is not mentioned / specified ... (in the passages)"
    rf"\b(?:is|are|was|were)\s+not\s+(?:explicitly\s+|directly\s+)?{_PARTICIPLE}\b",
    # "no information is given / provided"
    rf"\bno (?:information|details?|mention|data) (?:is|are|was|were) "
    rf"(?:{_PARTICIPLE}|given|provided|found)\b",
)
"""Regular expressions (case-insensitive) marking a claim as a meta-claim."""


@dataclass
class MetaClaimDetector:
    """Marks claims whose wording is about the sources rather than the world.

    Parameters
    ----------
    patterns : sequence of str, optional
        Regular expressions, matched case-insensitively anywhere in the claim. Default:
        `DEFAULT_PATTERNS`.
    extra_patterns : sequence of str
        Added to ``patterns`` (keeps the defaults while adding corpus-specific forms).
    """

    patterns: Sequence[str] | None = None
    extra_patterns: Sequence[str] = field(default_factory=tuple)

    def __post_init__(self) -> None:
        chosen = list(DEFAULT_PATTERNS if self.patterns is None else self.patterns)
        chosen += list(self.extra_patterns)
        if not chosen:
            raise ValueError("MetaClaimDetector needs at least one pattern")
        self._compiled = []
        for pattern in chosen:
            try:
                self._compiled.append(re.compile(pattern, re.IGNORECASE))
            except re.error as exc:
                raise ValueError(f"meta-claim pattern {pattern!r} is not a regex: {exc}") from exc

    def match(self, claim: str) -> str | None:
        """The first pattern that matches ``claim``, or None."""
        for compiled in self._compiled:
            if compiled.search(claim):
                return compiled.pattern
        return None

    def is_meta(self, claim: str) -> bool:
        """True when ``claim`` is worded as a claim about the sources."""
        return self.match(claim) is not None

    def detect(self, claims: Iterable[str]) -> np.ndarray:
        """Boolean array: which claims are meta-claims.

        Parameters
        ----------
        claims : iterable of str

        Returns
        -------
        ndarray of bool
        """
        return np.array([self.is_meta(c) for c in claims], dtype=bool)
