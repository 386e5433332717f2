"""Sentence boundaries: . ! ? ; and line breaks; decimals are not boundaries."""

from runner.text import split_sentences


def test_splits_at_terminators_and_line_breaks():
    text = "First one. Second! Third? Fourth; fifth\nsixth\r\nseventh"
    assert split_sentences(text) == [
        "First one",
        "Second",
        "Third",
        "Fourth",
        "fifth",
        "sixth",
        "seventh",
    ]


def test_decimal_point_is_not_a_boundary():
    assert split_sentences("It costs $23.70 per hour. Done") == ["It costs $23.70 per hour", "Done"]


def test_full_stop_after_a_number_is_a_boundary():
    assert split_sentences("He was 7. She was 9.") == ["He was 7", "She was 9"]


def test_empty_pieces_are_dropped():
    assert split_sentences("...\n\n  \n!? A.  .B") == ["A", "B"]
    assert split_sentences("") == []
    assert split_sentences("  \n ") == []


def test_text_without_terminator_is_one_sentence():
    assert split_sentences("  no terminator here ") == ["no terminator here"]
