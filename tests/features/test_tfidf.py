"""TfidfSupport: fitted on training texts only, vectorised sentence matching."""

import numpy as np
import pandas as pd
import pytest
from sklearn.base import clone
from sklearn.exceptions import NotFittedError
from sklearn.feature_extraction.text import ENGLISH_STOP_WORDS
from sklearn.metrics.pairwise import cosine_similarity

from runner.features import TFIDF_FEATURE_NAMES, TfidfSupport
from runner.text import split_sentences


def frame(contexts, answers):
    return pd.DataFrame({"context": contexts, "answer": answers})


TRAIN = frame(
    [
        "Cats purr softly. Dogs bark loudly.",
        "Cats purr softly. Dogs bark loudly.",
        "The river floods every spring.",
    ],
    ["Cats purr.", "Dogs meow.", "The river floods."],
)


def test_vocabulary_comes_from_training_texts_only():
    support = TfidfSupport().fit(TRAIN)
    vocabulary = support.vectorizer_.vocabulary_
    assert "cats purr" in vocabulary and "purr" in vocabulary  # unigrams and bigrams
    assert not ENGLISH_STOP_WORDS & set(vocabulary)
    test = frame(["Zebras graze."], ["Zebras graze."])
    # Nothing of the test texts is in the training vocabulary: cosine 0, risk 1.
    assert support.transform(test).tolist() == [[1.0, 1.0]]


def test_identical_answer_and_context_have_zero_risk():
    support = TfidfSupport().fit(TRAIN)
    out = support.transform(frame(["Cats purr softly."], ["Cats purr softly."]))
    assert out == pytest.approx(np.zeros((1, 2)), abs=1e-12)


def test_best_sentence_beats_whole_context():
    support = TfidfSupport().fit(TRAIN)
    out = support.transform(frame(["Cats purr softly. Dogs bark loudly."], ["Dogs bark loudly."]))
    whole, best_sentence = out[0]
    assert best_sentence == pytest.approx(0.0, abs=1e-12)
    assert 0.0 < whole < 1.0


def test_matches_naive_pairwise_cosine():
    rng = np.random.default_rng(0)
    words = ["cats", "purr", "dogs", "bark", "river", "floods", "spring", "softly", "loudly"]

    def sentence():
        return " ".join(rng.choice(words, size=rng.integers(1, 5)))

    contexts = [". ".join(sentence() for _ in range(rng.integers(1, 5))) for _ in range(6)]
    rows = frame([contexts[i % 6] for i in range(20)], [sentence() for _ in range(20)])
    support = TfidfSupport().fit(rows)
    out = support.transform(rows)
    vectorizer = support.vectorizer_
    for i, (context, answer) in enumerate(zip(rows["context"], rows["answer"], strict=True)):
        a = vectorizer.transform([answer])
        whole = cosine_similarity(a, vectorizer.transform([context]))[0, 0]
        best = cosine_similarity(a, vectorizer.transform(split_sentences(context))).max()
        assert out[i] == pytest.approx([1 - whole, 1 - best])


def test_empty_texts_fail_closed():
    support = TfidfSupport().fit(TRAIN)
    out = support.transform(frame(["", "Cats purr."], ["Cats purr.", ""]))
    assert out.tolist() == [[1.0, 1.0], [1.0, 1.0]]


def test_contexts_are_deduplicated_for_fitting():
    dedup = TfidfSupport().fit(TRAIN).vectorizer_
    every_row = TfidfSupport(dedupe_contexts=False).fit(TRAIN).vectorizer_
    purr = dedup.vocabulary_["purr"]
    # purr is in 1 of 3 distinct contexts + 1 answer (5 docs) vs 2 of 3 rows + 1 answer (6)
    assert dedup.idf_[purr] == pytest.approx(np.log(6 / 3) + 1)
    assert every_row.idf_[every_row.vocabulary_["purr"]] == pytest.approx(np.log(7 / 4) + 1)


def test_feature_subset_and_names():
    support = TfidfSupport(features=["max_sentence_tfidf_risk"]).fit(TRAIN)
    assert support.get_feature_names_out().tolist() == ["max_sentence_tfidf_risk"]
    both = TfidfSupport().fit(TRAIN)
    assert both.get_feature_names_out().tolist() == list(TFIDF_FEATURE_NAMES)
    assert support.transform(TRAIN)[:, 0].tolist() == both.transform(TRAIN)[:, 1].tolist()


def test_bad_feature_names_are_rejected():
    with pytest.raises(ValueError, match="features"):
        TfidfSupport(features=["cosine"]).fit(TRAIN)


def test_unfitted_transform_raises_and_clone_is_unfitted():
    with pytest.raises(NotFittedError):
        TfidfSupport().transform(TRAIN)
    fitted = TfidfSupport().fit(TRAIN)
    assert not hasattr(clone(fitted), "vectorizer_")


def test_missing_or_bad_text_is_named():
    with pytest.raises(ValueError, match="context"):
        TfidfSupport().fit(TRAIN.drop(columns="context"))
    bad = TRAIN.astype(object)
    bad.loc[1, "answer"] = None
    with pytest.raises(ValueError, match=r"row 1, field 'answer'"):
        TfidfSupport().fit(bad)
