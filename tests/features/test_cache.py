"""The on-disk feature cache: keyed by texts, feature names and FEATURE_VERSION."""

import pandas as pd
import pytest

from runner.features import cache, family, lexical_features


@pytest.fixture
def frame():
    return pd.DataFrame(
        {
            "question": ["q1", "q2"],
            "context": ["Cats purr. Dogs bark.", "Cats purr. Dogs bark."],
            "answer": ["Cats purr loudly.", "Birds sing."],
        },
        index=[10, 20],
    )


def test_second_call_reads_the_cache(frame, tmp_path, monkeypatch):
    first = lexical_features(frame, cache_dir=tmp_path)
    assert len(list(tmp_path.glob("lexical-*.parquet"))) == 1

    def fail(*args, **kwargs):
        raise AssertionError("recomputed instead of reading the cache")

    monkeypatch.setattr(family, "compute", fail)
    second = lexical_features(frame.set_axis(["a", "b"]), cache_dir=tmp_path)
    assert list(second.index) == ["a", "b"]
    assert second.to_numpy().tolist() == first.to_numpy().tolist()


def test_key_changes_with_texts_names_and_version(frame):
    rows = list(zip(frame["question"], frame["context"], frame["answer"], strict=True))
    key = cache.fingerprint("v1", ["coverage"], rows)
    changed = [rows[0], (rows[1][0], rows[1][1], rows[1][2] + " ")]
    assert cache.fingerprint("v1", ["coverage"], changed) != key
    assert cache.fingerprint("v2", ["coverage"], rows) != key
    assert cache.fingerprint("v1", ["rouge_l_risk"], rows) != key
    assert cache.fingerprint("v1", ["coverage"], rows[::-1]) != key
    assert cache.fingerprint("v1", ["coverage"], rows) == key


def test_fingerprint_is_not_fooled_by_shifting_text_between_fields():
    assert cache.fingerprint("v", ["f"], [("ab", "c")]) != cache.fingerprint(
        "v", ["f"], [("a", "bc")]
    )


def test_version_bump_invalidates(frame, tmp_path, monkeypatch):
    lexical_features(frame, cache_dir=tmp_path)
    monkeypatch.setattr(family, "FEATURE_VERSION", "lexical-test-bump")
    lexical_features(frame, cache_dir=tmp_path)
    assert len(list(tmp_path.glob("lexical-*.parquet"))) == 2


def test_corrupt_cache_file_is_an_error(frame, tmp_path):
    lexical_features(frame, cache_dir=tmp_path)
    (path,) = tmp_path.glob("lexical-*.parquet")
    path.write_bytes(b"not parquet")
    with pytest.raises(ValueError, match="unreadable"):
        lexical_features(frame, cache_dir=tmp_path)


def test_cache_with_wrong_shape_is_an_error(frame, tmp_path):
    lexical_features(frame, cache_dir=tmp_path)
    (path,) = tmp_path.glob("lexical-*.parquet")
    pd.DataFrame({"coverage": [1.0]}).to_parquet(path)
    with pytest.raises(ValueError, match="expected"):
        lexical_features(frame, cache_dir=tmp_path)


def test_no_temporary_files_left(frame, tmp_path):
    lexical_features(frame, cache_dir=tmp_path / "nested")
    assert [p.name.startswith("lexical-") for p in (tmp_path / "nested").iterdir()] == [True]
