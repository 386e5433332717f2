"""The stop-word list and the non-stopword filter."""

from runner.text import STOPWORDS, content_tokens, tokenize


def test_list_is_nltk_english_without_apostrophe_entries():
    assert len(STOPWORDS) == 153
    assert all(word.isalpha() and word.islower() for word in STOPWORDS)
    assert {"the", "a", "is", "not", "don", "t", "s", "wouldn"} <= STOPWORDS
    assert not {"cat", "know", "paris", "one"} & STOPWORDS


def test_content_tokens_keep_order_and_repeats():
    assert content_tokens(["the", "cat", "is", "here", "cat"]) == ["cat", "cat"]


def test_contraction_pieces_are_stop_words():
    assert content_tokens(tokenize("It isn't, don't, you'll")) == []


def test_only_stop_words_gives_nothing():
    assert content_tokens(tokenize("It is not there, is it?")) == []
    assert content_tokens([]) == []
