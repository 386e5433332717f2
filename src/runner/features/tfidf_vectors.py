"""TF-IDF vectors of a batch, computed so that each context is vectorised once per process.

Why: the two TF-IDF risks compare every answer with its context and with each context
sentence. Contexts repeat (six answers each in RAGTruth, and routed traffic asks about the
same documents batch after batch), so a context's vector and its sentences' vectors are
kept (`ContextTerms`, by the fitted vectorizer's fingerprint and the context's text, at
most `CONTEXTS_KEPT`), and only the answers are vectorised per batch. Every text is
vectorised from the tokens the lexical features already made (`tfidf_rows`).

Exactness: every number is what `TfidfVectorizer.transform` and scipy's sparse product
give, bit for bit. Vectorising is row-local in scikit-learn (counts, IDF scaling, L2
normalisation per row), so a context vectorised alone or in any batch has the same vector;
`best_sentence_cosine` adds each answer–sentence dot product in the order scipy's sparse
product (``csr_matmat``) adds it, term by term in ascending column order, starting at 0.
"""

from __future__ import annotations

import hashlib
from collections.abc import Iterable, Sequence
from dataclasses import dataclass
from itertools import chain, repeat

import numpy as np
from scipy import sparse

from runner.features.family import context_view
from runner.features.kept import Kept

CONTEXTS_KEPT = 2048
"""Contexts whose vectors outlive a batch. A RAGTruth context keeps 11 KB on average (its
vector and its sentences' entries; 36 KB the longest, measured on the test split with a
vocabulary fitted on train), so the bound is about 22 MB per process (74 MB were every
context as long as RAGTruth's longest)."""


@dataclass(frozen=True, eq=False)
class ContextTerms:
    """One context's TF-IDF row and its sentences' TF-IDF entries, term-major.

    Attributes
    ----------
    indices, data : ndarray
        The context's TF-IDF row (sorted column indices, values).
    terms : ndarray of int64
        Distinct columns present in any sentence, ascending.
    starts : ndarray of int64
        ``starts[k]:starts[k + 1]`` are the entries of ``terms[k]`` in `sentence`, `value`.
    sentence, value : ndarray
        Which sentence (0-based, in the context) holds the term, and its TF-IDF value there.
    sentences : int
        How many sentences the context has.
    """

    indices: np.ndarray
    data: np.ndarray
    terms: np.ndarray
    starts: np.ndarray
    sentence: np.ndarray
    value: np.ndarray
    sentences: int


def vocabulary_fingerprint(vectorizer) -> str:
    """sha256 of a fitted vectorizer's vocabulary, IDF and stop words: the key its kept
    vectors (and its `NgramIndex`) share with every copy of the same fitted model (an MLflow
    model loaded twice, a clone)."""
    digest = hashlib.sha256(np.ascontiguousarray(vectorizer.idf_).tobytes())
    for term, column in sorted(vectorizer.vocabulary_.items(), key=lambda item: item[1]):
        digest.update(f"{column}\x1f{term}\x1e".encode())
    for word in sorted(vectorizer.get_stop_words() or ()):
        digest.update(f"\x1d{word}".encode())
    return digest.hexdigest()


_KEPT: Kept[ContextTerms] = Kept(CONTEXTS_KEPT)
STOP = -2
"""`NgramIndex.lookup`'s value for a stop word (-1 is a word outside the vocabulary)."""


def context_terms(vectorizer, key: str, contexts: Sequence[str]) -> list[ContextTerms]:
    """The `ContextTerms` of each of `contexts` (one per entry, repeats shared).

    Contexts not kept yet are vectorised together from the tokens of their views
    (`runner.features.family.context_view`, which the lexical features share: a context
    is tokenised once), the whole context and each of its sentences, and kept under
    (`key`, text). Tokenising a context whole gives its sentences' tokens end to end
    (`runner.features.views.ContextView`), so these are the documents `transform` would
    tokenise.
    """

    def build(missing: list[tuple[str, str]]) -> list[ContextTerms]:
        views = [context_view(text) for _, text in missing]
        # A context's words are its sentences' end to end: look them up once for both.
        lengths = np.fromiter(
            chain.from_iterable(view.sentence_lengths for view in views), np.int64
        )
        tokens = chain.from_iterable(view.tokens for view in views)
        unigram, sizes = _kept_unigrams(vectorizer, key, tokens, lengths)
        bounds = np.cumsum([0] + [len(view.sentence_lengths) for view in views])
        ends = np.concatenate([[0], np.cumsum(sizes)])
        whole = _counted_rows(vectorizer, key, unigram, ends[bounds[1:]] - ends[bounds[:-1]])
        sentences = _counted_rows(vectorizer, key, unigram, sizes)
        return [
            _terms(whole, row, sentences, bounds[row], bounds[row + 1]) for row in range(len(views))
        ]

    found = _KEPT.many([(key, text) for text in contexts], build)
    return [found[(key, text)] for text in contexts]


def _terms(
    whole: sparse.csr_matrix, row: int, sentences: sparse.csr_matrix, first: int, last: int
) -> ContextTerms:
    """Context `row` of `whole`, with its sentences: rows `first` to `last` (excluded) of
    `sentences`, read from the CSR arrays (a scipy slice per context cost more than the
    rest of the context's terms)."""
    low, high = whole.indptr[row], whole.indptr[row + 1]
    begin, end = sentences.indptr[first], sentences.indptr[last]
    rows = np.repeat(
        np.arange(last - first, dtype=np.int64), np.diff(sentences.indptr[first : last + 1])
    )
    cols = sentences.indices[begin:end]
    order = np.lexsort((rows, cols))  # by term, then sentence
    columns = cols[order].astype(np.int64)
    terms, starts = np.unique(columns, return_index=True)
    return ContextTerms(
        indices=whole.indices[low:high].copy(),
        data=whole.data[low:high].copy(),
        terms=terms,
        starts=np.append(starts, columns.size).astype(np.int64),
        sentence=rows[order],
        value=sentences.data[begin:end][order].astype(np.float64),
        sentences=int(last - first),
    )


@dataclass(frozen=True, eq=False)
class NgramIndex:
    """A fitted vocabulary read as token ids: unigram columns by token, bigram columns by
    the pair of their tokens' unigram columns (``first * width + second``, sorted), and
    `lookup`: a token's unigram column, or `STOP` for the vectorizer's stop words."""

    unigrams: dict[str, int]
    pair_keys: np.ndarray
    pair_columns: np.ndarray
    width: int
    lookup: dict[str, int]

    @classmethod
    def of(cls, vocabulary: dict[str, int], stop_words: Iterable[str] = ()) -> NgramIndex:
        """Split every bigram of `vocabulary` into its two tokens (once per fitted model).

        A bigram's tokens are unigrams of the same vocabulary: both occurred, not as stop
        words, in the text the bigram came from, and ``min_df=1``.
        """
        unigrams = {term: column for term, column in vocabulary.items() if " " not in term}
        width = len(vocabulary)
        pairs = [
            (unigrams[first] * width + unigrams[second], column)
            for term, column in vocabulary.items()
            if " " in term
            for first, second in [term.split(" ")]
        ]
        keys = np.fromiter((k for k, _ in pairs), dtype=np.int64, count=len(pairs))
        columns = np.fromiter((c for _, c in pairs), dtype=np.int64, count=len(pairs))
        order = np.argsort(keys)
        lookup = {**unigrams, **dict.fromkeys(stop_words, STOP)}  # a stop word is dropped first
        return cls(unigrams, keys[order], columns[order], width, lookup)


_INDEXES: Kept[NgramIndex] = Kept(4)


def tfidf_rows(vectorizer, key: str, tokens: Sequence[list[str]]) -> sparse.csr_matrix:
    """``vectorizer.transform(texts)`` from the texts' `runner.text.tokenize` tokens.

    The vectorizer's tokenizer is `tokenize` (`runner.features.TfidfSupport`), so its
    analyzer is `tokenize`, then its stop-word filter, then unigrams and the bigrams of
    consecutive kept tokens (``_word_ngrams``). Here the kept tokens of the whole batch
    are looked up once, bigrams are found by their tokens' columns (`NgramIndex`), and the
    counts are gathered with array operations; the IDF and L2 steps are scikit-learn's own
    (``_tfidf.transform``). The matrix is the one `transform` returns, bit for bit
    (tests/features/test_ragscope_equality.py), without tokenising a text again or
    joining a string per bigram.
    """
    lengths = np.fromiter(map(len, tokens), np.int64, len(tokens))
    kept = _kept_unigrams(vectorizer, key, chain.from_iterable(tokens), lengths)
    return _counted_rows(vectorizer, key, *kept)


def _index(vectorizer, key: str) -> NgramIndex:
    return _INDEXES.get(
        key, lambda _: NgramIndex.of(vectorizer.vocabulary_, vectorizer.get_stop_words() or ())
    )


def _kept_unigrams(
    vectorizer, key: str, tokens: Iterable[str], lengths: np.ndarray
) -> tuple[np.ndarray, np.ndarray]:
    """Documents given end to end (`tokens`, `lengths` tokens each): their words that are
    not stop words, as unigram columns (-1: not in the vocabulary), and how many each
    document keeps. One lookup per token, in C."""
    lookup = _index(vectorizer, key).lookup
    ids = np.fromiter(map(lookup.get, tokens, repeat(-1)), np.int64, int(lengths.sum()))
    kept = ids != STOP
    counted = np.concatenate([[0], np.cumsum(kept)])
    ends = np.concatenate([[0], np.cumsum(lengths)])
    return ids[kept], counted[ends[1:]] - counted[ends[:-1]]


def _counted_rows(
    vectorizer, key: str, unigram: np.ndarray, sizes: np.ndarray
) -> sparse.csr_matrix:
    """The TF-IDF rows of documents given by `_kept_unigrams`: unigrams and the bigrams of
    consecutive kept words inside one document, counted, then scikit-learn's IDF and L2."""
    index = _index(vectorizer, key)
    n, width = len(sizes), index.width
    rows = np.repeat(np.arange(n, dtype=np.int64), sizes)
    pair = (rows[:-1] == rows[1:]) & (unigram[:-1] >= 0) & (unigram[1:] >= 0)
    pair_rows = rows[:-1][pair]
    pair_keys = unigram[:-1][pair] * width + unigram[1:][pair]
    found = np.minimum(np.searchsorted(index.pair_keys, pair_keys), index.pair_keys.size - 1)
    known = (
        index.pair_keys[found] == pair_keys if index.pair_keys.size else np.zeros(found.size, bool)
    )
    cells = np.concatenate(
        [
            rows[unigram >= 0] * width + unigram[unigram >= 0],
            pair_rows[known] * width + index.pair_columns[found[known]],
        ]
    )
    cells, counts = np.unique(cells, return_counts=True)  # sorted: by row, then column
    per_row = np.bincount(cells // width, minlength=n)
    counted = sparse.csr_matrix(
        (
            counts.astype(vectorizer.dtype),
            (cells % width).astype(np.int32),
            np.concatenate([[0], np.cumsum(per_row)]).astype(np.int32),
        ),
        shape=(n, width),
    )
    return vectorizer._tfidf.transform(counted, copy=False).tocsr()


def context_matrix(entries: Sequence[ContextTerms], width: int) -> sparse.csr_matrix:
    """Each row's context vector, stacked: ``transform(contexts)[rows]``, one row per entry."""
    if not entries:
        return sparse.csr_matrix((0, width))
    sizes = np.fromiter((e.indices.size for e in entries), dtype=np.int64, count=len(entries))
    return sparse.csr_matrix(
        (
            np.concatenate([e.data for e in entries]),
            np.concatenate([e.indices for e in entries]),
            np.concatenate([[0], np.cumsum(sizes)]),
        ),
        shape=(len(entries), width),
    )


def best_sentence_cosine(answers: sparse.csr_matrix, entries: Sequence[ContextTerms]) -> np.ndarray:
    """Per row, the largest dot product of its answer with a sentence of its context.

    Equal bit for bit to scipy's ``(answer @ sentences.T).max()``: for each (answer,
    sentence) pair the products of shared terms are added one by one in the answer's
    ascending column order, starting at 0, as ``csr_matmat`` adds them (``np.add.at``
    adds in array order, and the products are laid out row by row, term by term). A pair
    sharing no term is 0, as the sparse maximum counts unstored entries; a context with no
    sentence gives 0. One pass of array operations over the whole batch, whatever the
    number of distinct contexts.
    """
    n = answers.shape[0]
    best = np.zeros(n, dtype=np.float64)
    sentences = np.fromiter((e.sentences for e in entries), dtype=np.int64, count=n)
    if n == 0 or not sentences.any():
        return best
    slots: dict[int, int] = {}
    slot = np.fromiter((slots.setdefault(id(e), len(slots)) for e in entries), np.int64, n)
    distinct = list({id(e): e for e in entries}.values())
    answers.sort_indices()  # a no-op for `tfidf_rows`'s output, which is sorted
    # Every (context, term) of the batch as one sorted key, with its entries' span.
    width = np.int64(answers.shape[1])
    if not any(e.terms.size for e in distinct):
        return best
    offsets = np.cumsum([0] + [e.value.size for e in distinct])
    keys = np.concatenate([k * width + e.terms for k, e in enumerate(distinct)])
    low = np.concatenate([offsets[k] + e.starts[:-1] for k, e in enumerate(distinct)])
    high = np.concatenate([offsets[k] + e.starts[1:] for k, e in enumerate(distinct)])
    sentence = np.concatenate([e.sentence for e in distinct])
    value = np.concatenate([e.value for e in distinct])
    # Each stored answer entry, in CSR order, looked up among its context's terms.
    rows = np.repeat(np.arange(n), np.diff(answers.indptr))
    query = slot[rows] * width + answers.indices
    at = np.minimum(np.searchsorted(keys, query), keys.size - 1)
    hit = keys[at] == query
    at, rows, weight = at[hit], rows[hit], answers.data[hit]
    spans = high[at] - low[at]
    before = np.cumsum(spans) - spans
    entry = np.repeat(low[at] - before, spans) + np.arange(spans.sum())
    first_pair = np.cumsum(sentences) - sentences  # row i's pairs start here
    pair = np.repeat(first_pair[rows], spans) + sentence[entry]
    sums = np.zeros(int(sentences.sum()), dtype=np.float64)
    np.add.at(sums, pair, np.repeat(weight, spans) * value[entry])
    has = sentences > 0
    best[has] = np.maximum.reduceat(sums, first_pair[has])
    return best
