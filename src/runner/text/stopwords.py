"""The English stop-word list behind every "non-stopword" feature.

Source: NLTK's English stop-word corpus (``nltk_data/corpora/stopwords/english``, the
widely used 179-word version), written out here so the project needs no corpus download.
The 26 entries that contain an apostrophe ("don't", "it's", ...) are left out:
`runner.text.tokenize` never yields an apostrophe, it splits those words into pieces
("don", "t") that the list already holds. 153 words remain. (Later corpus releases only add
more apostrophe contractions, "i'm", "they're", ..., whose pieces are in the list too.)

Why NLTK's list rather than scikit-learn's 318-word list: it is the usual choice for
token-overlap features, and with it the uncovered-token fraction and ROUGE-L risk on the
RAGTruth test split land closest to the values RAGScope reports, pooled and per task
(scikit-learn's list, or none, move the per-task values further away). The TF-IDF features
use scikit-learn's list, as the study specifies.
"""

from __future__ import annotations

from collections.abc import Iterable
from itertools import filterfalse

STOPWORDS: frozenset[str] = frozenset(
    """
    i me my myself we our ours ourselves you your yours yourself yourselves he him his
    himself she her hers herself it its itself they them their theirs themselves what which
    who whom this that these those am is are was were be been being have has had having do
    does did doing a an the and but if or because as until while of at by for with about
    against between into through during before after above below to from up down in out on
    off over under again further then once here there when where why how all any both each
    few more most other some such no nor not only own same so than too very s t can will
    just don should now d ll m o re ve y ain aren couldn didn doesn hadn hasn haven isn ma
    mightn mustn needn shan shouldn wasn weren won wouldn
    """.split()
)


def content_tokens(tokens: Iterable[str]) -> list[str]:
    """Drop stop words, keeping order and repeats.

    Parameters
    ----------
    tokens : iterable of str
        Tokens from `runner.text.tokenize`.

    Returns
    -------
    list of str
        The tokens not in `STOPWORDS`: ``["the", "cat", "is", "here", "cat"]`` ->
        ``["cat", "cat"]``.
    """
    return list(filterfalse(STOPWORDS.__contains__, tokens))
