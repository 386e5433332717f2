"""Tokenised views: context indexes agree with the plain definitions they speed up."""

import numpy as np
from hypothesis import given, settings
from hypothesis import strategies as st

from runner.features import (
    ContextView,
    ExampleView,
    TextView,
    best_sentence_support,
    longest_supported_run,
)
from runner.text import content_tokens, numbers, split_sentences, tokenize

# Text built from pieces that stress tokens, numbers, commas and sentence boundaries.
pieces = st.sampled_from(
    [
        "a",
        "b",
        "the",
        "cat",
        "1",
        "23",
        ",",
        ",000",
        ".",
        "5",
        " ",
        " ",
        "\n",
        "!",
        ";",
        "?",
        "Z",
        "é",
        "is",
        "1,234",
        "3.5",
        "x9",
        "...",
    ]
)
texts = st.lists(pieces, max_size=40).map("".join)


def naive_longest_common_substring(a, b):
    best = 0
    for i in range(len(a)):
        for j in range(len(b)):
            k = 0
            while i + k < len(a) and j + k < len(b) and a[i + k] == b[j + k]:
                k += 1
            best = max(best, k)
    return best


def test_text_view_fields():
    view = TextView.of("The 1,234 cats, the CATS.")
    assert view.tokens == ["the", "1234", "cats", "the", "cats"]
    assert view.content == ["1234", "cats", "cats"]
    assert view.numbers == ["1234"]
    assert view.content_set == {"1234", "cats"}


def test_context_view_indexes():
    view = ContextView.of("Cats purr. The dog\nbarks at cats")
    assert view.sentence_sizes == [2, 1, 2]
    assert view.vocabulary == {"cats": 0, "purr": 1, "dog": 2, "barks": 3}
    assert view.content_counts.tolist() == [2.0, 1.0, 1.0, 1.0]
    assert view.sentence_incidence.tolist() == [
        [1.0, 1.0, 0.0, 0.0],
        [0.0, 0.0, 1.0, 0.0],
        [1.0, 0.0, 0.0, 1.0],
    ]


def test_empty_context_view():
    view = ContextView.of("")
    assert view.tokens == [] and view.sentence_sizes == []
    assert view.sentence_incidence.shape == (0, 0)


@settings(max_examples=300, deadline=None)
@given(texts)
def test_sentence_wise_tokenisation_equals_whole_text_tokenisation(text):
    view = ContextView.of(text)
    assert view.tokens == tokenize(text)
    assert view.content == content_tokens(tokenize(text))
    assert view.numbers == numbers(text)
    assert sum(view.sentence_sizes) == len(view.content)


@settings(max_examples=300, deadline=None)
@given(texts, texts)
def test_longest_supported_run_equals_naive_longest_common_substring(context, answer):
    x = ExampleView.of("", context, answer)
    n = len(x.answer.tokens)
    expected = naive_longest_common_substring(x.answer.tokens, x.context.tokens) / n if n else 0
    assert longest_supported_run(x) == expected


@settings(max_examples=300, deadline=None)
@given(texts, texts)
def test_best_sentence_support_equals_naive_loop(context, answer):
    x = ExampleView.of("", context, answer)
    content = x.answer.content
    shares = (
        [
            sum(t in set(content_tokens(tokenize(s))) for t in content) / len(content)
            for s in split_sentences(context)
        ]
        if content
        else []
    )
    assert np.isclose(best_sentence_support(x), max(shares, default=0.0))


def test_token_codes_skip_the_surrogate_block():
    from runner.features.views import _codes

    codes = _codes(0xD800 + 10)
    points = [ord(c) for c in codes]
    assert len(set(codes)) == len(codes) and min(points) == 1
    assert not any(0xD800 <= p < 0xE000 for p in points)
    assert _codes(3) == ["\x01", "\x02", "\x03"]
