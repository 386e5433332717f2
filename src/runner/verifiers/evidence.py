"""What part of the context a verifier sees: the evidence policy.

Why: the paper's verifier results depend on the evidence policy as much as on the model
(DeBERTa-NLI sees the top 3 lexically chosen sentences, HHEM the full context cut to 512
tokens), so the policy is configuration, named with the model in every table.

``top_k_sentences`` splits the context with the project's sentence splitter
(`runner.text.split_sentences`) and scores each sentence by lexical overlap with the
answer: the number of distinct non-stopword tokens (`runner.text.tokenize` +
`content_tokens`) it shares with the answer. The k best sentences (ties: earlier sentence
first) are joined in document order with single spaces, each keeping its own terminator
("." "!" "?" ";"), which the splitter removes but a model should see. A context with k or
fewer sentences is passed whole (sentences joined the same way); one with no sentence at
all (punctuation only) is passed unchanged.

``full_context`` passes the context unchanged; length limits are enforced later, at
tokenisation, where the context (never the answer) is cut and the cut is counted.
"""

from __future__ import annotations

from collections.abc import Sequence

from runner.errors import ConfigError
from runner.text import content_tokens, split_sentences, tokenize

POLICIES = ("top_k_sentences", "full_context")

_TERMINATORS = ".!?;"


def sentence_spans(text: str) -> list[tuple[int, int]]:
    """Character spans of `split_sentences(text)` in `text`, each with its terminators.

    Parameters
    ----------
    text : str

    Returns
    -------
    list of (start, end)
        One span per sentence of `split_sentences`, in order; ``text[start:end]`` is the
        sentence followed by the run of terminators right after it, if any.
    """
    spans = []
    cursor = 0
    for piece in split_sentences(text):
        start = text.find(piece, cursor)
        if start < 0:  # split_sentences returns stripped substrings in order
            raise ValueError(f"sentence {piece[:40]!r} not found in its text")
        end = start + len(piece)
        while end < len(text) and text[end] in _TERMINATORS:
            end += 1
        spans.append((start, end))
        cursor = end
    return spans


def top_k_sentences(context: str, answer: str, k: int) -> str:
    """The k context sentences sharing most content tokens with the answer.

    Parameters
    ----------
    context, answer : str
    k : int
        Number of sentences, >= 1.

    Returns
    -------
    str
        The chosen sentences in document order, joined by single spaces.
    """
    if k < 1:
        raise ConfigError(f"top_k must be >= 1, got {k}")
    spans = sentence_spans(context)
    if not spans:  # no sentence at all (e.g. punctuation only): the context is the evidence
        return context
    sentences = [context[s:e] for s, e in spans]
    if len(sentences) > k:
        answer_terms = set(content_tokens(tokenize(answer)))
        overlap = [len(answer_terms.intersection(content_tokens(tokenize(s)))) for s in sentences]
        ranked = sorted(range(len(sentences)), key=lambda i: (-overlap[i], i))
        sentences = [sentences[i] for i in sorted(ranked[:k])]
    return " ".join(sentences)


def select_evidence(
    contexts: Sequence[str], answers: Sequence[str], policy: str, k: int = 3
) -> list[str]:
    """Evidence text for each example under a policy.

    Parameters
    ----------
    contexts, answers : sequences of str
        Same length.
    policy : str
        One of `POLICIES`.
    k : int
        Sentences for ``top_k_sentences``.

    Returns
    -------
    list of str
    """
    check_policy(policy, k)
    if policy == "full_context":
        return list(contexts)
    return [top_k_sentences(c, a, k) for c, a in zip(contexts, answers, strict=True)]


def check_policy(policy: str, k: int) -> None:
    """Raise `ConfigError` for an unknown policy or a k below 1."""
    if policy not in POLICIES:
        raise ConfigError(f"evidence policy {policy!r} not in {POLICIES}")
    if policy == "top_k_sentences" and int(k) < 1:
        raise ConfigError(f"top_k must be >= 1 for top_k_sentences, got {k}")
