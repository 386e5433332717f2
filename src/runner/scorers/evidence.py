"""The evidence behind a lexical risk, as a reviewer reads it in a scorer's rationale.

Why: a number alone does not tell a reviewer where to look. The lexical gates' risk comes
from answer tokens the retrieved context does not contain, so the rationale names those
tokens and the answer sentence with the largest uncovered share (the weakest sentence),
computed with the same tokeniser and views as the features (`runner.features.views`).
"""

from __future__ import annotations

from dataclasses import dataclass

from runner.features import ExampleView, uncovered_fraction
from runner.text import split_sentences

MAX_TOKENS = 12


@dataclass(frozen=True)
class Evidence:
    """Uncovered answer tokens (first occurrences, in order) and the weakest sentence."""

    uncovered: list[str]
    weakest_sentence: str | None
    weakest_uncovered: float | None

    def text(self, max_tokens: int = MAX_TOKENS) -> str:
        """One line for a rationale."""
        shown = ", ".join(self.uncovered[:max_tokens])
        extra = len(self.uncovered) - max_tokens
        more = f" (+{extra} more)" if extra > 0 else ""
        parts = [f"answer tokens not in the context: {shown or 'none'}{more}"]
        if self.weakest_sentence is not None:
            parts.append(
                f"weakest sentence ({self.weakest_uncovered:.0%} uncovered): "
                f"{self.weakest_sentence!r}"
            )
        return "; ".join(parts)


def lexical_evidence(question: str, context: str, answer: str) -> Evidence:
    """What in `answer` the `context` does not support, token- and sentence-wise."""
    view = ExampleView.of(question, context, answer)
    vocabulary = view.context.vocabulary
    uncovered = list(dict.fromkeys(t for t in view.answer.content if t not in vocabulary))
    scored = []
    for sentence in split_sentences(answer):
        sub = ExampleView.of(question, context, sentence)
        if sub.answer.content:  # a sentence without content tokens says nothing
            scored.append((uncovered_fraction(sub), sentence))
    if not scored:
        return Evidence(uncovered, None, None)
    share, sentence = max(scored, key=lambda pair: pair[0])
    return Evidence(uncovered, sentence, share)
