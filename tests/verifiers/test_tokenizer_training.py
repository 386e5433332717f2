"""Stand-in tokenizers: trained once per corpus and spec, cached by fingerprint."""

import json

import pytest
from tests.verifiers.conftest import SPECS, corpus

from runner.errors import DataNotFoundError
from runner.verifiers import tokenizer_training as tt


def _file(tmp_path, texts, name="corpus.txt"):
    path = tmp_path / name
    path.write_text("\n".join(texts))
    return str(path)


def test_trained_once_then_loaded_from_the_cache(tmp_path, monkeypatch):
    path = _file(tmp_path, corpus())
    tok, meta = tt.cached_tokenizer("toy", SPECS["unigram_pair"], path, cache_root=tmp_path)
    folder = tmp_path / f"toy-{meta['fingerprint'][:16]}"
    assert json.loads((folder / "meta.json").read_text()) == meta

    def boom(*args, **kwargs):
        raise AssertionError("retrained although cached")

    monkeypatch.setattr(tt, "train_tokenizer", boom)
    again, meta2 = tt.cached_tokenizer("toy", SPECS["unigram_pair"], path, cache_root=tmp_path)
    assert meta2 == meta
    assert again("the mayor said")["input_ids"] == tok("the mayor said")["input_ids"]


def test_fingerprint_follows_corpus_and_settings(tmp_path):
    a = tt.cached_tokenizer(
        "toy", SPECS["bpe_pair"], _file(tmp_path, corpus()), cache_root=tmp_path
    )[1]
    b = tt.cached_tokenizer(
        "toy", SPECS["bpe_pair"], _file(tmp_path, corpus(250), "b.txt"), cache_root=tmp_path
    )[1]
    c = tt.cached_tokenizer(
        "toy",
        {**SPECS["bpe_pair"], "vocab_size": 300},
        _file(tmp_path, corpus()),
        cache_root=tmp_path,
    )[1]
    assert len({a["fingerprint"], b["fingerprint"], c["fingerprint"]}) == 3


def test_vocabulary_is_capped_by_the_corpus_and_recorded(tmp_path):
    spec = {**SPECS["unigram_pair"], "vocab_size": 100_000}
    meta = tt.cached_tokenizer("toy", spec, _file(tmp_path, corpus(50)), cache_root=tmp_path)[1]
    assert meta["vocab_size_requested"] == 100_000
    assert meta["vocab_size_reached"] < 100_000


def test_special_tokens_and_templates(tmp_path):
    tok = tt.train_tokenizer(corpus(), SPECS["unigram_pair"])
    assert (tok.pad_token_id, tok.cls_token_id, tok.sep_token_id) == (0, 1, 2)
    ids = tok("the mayor", "the city")["input_ids"]
    assert ids[0] == 1 and ids[-1] == 2 and ids.count(2) == 2
    t5 = tt.train_tokenizer(corpus(), SPECS["t5"])
    assert t5("<pad> the mayor")["input_ids"][0] == t5.pad_token_id
    assert t5("the mayor")["input_ids"][-1] == t5.eos_token_id


def test_missing_corpus_says_how_to_fix_it(tmp_path, monkeypatch):
    monkeypatch.delenv("RUNNER_DATA_DIR", raising=False)
    with pytest.raises(DataNotFoundError, match="RUNNER_DATA_DIR"):
        tt.resolve_corpus(str(tmp_path / "none.parquet"))
