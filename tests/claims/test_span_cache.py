"""S1's score cache: a hit returns exactly what computing returns; anything that changes the
computation misses; a damaged record is an error naming its file."""

from __future__ import annotations

import json

import numpy as np
import pytest
from tests.claims.judges.conftest import tiny_models

from runner.claims.keyed_files import CacheError
from runner.claims.span_cache import SpanScoreCache
from runner.claims.span_detector import SpanDetector

TEXTS = [
    "The Eiffel Tower is in Paris.",
    "Paris is the capital of France.",
    "The tower opened in 1889.",
] * 4
ARGS = (
    ["", "Where?", ""],
    ["The tower is in Paris.", "It opened in 1889.", "France has a capital."],
    [
        ["The Eiffel Tower is in Paris."],
        ["The tower opened in 1889.", "Paris."],
        ["Paris is the capital of France."],
    ],
)


@pytest.fixture(scope="module")
def tokenizer_dir(tmp_path_factory):
    folder = tmp_path_factory.mktemp("span_cache")
    tiny_models().tiny_lettucedetect(folder, TEXTS)  # trains the stand-in tokenizer once
    return folder


def fresh_detector(folder, **verifier_settings):
    """A new detector and verifier, built as a new run builds them."""
    verifier = tiny_models().tiny_lettucedetect(folder, TEXTS)
    for key, value in verifier_settings.items():
        setattr(verifier, key, value)
    return SpanDetector(verifier, batch_size=2)


def test_a_second_run_reads_the_same_probabilities_back(tokenizer_dir, tmp_path):
    cache = SpanScoreCache(tmp_path / "cache")
    computed = fresh_detector(tokenizer_dir).score(*ARGS, cache=cache)
    read = fresh_detector(tokenizer_dir).score(*ARGS, cache=cache)
    assert not computed.cached and read.cached
    assert read.computed_seconds == pytest.approx(computed.computed_seconds, abs=1e-3)
    assert np.array_equal(read.max_prob, computed.max_prob)  # bit for bit
    for t in computed.shares:
        assert np.array_equal(read.shares[t], computed.shares[t])
    assert read.spans == computed.spans
    assert len(list((tmp_path / "cache").rglob("*.json"))) == 1  # one record per call


def test_cached_and_uncached_runs_give_identical_scores(tokenizer_dir, tmp_path):
    plain = fresh_detector(tokenizer_dir).score(*ARGS)
    cache = SpanScoreCache(tmp_path / "cache")
    fresh_detector(tokenizer_dir).score(*ARGS, cache=cache)
    read = fresh_detector(tokenizer_dir).score(*ARGS, cache=cache)
    assert read.cached
    assert np.array_equal(read.max_prob, plain.max_prob)


def test_the_label_threshold_does_not_reach_the_key(tokenizer_dir, tmp_path):
    cache = SpanScoreCache(tmp_path / "cache")
    first = fresh_detector(tokenizer_dir).score(*ARGS, cache=cache)
    d = fresh_detector(tokenizer_dir, threshold=0.7)
    d.threshold, d.sweep = 0.7, (*d.sweep, 0.7)
    again = d.score(*ARGS, cache=cache)
    assert again.cached
    assert np.array_equal(again.max_prob, first.max_prob)


@pytest.mark.parametrize(
    "change",
    ["claim", "passages", "order", "max_length", "seed", "batch_size"],
)
def test_anything_that_changes_the_computation_misses(tokenizer_dir, tmp_path, change):
    cache = SpanScoreCache(tmp_path / "cache")
    fresh_detector(tokenizer_dir).score(*ARGS, cache=cache)
    questions, claims, passages = (list(a) for a in ARGS)
    settings = {}
    d_batch = 2
    if change == "claim":
        claims[0] = "The tower is in Lyon."
    elif change == "passages":
        passages[2] = ["France's capital is Paris."]
    elif change == "order":
        questions, claims, passages = questions[::-1], claims[::-1], passages[::-1]
    elif change == "max_length":
        settings["max_length"] = 128
    elif change == "seed":
        settings["seed"] = 14  # other random weights: the weights hash differs
    else:
        d_batch = 3  # other batch neighbours, other float rounding
    d = fresh_detector(tokenizer_dir, **settings)
    d.batch_size = d_batch
    got = d.score(questions, claims, passages, cache=cache)
    assert not got.cached
    assert len(list((tmp_path / "cache").rglob("*.json"))) == 2


def test_a_damaged_record_is_an_error_naming_its_file(tokenizer_dir, tmp_path):
    cache = SpanScoreCache(tmp_path / "cache")
    fresh_detector(tokenizer_dir).score(*ARGS, cache=cache)
    (path,) = (tmp_path / "cache").rglob("*.json")
    record = json.loads(path.read_text())
    record["scores"][0]["probs"] = record["scores"][0]["probs"][:-1]  # one probability lost
    path.write_text(json.dumps(record))
    with pytest.raises(CacheError, match=str(path)):
        fresh_detector(tokenizer_dir).score(*ARGS, cache=cache)
    path.write_text("{not json")
    with pytest.raises(CacheError, match="unreadable"):
        fresh_detector(tokenizer_dir).score(*ARGS, cache=cache)


def test_a_verifier_without_a_fingerprint_is_never_cached(tmp_path):
    from tests.claims.test_span_detector import PROBS, FixedScores

    cache = SpanScoreCache(tmp_path / "cache")
    d = SpanDetector(FixedScores(PROBS * 2))
    args = ([""] * 4, ["a b c d"] * 4, [["p"]] * 4)
    assert not d.score(*args, cache=cache).cached
    assert not d.score(*args, cache=cache).cached
    assert not (tmp_path / "cache").exists()
