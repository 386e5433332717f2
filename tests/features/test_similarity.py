"""Sentence-similarity features: best-evidence cosines of a frozen encoder, cached per
(encoder, sentence), deterministic, failing closed on empty texts and loudly on bad input."""

from __future__ import annotations

import shutil

import numpy as np
import pandas as pd
import pytest
from tests.features.conftest import build_tiny_encoder

from runner.errors import ConfigError
from runner.features import (
    ENCODER_PACKAGES,
    SIMILARITY_FEATURE_NAMES,
    SIMILARITY_THRESHOLDS,
    SentenceEncoder,
    SentenceVectors,
    sentence_vectors,
    similarity_features,
)


def frame(rows: list[tuple[str, str]]) -> pd.DataFrame:
    return pd.DataFrame(
        rows, columns=["context", "answer"], index=[f"r{i}" for i in range(len(rows))]
    )


CONTEXT = "The sky is blue. Cats bark. The river flows north."


def test_names_follow_the_thresholds():
    assert SIMILARITY_FEATURE_NAMES == (
        "evidence_cosine_min",
        "evidence_cosine_mean",
        *(f"unsupported_share_{round(t * 100):03d}" for t in SIMILARITY_THRESHOLDS),
        "answer_sentences",
    )


def test_a_sentence_found_in_the_context_has_cosine_one(tiny_encoder):
    got = similarity_features(frame([(CONTEXT, "Cats bark.")]), tiny_encoder)
    assert list(got.columns) == list(SIMILARITY_FEATURE_NAMES)
    assert got.index.tolist() == ["r0"]
    row = got.iloc[0]
    assert row["evidence_cosine_min"] == pytest.approx(1.0, abs=1e-5)
    assert row["evidence_cosine_mean"] == pytest.approx(1.0, abs=1e-5)
    assert row["unsupported_share_075"] == 0.0
    assert row["answer_sentences"] == 1.0


def test_features_are_the_best_cosine_per_answer_sentence(tiny_encoder):
    """By hand: encode the sentences directly and take max cosine per answer sentence."""
    answer = "The sky is blue. Dogs sleep in the city."
    got = similarity_features(frame([(CONTEXT, answer)]), tiny_encoder).iloc[0]
    encoder = SentenceEncoder(tiny_encoder)
    context = encoder.encode(["The sky is blue", "Cats bark", "The river flows north"])
    answers = encoder.encode(["The sky is blue", "Dogs sleep in the city"])
    assert np.allclose(np.linalg.norm(answers, axis=1), 1.0, atol=1e-6)
    best = (answers @ context.T).max(axis=1)
    assert best[0] == pytest.approx(1.0, abs=1e-5)
    assert got["evidence_cosine_min"] == pytest.approx(best.min(), abs=1e-5)
    assert got["evidence_cosine_mean"] == pytest.approx(best.mean(), abs=1e-5)
    for t in SIMILARITY_THRESHOLDS:
        assert got[f"unsupported_share_{round(t * 100):03d}"] == np.mean(best < t)
    assert got["answer_sentences"] == 2.0


def test_empty_texts_fail_closed(tiny_encoder):
    got = similarity_features(frame([(CONTEXT, "  "), ("", "Cats bark.")]), tiny_encoder)
    no_answer, no_context = got.iloc[0], got.iloc[1]
    assert no_answer.tolist() == [0.0, 0.0, *(1.0 for _ in SIMILARITY_THRESHOLDS), 0.0]
    assert no_context.tolist() == [0.0, 0.0, *(1.0 for _ in SIMILARITY_THRESHOLDS), 1.0]


def test_a_second_call_encodes_nothing_new_and_a_new_process_reads_the_disk(tiny_encoder, tmp_path):
    rows = frame([(CONTEXT, "Cats bark. Dogs sleep."), (CONTEXT, "The sky is blue.")])
    store = sentence_vectors(tiny_encoder, tmp_path)
    before = store.encoded
    first = similarity_features(rows, tiny_encoder, tmp_path)
    distinct = 4  # three context sentences and "Dogs sleep" (the other answers repeat)
    assert store.encoded - before == distinct
    second = similarity_features(rows, tiny_encoder, tmp_path)
    assert store.encoded - before == distinct  # nothing encoded again
    pd.testing.assert_frame_equal(first, second)
    files = list((tmp_path / "sentence_vectors").glob("*.sqlite"))
    assert [f.stem for f in files] == [store.encoder.key]
    # A fresh store (as in a new process) reads every vector from the file, encodes none.
    fresh = SentenceVectors(SentenceEncoder(tiny_encoder), files[0])
    vectors = fresh.get(["Cats bark", "Dogs sleep", "The sky is blue"])
    assert (fresh.encoded, fresh.hits) == (0, 3)
    assert np.array_equal(vectors["Cats bark"], store.get(["Cats bark"])["Cats bark"])


def test_the_cache_key_is_the_files_bytes(tiny_encoder, tmp_path):
    copy = tmp_path / "copy"
    shutil.copytree(tiny_encoder, copy)
    assert SentenceEncoder(str(copy)).key == SentenceEncoder(tiny_encoder).key
    other = build_tiny_encoder(tmp_path / "other", seed=1)  # other weights, same names
    assert SentenceEncoder(str(other)).key != SentenceEncoder(tiny_encoder).key


def test_deterministic_across_fresh_encoders(tiny_encoder):
    texts = ["The sky is blue", "Cats bark loudly in the city", "12 million"]
    first = SentenceEncoder(tiny_encoder).encode(texts)
    second = SentenceEncoder(tiny_encoder).encode(texts)
    assert first.dtype == np.float32
    assert first.tobytes() == second.tobytes()


def test_a_vector_does_not_depend_on_its_neighbours(tiny_encoder):
    """What the per-sentence cache relies on: a hit returns exactly what encoding would."""
    encoder = SentenceEncoder(tiny_encoder, batch_size=2)
    texts = ["The sky is blue", "Cats bark", "Dogs sleep", "The river flows north", "12"]
    together = encoder.encode(texts)
    for i, text in enumerate(texts):
        assert encoder.encode([text])[0].tobytes() == together[i].tobytes()
    assert encoder.encode(texts[::-1])[::-1].tobytes() == together.tobytes()


def test_a_missing_package_is_one_clear_line(monkeypatch):
    monkeypatch.setitem(ENCODER_PACKAGES, "ghost", "no_such_encoder_package")
    with pytest.raises(ConfigError) as caught:
        SentenceEncoder("ghost")
    message = str(caught.value)
    assert "\n" not in message
    assert "no-such-encoder-package, which is not installed" in message


def test_a_missing_folder_is_a_config_error(tmp_path):
    with pytest.raises(ConfigError, match="no model folder there"):
        SentenceEncoder(str(tmp_path / "absent"))


def test_a_non_string_text_names_the_row(tiny_encoder):
    rows = frame([(CONTEXT, "Cats bark.")])
    rows.loc["r0", "answer"] = None
    with pytest.raises(ValueError, match="row 'r0', field 'answer'"):
        similarity_features(rows, tiny_encoder)
