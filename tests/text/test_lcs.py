"""Bit-parallel LCS: same lengths as rouge_score's dynamic programme."""

from hypothesis import given, settings
from hypothesis import strategies as st
from rouge_score.rouge_scorer import _lcs_table

from runner.text import PositionMasks, lcs_length, lcs_length_masks

# A small alphabet makes matches (and so non-trivial LCS tables) frequent.
tokens = st.lists(st.sampled_from(["a", "b", "c", "d", "e"]), max_size=40)
wide_tokens = st.lists(st.text(alphabet="abcdefghij", min_size=1, max_size=2), max_size=120)


def reference(a, b):
    return _lcs_table(a, b)[-1][-1]


@settings(max_examples=400, deadline=None)
@given(tokens, tokens)
def test_matches_rouge_score_on_small_alphabet(a, b):
    assert lcs_length(a, b) == reference(a, b)


@settings(max_examples=100, deadline=None)
@given(wide_tokens, wide_tokens)
def test_matches_rouge_score_on_long_sequences(a, b):
    # Sequences longer than a machine word exercise carries across 64-bit limbs.
    assert lcs_length(a, b) == reference(a, b)


@settings(max_examples=200, deadline=None)
@given(tokens, tokens)
def test_is_symmetric_and_reusable_masks_agree(a, b):
    masks = PositionMasks.of(b)
    assert lcs_length_masks(a, masks) == lcs_length(a, b) == lcs_length(b, a)


def test_hand_computed_examples():
    assert lcs_length("abcbdab", "bdcaba") == 4
    assert lcs_length(["the", "cat", "sat"], ["a", "cat", "sat", "down"]) == 2
    assert lcs_length(["x", "y"], ["y", "x"]) == 1


def test_empty_sequences():
    assert lcs_length([], ["a"]) == 0
    assert lcs_length(["a"], []) == 0
    assert lcs_length([], []) == 0


def test_masks_record_every_position():
    masks = PositionMasks.of(["a", "b", "a"])
    assert masks.length == 3
    assert masks.masks == {"a": 0b101, "b": 0b010}
