"""Base feature family φ on hand-computed examples and the degenerate-input conventions."""

import math

import pytest

from runner.features import ExampleView
from runner.features import base as phi

QUESTION = "Who founded Acme?"
CONTEXT = "Acme was founded in 1,234 by Jane Smith. It sells anvils.\nProfits were 5.5 million."
ANSWER = "Acme was founded by John Smith in 1234 and sells rockets."
# Answer tokens (11): acme was founded by john smith in 1234 and sells rockets
# Answer content (7): acme founded john smith 1234 sells rockets
# Context tokens (16): acme was founded in 1234 by jane smith it sells anvils profits were 5 5
#   million; content (11): acme founded 1234 jane smith sells anvils profits 5 5 million
# Sentences: "Acme was founded in 1,234 by Jane Smith" | "It sells anvils" | "Profits were 5.5
#   million"


@pytest.fixture
def x():
    return ExampleView.of(QUESTION, CONTEXT, ANSWER)


def test_lengths_count_all_tokens(x):
    assert phi.answer_length(x) == 11.0
    assert phi.context_length(x) == 16.0


def test_uncovered_fraction_counts_content_occurrences(x):
    # covered: acme founded smith 1234 sells; uncovered: john rockets
    assert phi.uncovered_fraction(x) == pytest.approx(2 / 7)
    assert phi.coverage(x) == pytest.approx(5 / 7)


def test_uncovered_counts_repeats():
    x = ExampleView.of("", "cats purr", "cats cats dogs")
    assert phi.uncovered_fraction(x) == pytest.approx(1 / 3)


def test_question_tokens_are_not_evidence():
    x = ExampleView.of("capital of France", "Paris is large.", "France capital Paris")
    assert phi.uncovered_fraction(x) == pytest.approx(2 / 3)


def test_rare_token_coverage_uses_tokens_of_length_six_or_more(x):
    # rare: founded (covered), rockets (not)
    assert phi.rare_token_coverage(x) == pytest.approx(1 / 2)


def test_jaccards_use_content_sets(x):
    # answer set 7, context set 10 (5 occurs twice), 5 shared -> union 12
    assert phi.answer_context_jaccard(x) == pytest.approx(5 / 12)
    # question content {founded, acme} ("who" is a stop word), both in the answer
    assert phi.question_answer_jaccard(x) == pytest.approx(2 / 7)


def test_jaccard_of_empty_sets_is_zero():
    assert phi.jaccard(frozenset(), frozenset()) == 0.0
    assert phi.jaccard(frozenset({"a"}), frozenset()) == 0.0
    assert phi.jaccard(frozenset({"a", "b"}), frozenset({"b", "c"})) == pytest.approx(1 / 3)


def test_longest_supported_run_is_longest_copied_token_stretch(x):
    # "acme was founded" (3 of 11 tokens) beats "in 1234"
    assert phi.longest_supported_run(x) == pytest.approx(3 / 11)


def test_longest_run_counts_stop_words_and_whole_answer():
    x = ExampleView.of("", "so the cat sat on the mat today", "The cat sat on the mat")
    assert phi.longest_supported_run(x) == 1.0


def test_best_sentence_support_takes_the_best_single_sentence(x):
    # sentence 1 holds acme founded 1234 smith: 4 of the answer's 7 content tokens
    assert phi.best_sentence_support(x) == pytest.approx(4 / 7)


def test_best_sentence_support_weights_repeats():
    x = ExampleView.of("", "Dogs bark. Cats purr.", "cats cats dogs")
    assert phi.best_sentence_support(x) == pytest.approx(2 / 3)


def test_numbers(x):
    assert phi.numeric_coverage(x) == 1.0  # 1234 matches the context's "1,234"
    assert phi.numeric_count(x) == 1.0


def test_numbers_with_commas_and_decimals():
    x = ExampleView.of(
        "", "Revenue: 1234567 dollars; growth 3.50%", "Revenue was 1,234,567 dollars, up 3.5%"
    )
    # answer numbers 1234567 (found) and 3.5 (context writes 3.50: not the same string)
    assert phi.numeric_coverage(x) == pytest.approx(1 / 2)
    assert phi.numeric_count(x) == 2.0
    assert phi.uncovered_fraction(x) == pytest.approx(1 / 5)  # revenue 1234567 dollars up 3 5


# Degenerate inputs: (question, context, answer) and the value each feature must take.
DEGENERATE = {
    "empty answer fails closed": (
        ("What?", "Some context here.", ""),
        {
            "answer_length": 0.0,
            "uncovered_fraction": 1.0,
            "coverage": 0.0,
            "rare_token_coverage": 1.0,
            "answer_context_jaccard": 0.0,
            "question_answer_jaccard": 0.0,
            "longest_supported_run": 0.0,
            "best_sentence_support": 0.0,
            "numeric_coverage": 1.0,
            "numeric_count": 0.0,
        },
    ),
    "stop-word-only answer fails closed on content features": (
        ("", "It is here.", "It is what it is."),
        {
            "uncovered_fraction": 1.0,
            "coverage": 0.0,
            "best_sentence_support": 0.0,
            "answer_context_jaccard": 0.0,
            # the run counts every token: "it is" of "it is what it is"
            "longest_supported_run": pytest.approx(2 / 5),
        },
    ),
    "empty context": (
        ("", "", "Paris hosted 2,024 games"),
        {
            "context_length": 0.0,
            "uncovered_fraction": 1.0,
            "rare_token_coverage": 0.0,  # "hosted" is not covered
            "answer_context_jaccard": 0.0,
            "longest_supported_run": 0.0,
            "best_sentence_support": 0.0,
            "numeric_coverage": 0.0,
            "numeric_count": 1.0,
        },
    ),
}


@pytest.mark.parametrize(("texts", "expected"), DEGENERATE.values(), ids=DEGENERATE.keys())
def test_degenerate_inputs_follow_the_conventions(texts, expected):
    x = ExampleView.of(*texts)
    assert {name: getattr(phi, name)(x) for name in expected} == expected


def test_everything_empty_is_finite():
    x = ExampleView.of("", "", "")
    values = [
        f(x)
        for f in (
            phi.answer_length,
            phi.context_length,
            phi.coverage,
            phi.uncovered_fraction,
            phi.rare_token_coverage,
            phi.answer_context_jaccard,
            phi.question_answer_jaccard,
            phi.longest_supported_run,
            phi.best_sentence_support,
            phi.numeric_coverage,
            phi.numeric_count,
        )
    ]
    assert all(math.isfinite(v) for v in values)
