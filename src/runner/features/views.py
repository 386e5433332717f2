"""Tokenised views of the texts a feature compares, built once and shared by every feature.

RAGTruth attaches six answers to each context, and a context is hundreds of tokens long, so
the per-context work (tokens, vocabulary, sentence index, LCS bitmasks) is done once per
distinct context and reused; only the answer side is redone per example. Derived indexes are
computed on first use (`functools.cached_property`), so a caller that needs one feature pays
for that feature's index only. `ExampleView` holds the answer-in-context lookups several
features share.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from itertools import repeat
from typing import Any, Generic, TypeVar

import numpy as np

from runner.text import (
    PositionMasks,
    content_tokens,
    numbers,
    split_sentences,
    tokenize,
)

T = TypeVar("T")


class cached_property(Generic[T]):  # named as the functools one it replaces
    """A property computed on its first read and stored on the instance.

    Why not `functools.cached_property`: on Python 3.11 it takes a lock on every first
    read, and views are built per answer (three first reads a row: about a tenth of the
    lexical features' time). Views are never shared between threads while being built.
    Like the functools one it writes the instance's ``__dict__``, so frozen dataclasses
    keep it, and later reads find the value there without calling this descriptor.
    """

    def __init__(self, function: Callable[[Any], T]) -> None:
        self.function = function
        self.name = function.__name__
        self.__doc__ = function.__doc__

    def __set_name__(self, owner: type, name: str) -> None:
        self.name = name

    def __get__(self, instance: Any, owner: type | None = None) -> Any:
        if instance is None:
            return self
        value = instance.__dict__[self.name] = self.function(instance)
        return value


# Character 0 encodes "token absent from the context" in `ContextView.encode`; the context's
# own distinct tokens get code points 1, 2, ... (a context with more distinct tokens than
# there are code points below the surrogate block skips that block).
ABSENT = "\0"
_SURROGATE_START, _SURROGATE_END = 0xD800, 0xE000


def _codes(count: int) -> list[str]:
    if count < _SURROGATE_START - 1:
        return list(map(chr, range(1, count + 1)))
    points = [
        p + 1 if p + 1 < _SURROGATE_START else p + 1 + _SURROGATE_END - _SURROGATE_START
        for p in range(count)
    ]
    return list(map(chr, points))


@dataclass(frozen=True, eq=False)
class TextView:
    """A text with its tokens, non-stopword tokens and numbers (answer or question side).

    Attributes
    ----------
    text : str
        The raw text.
    tokens : list of str
        `runner.text.tokenize(text)`.
    content : list of str
        `tokens` without stop words (order and repeats kept).
    numbers : list of str
        `runner.text.numbers(text)`.
    """

    text: str
    tokens: list[str]
    content: list[str]
    numbers: list[str]

    @classmethod
    def of(cls, text: str) -> TextView:
        """Tokenise `text` once into a view."""
        tokens = tokenize(text)
        return cls(text, tokens, content_tokens(tokens), numbers(text))

    @cached_property
    def content_set(self) -> frozenset[str]:
        """Distinct non-stopword tokens."""
        return frozenset(self.content)


@dataclass(frozen=True, eq=False)
class ContextView(TextView):
    """A context with the indexes the support features look answers up in.

    Attributes
    ----------
    sentence_sizes : list of int
        Content tokens in each sentence (`runner.text.split_sentences`), in order; they sum
        to ``len(content)``. Sentence boundaries never fall inside a token, so tokenising
        sentence by sentence gives exactly `tokens`.
    sentence_lengths : list of int
        Tokens in each sentence (stop words included), in order; they sum to
        ``len(tokens)``, so consecutive slices of `tokens` are each sentence's
        `runner.text.tokenize` tokens (the TF-IDF sentence vectors read them there).
    """

    sentence_sizes: list[int]
    sentence_lengths: list[int]

    @classmethod
    def of(cls, text: str) -> ContextView:
        """Tokenise `text` sentence by sentence, once, into a view."""
        tokens: list[str] = []
        content: list[str] = []
        sizes: list[int] = []
        lengths: list[int] = []
        for sentence in split_sentences(text):
            sentence_tokens = tokenize(sentence)
            sentence_content = content_tokens(sentence_tokens)
            tokens += sentence_tokens
            content += sentence_content
            sizes.append(len(sentence_content))
            lengths.append(len(sentence_tokens))
        return cls(text, tokens, content, numbers(text), sizes, lengths)

    @cached_property
    def vocabulary(self) -> dict[str, int]:
        """Distinct non-stopword tokens -> column index (first-occurrence order)."""
        distinct = dict.fromkeys(self.content)
        return dict(zip(distinct, range(len(distinct)), strict=True))

    @cached_property
    def content_columns(self) -> list[int]:
        """`vocabulary` column of each content token, in order."""
        return list(map(self.vocabulary.__getitem__, self.content))

    @cached_property
    def content_counts(self) -> np.ndarray:
        """Occurrences of each `vocabulary` token in the context (float64, by column)."""
        counts = np.bincount(self.content_columns, minlength=len(self.vocabulary))
        return counts.astype(np.float64)

    @cached_property
    def number_set(self) -> frozenset[str]:
        """Distinct numbers of the context."""
        return frozenset(self.numbers)

    @cached_property
    def content_masks(self) -> PositionMasks:
        """Bit-parallel LCS index of the non-stopword token sequence."""
        return PositionMasks.of(self.content)

    @cached_property
    def token_codes(self) -> dict[str, str]:
        """Token -> one character, for substring search over token sequences."""
        distinct = dict.fromkeys(self.tokens)
        return dict(zip(distinct, _codes(len(distinct)), strict=True))

    @cached_property
    def token_string(self) -> str:
        """The context's full token sequence, one character per token (see `token_codes`)."""
        return "".join(map(self.token_codes.__getitem__, self.tokens))

    def encode(self, tokens: list[str]) -> str:
        """Another text's tokens in this context's character code; `ABSENT` for new tokens."""
        return "".join(map(self.token_codes.get, tokens, repeat(ABSENT, len(tokens))))

    @cached_property
    def sentence_incidence(self) -> np.ndarray:
        """0/1 matrix, one row per sentence, one column per `vocabulary` entry.

        Entry (s, v) is 1 when sentence s holds token v. Shape ``(n_sentences, |vocabulary|)``;
        zero rows when the context has no sentence.
        """
        sizes = self.sentence_sizes
        matrix = np.zeros((len(sizes), len(self.vocabulary)), dtype=np.float64)
        rows = np.repeat(np.arange(len(sizes)), sizes)
        matrix[rows, self.content_columns] = 1.0
        return matrix


@dataclass(frozen=True, eq=False)
class ExampleView:
    """One example (question, answer, context) with the answer's lookups in its context.

    Attributes
    ----------
    question : TextView
        The question or task instruction.
    answer : TextView
        The answer being judged.
    context : ContextView
        The evidence.
    """

    question: TextView
    answer: TextView
    context: ContextView

    @classmethod
    def of(cls, question: str, context: str, answer: str) -> ExampleView:
        """Views of three raw texts (convenience for single examples and tests)."""
        return cls(TextView.of(question), TextView.of(answer), ContextView.of(context))

    @cached_property
    def covered_columns(self) -> list[int]:
        """`vocabulary` column of each answer content token found in the context, in order."""
        content = self.answer.content
        found = map(self.context.vocabulary.get, content, repeat(-1, len(content)))
        return list(filter((-1).__ne__, found))  # in C: columns are >= 0, -1 is "absent"

    @cached_property
    def covered_weights(self) -> np.ndarray:
        """How often the answer uses each context `vocabulary` token (float64, by column)."""
        return np.bincount(self.covered_columns, minlength=len(self.context.vocabulary)).astype(
            np.float64
        )
