"""Text primitives shared by the whole project: tokens, stop words, sentences, numbers, LCS.

One definition of each, so every feature, gate and verifier tokenises the same way.
"""

from runner.text.lcs import PositionMasks, lcs_length, lcs_length_masks
from runner.text.scripts import unreadable_reason
from runner.text.sentences import split_sentences
from runner.text.stopwords import STOPWORDS, content_tokens
from runner.text.token_scores import TokenScores
from runner.text.tokens import numbers, strip_thousands_separators, tokenize

__all__ = [
    "STOPWORDS",
    "PositionMasks",
    "TokenScores",
    "content_tokens",
    "lcs_length",
    "lcs_length_masks",
    "numbers",
    "split_sentences",
    "strip_thousands_separators",
    "tokenize",
    "unreadable_reason",
]
