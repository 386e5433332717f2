"""Base feature family φ on hand-computed examples and the degenerate-input conventions."""

import math

import pytest

from runner.features import (
    ExampleView,
    answer_context_jaccard,
    answer_length,
    best_sentence_support,
    context_length,
    coverage,
    jaccard,
    longest_supported_run,
    numeric_count,
    numeric_coverage,
    question_answer_jaccard,
    rare_token_coverage,
    uncovered_fraction,
)

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
    assert answer_length(x) == 11.0
    assert context_length(x) == 16.0


def test_uncovered_fraction_counts_content_occurrences(x):
    # covered: acme founded smith 1234 sells; uncovered: john rockets
    assert uncovered_fraction(x) == pytest.approx(2 / 7)
    assert coverage(x) == pytest.approx(5 / 7)


def test_uncovered_counts_repeats():
    x = ExampleView.of("", "cats purr", "cats cats dogs")
    assert uncovered_fraction(x) == pytest.approx(1 / 3)


def test_question_tokens_are_not_evidence():
    x = ExampleView.of("capital of France", "Paris is large.", "France capital Paris")
    assert uncovered_fraction(x) == pytest.approx(2 / 3)


def test_rare_token_coverage_uses_tokens_of_length_six_or_more(x):
    # rare: founded (covered), rockets (not)
    assert rare_token_coverage(x) == pytest.approx(1 / 2)


def test_jaccards_use_content_sets(x):
    # answer set 7, context set 10 (5 occurs twice), 5 shared -> union 12
    assert answer_context_jaccard(x) == pytest.approx(5 / 12)
    # question content {founded, acme} ("who" is a stop word), both in the answer
    assert question_answer_jaccard(x) == pytest.approx(2 / 7)


def test_jaccard_of_empty_sets_is_zero():
    assert jaccard(frozenset(), frozenset()) == 0.0
    assert jaccard(frozenset({"a"}), frozenset()) == 0.0
    assert jaccard(frozenset({"a", "b"}), frozenset({"b", "c"})) == pytest.approx(1 / 3)


def test_longest_supported_run_is_longest_copied_token_stretch(x):
    # "acme was founded" (3 of 11 tokens) beats "in 1234"
    assert longest_supported_run(x) == pytest.approx(3 / 11)


def test_longest_run_counts_stop_words_and_whole_answer():
    x = ExampleView.of("", "so the cat sat on the mat today", "The cat sat on the mat")
    assert longest_supported_run(x) == 1.0


def test_best_sentence_support_takes_the_best_single_sentence(x):
    # sentence 1 holds acme founded 1234 smith: 4 of the answer's 7 content tokens
    assert best_sentence_support(x) == pytest.approx(4 / 7)


def test_best_sentence_support_weights_repeats():
    x = ExampleView.of("", "Dogs bark. Cats purr.", "cats cats dogs")
    assert best_sentence_support(x) == pytest.approx(2 / 3)


def test_numbers(x):
    assert numeric_coverage(x) == 1.0  # 1234 matches the context's "1,234"
    assert numeric_count(x) == 1.0


def test_numbers_with_commas_and_decimals():
    x = ExampleView.of(
        "", "Revenue: 1234567 dollars; growth 3.50%", "Revenue was 1,234,567 dollars, up 3.5%"
    )
    # answer numbers 1234567 (found) and 3.5 (context writes 3.50: not the same string)
    assert numeric_coverage(x) == pytest.approx(1 / 2)
    assert numeric_count(x) == 2.0
    assert uncovered_fraction(x) == pytest.approx(1 / 5)  # revenue 1234567 dollars up 3 5


def test_empty_answer_fails_closed():
    x = ExampleView.of("What?", "Some context here.", "")
    assert answer_length(x) == 0.0
    assert uncovered_fraction(x) == 1.0
    assert coverage(x) == 0.0
    assert rare_token_coverage(x) == 1.0
    assert answer_context_jaccard(x) == 0.0
    assert question_answer_jaccard(x) == 0.0
    assert longest_supported_run(x) == 0.0
    assert best_sentence_support(x) == 0.0
    assert numeric_coverage(x) == 1.0
    assert numeric_count(x) == 0.0


def test_stop_word_only_answer_fails_closed_on_content_features():
    x = ExampleView.of("", "It is here.", "It is what it is.")
    assert uncovered_fraction(x) == 1.0
    assert coverage(x) == 0.0
    assert best_sentence_support(x) == 0.0
    assert answer_context_jaccard(x) == 0.0
    # the run counts every token: "it is" of "it is what it is"
    assert longest_supported_run(x) == pytest.approx(2 / 5)


def test_empty_context():
    x = ExampleView.of("", "", "Paris hosted 2,024 games")
    assert context_length(x) == 0.0
    assert uncovered_fraction(x) == 1.0
    assert rare_token_coverage(x) == 0.0  # "hosted" is not covered
    assert answer_context_jaccard(x) == 0.0
    assert longest_supported_run(x) == 0.0
    assert best_sentence_support(x) == 0.0
    assert numeric_coverage(x) == 0.0
    assert numeric_count(x) == 1.0


def test_everything_empty_is_finite():
    x = ExampleView.of("", "", "")
    values = [
        f(x)
        for f in (
            answer_length,
            context_length,
            coverage,
            uncovered_fraction,
            rare_token_coverage,
            answer_context_jaccard,
            question_answer_jaccard,
            longest_supported_run,
            best_sentence_support,
            numeric_coverage,
            numeric_count,
        )
    ]
    assert all(math.isfinite(v) for v in values)
