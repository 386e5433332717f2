"""tfidf_vectors: the batch's TF-IDF numbers are scikit-learn's and scipy's, bit for bit."""

import numpy as np
import pandas as pd
import scipy.sparse as sp

from runner.features import TfidfSupport
from runner.features import tfidf_vectors as vectors
from runner.text import split_sentences, tokenize

CONTEXTS = [
    "Cats purr softly. Dogs bark loudly; birds sing at dawn.",
    "The river floods every spring. Farmers move their cattle uphill.",
    "...",  # no sentence
    "Zebras graze. Unknown words only here.",
]
ANSWERS = ["Cats purr and dogs bark.", "The river floods in spring.", "Nothing.", "Zebras sing."]


def _support() -> TfidfSupport:
    frame = pd.DataFrame({"context": CONTEXTS[:2] * 2, "answer": ANSWERS[:2] + ANSWERS[:2]})
    return TfidfSupport().fit(frame)


def test_rows_from_tokens_are_what_transform_gives():
    vectorizer = _support().vectorizer_
    texts = [*CONTEXTS, *ANSWERS, ""]
    ours = vectors.tfidf_rows(vectorizer, "k", [tokenize(t) for t in texts])
    theirs = vectorizer.transform(texts).tocsr()
    assert (ours != theirs).nnz == 0
    assert np.array_equal(ours.indptr, theirs.indptr)
    assert np.array_equal(ours.indices, theirs.indices)
    assert np.array_equal(ours.data.view(np.uint64), theirs.data.view(np.uint64))


def test_best_sentence_cosine_is_scipys_product_maximum():
    vectorizer = _support().vectorizer_
    vectors._KEPT.clear()
    rows = [0, 1, 2, 3, 0, 1]  # contexts repeat across rows
    entries = vectors.context_terms(vectorizer, "k", [CONTEXTS[r] for r in rows])
    answers = vectorizer.transform([ANSWERS[r] for r in rows]).tocsr()
    expected = []
    for i, r in enumerate(rows):
        pieces = split_sentences(CONTEXTS[r])
        if not pieces:
            expected.append(0.0)
            continue
        sentences = vectorizer.transform(pieces).tocsr()
        expected.append(float((answers[i] @ sentences.T).max()))
    got = vectors.best_sentence_cosine(answers, entries)
    assert np.array_equal(got.view(np.uint64), np.asarray(expected).view(np.uint64))
    assert got[2] == 0.0  # a context with no sentence
    assert entries[0] is entries[4]  # one kept entry per distinct context


def test_no_row_and_no_shared_term_give_zero():
    vectorizer = _support().vectorizer_
    empty = sp.csr_matrix((0, len(vectorizer.vocabulary_)))
    assert vectors.best_sentence_cosine(empty, []).shape == (0,)
    entries = vectors.context_terms(vectorizer, "k", ["Zebras graze."])
    nothing = vectorizer.transform(["Unrelated."]).tocsr()
    assert vectors.best_sentence_cosine(nothing, entries).tolist() == [0.0]


def test_the_key_of_kept_vectors_names_the_stop_words_too():
    """Kept vectors and the word lookup drop the vectorizer's stop words: a vectorizer with
    the same vocabulary and IDF but other stop words must not share them."""
    import copy

    vectorizer = _support().vectorizer_
    other = copy.deepcopy(vectorizer).set_params(stop_words=["cats"])
    key = vectors.vocabulary_fingerprint(vectorizer)
    assert vectors.vocabulary_fingerprint(copy.deepcopy(vectorizer)) == key
    assert vectors.vocabulary_fingerprint(other) != key
