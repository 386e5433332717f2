"""The project tokeniser: lowercased alphanumeric spans, thousands separators stripped."""

from runner.text import numbers, strip_thousands_separators, tokenize


def test_lowercases_and_splits_on_non_alphanumerics():
    assert tokenize("The Cat-sat, on\tthe MAT!") == ["the", "cat", "sat", "on", "the", "mat"]


def test_thousands_separators_are_stripped_before_splitting():
    assert tokenize("It cost 1,234,567 dollars") == ["it", "cost", "1234567", "dollars"]
    assert tokenize("1,234.5") == ["1234", "5"]


def test_commas_that_are_not_thousands_separators_split():
    assert tokenize("items 1,2,3 and 12,34") == ["items", "1", "2", "3", "and", "12", "34"]
    assert tokenize("in 1999, 2000 people") == ["in", "1999", "2000", "people"]


def test_apostrophes_and_non_ascii_letters_separate_tokens():
    assert tokenize("it's café") == ["it", "s", "caf"]


def test_empty_and_punctuation_only_text_has_no_tokens():
    assert tokenize("") == []
    assert tokenize(" ... !? ") == []


def test_strip_thousands_separators_keeps_other_commas():
    assert strip_thousands_separators("1,234,567 and 1,2, a,b") == "1234567 and 1,2, a,b"


def test_numbers_strip_commas_and_keep_decimals():
    assert numbers("1,234.5 and 7.") == ["1234.5", "7"]
    assert numbers("$23.70 per hour, 3.50") == ["23.70", "3.50"]


def test_numbers_ignore_digits_glued_to_letters_but_keep_units():
    assert numbers("covid19 at 10am in B2") == ["10"]


def test_numbers_keep_repeats_in_order():
    assert numbers("5, 6 and 5") == ["5", "6", "5"]


def test_no_numbers():
    assert numbers("") == []
    assert numbers("no digits here") == []
