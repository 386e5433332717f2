"""The runtime record: end-to-end ms/example, memory, sizes and truncation."""

import numpy as np
import pandas as pd
import pytest
from tests.verifiers.conftest import make_frame

from runner.verifiers import DebertaNLIVerifier, measure_verifier
from runner.verifiers.runtime import (
    peak_rss_mb,
    reset_peak_rss,
    score_in_chunks,
    timing_sample,
)


def test_runtime_record_holds_what_identifies_the_cost(tiny_deberta, frame):
    verifier = DebertaNLIVerifier(model=str(tiny_deberta), max_length=48, threads=1)
    info = measure_verifier(verifier, frame, repeats=2, warmup=1)
    assert info["ms_per_example"] > 0
    assert info["timing"]["repeats"] == 2 and len(info["timing"]["runs_ms_per_example"]) == 2
    assert info["n_timed_examples"] == len(frame)
    assert info["peak_rss_mb"] > 0 and info["peak_rss_scope"] in ("since_reset", "process")
    assert info["mean_tokens_per_example"] <= 48
    assert info["truncation"]["n_truncated"] > 0
    for key in (
        "model",
        "revision",
        "n_parameters",
        "device",
        "threads",
        "batch_size",
        "dtype",
        "quantize",
        "precision",
        "evidence",
        "top_k",
        "max_length",
    ):
        assert key in info
    assert (info["threads"], info["precision"], info["top_k"]) == (1, "fp32", 3)


def test_peak_rss_reset_reports_its_scope():
    reset = reset_peak_rss()
    value, scope = peak_rss_mb(reset)
    assert value > 0
    assert scope == ("since_reset" if reset else "process")


def test_timing_sample_is_seeded_and_balanced_over_tasks():
    frame = pd.concat(
        [
            make_frame(30).assign(task=t, example_id=lambda f, t=t: t + f.example_id)
            for t in ("QA", "Summary", "Data2txt")
        ],
        ignore_index=True,
    )
    a = timing_sample(frame, 10, seed=13)
    assert a.equals(timing_sample(frame, 10, seed=13))
    assert sorted(a["task"].value_counts().tolist()) == [3, 3, 4]
    assert not a.equals(timing_sample(frame, 10, seed=14))


def test_scoring_in_chunks_changes_neither_scores_nor_truncation(tiny_deberta, frame):
    verifier = DebertaNLIVerifier(model=str(tiny_deberta), max_length=48, threads=1)
    whole = verifier.score(frame)
    stats = verifier.last_truncation_
    risk, merged = score_in_chunks(verifier, frame, chunk=3)
    np.testing.assert_allclose(risk, whole, atol=1e-6)
    assert (merged.n_examples, merged.n_truncated, merged.tokens_cut) == (
        stats.n_examples,
        stats.n_truncated,
        stats.tokens_cut,
    )
    assert merged.max_tokens_cut == stats.max_tokens_cut
    assert merged.mean_tokens == pytest.approx(stats.mean_tokens)
