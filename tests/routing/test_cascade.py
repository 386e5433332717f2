"""The verifier cascade's rules (`runner.routing.cascade`), and a saved BERT detector in it.

Which rows reach the verifier, the decision at the verifier threshold, where the threshold
comes from, and the cascade's ranking; then a tiny random BERT token classifier saved with
``save_pretrained`` loads through the LettuceDetect verifier (as a trained detector folder
does) and scores exactly the verify band of real RAGTruth rows.
"""

from __future__ import annotations

import numpy as np
import pandas as pd
import pytest
from tests.routing.detector import ragtruth_file, save_tiny_detector

from runner.errors import ConfigError
from runner.routing.cascade import (
    cascade_risk,
    final_decisions,
    score_band,
    verifier_threshold,
)
from runner.verifiers import LettuceDetectVerifier


class SpyVerifier:
    """Risk = the answer's length / 100; records every frame it is asked to score."""

    def __init__(self, threshold: float | None = None) -> None:
        if threshold is not None:
            self.threshold = threshold
        self.seen: list[list[str]] = []
        self.loads = 0

    def load(self) -> None:
        self.loads += 1

    def score(self, frame: pd.DataFrame) -> np.ndarray:
        self.seen.append(frame["example_id"].tolist())
        return frame["answer"].str.len().to_numpy(float) / 100


def frame_of(n: int) -> pd.DataFrame:
    return pd.DataFrame(
        {
            "example_id": [f"e{i}" for i in range(n)],
            "question": ["q"] * n,
            "context": ["c"] * n,
            "answer": ["x" * (10 * (i + 1)) for i in range(n)],
        }
    )


def test_only_the_band_reaches_the_verifier_and_its_risk_lands_on_those_rows():
    frame = frame_of(6)
    band = np.array([False, True, False, True, True, False])
    spy = SpyVerifier()
    got = score_band(spy, frame, band)
    assert spy.seen == [["e1", "e3", "e4"]] and spy.loads == 1
    assert got.rows_sent == 3 and got.ms_per_row >= 0.0
    np.testing.assert_array_equal(got.risk[band], [0.2, 0.4, 0.5])
    assert np.isnan(got.risk[~band]).all()


def test_an_empty_band_sends_nothing():
    spy = SpyVerifier()
    got = score_band(spy, frame_of(3), np.zeros(3, dtype=bool))
    assert spy.seen == [] and spy.loads == 0 and got.rows_sent == 0
    assert np.isnan(got.risk).all()


def test_the_verifier_decides_verified_rows_at_its_threshold_and_keeps_the_rest():
    decision = np.array(["accept", "verify", "verify", "verify", "review"], dtype=object)
    risk = np.array([np.nan, 0.49, 0.5, 0.9, np.nan])
    final = final_decisions(decision, risk, 0.5)
    assert final.tolist() == ["accept", "accept", "review", "review", "review"]
    assert decision.tolist()[1] == "verify"  # the gate's decision is not modified


def test_the_threshold_is_the_setting_else_the_verifiers_own_else_a_config_error():
    assert verifier_threshold(SpyVerifier(threshold=0.3), None, "v") == 0.3
    assert verifier_threshold(SpyVerifier(threshold=0.3), 0.7, "v") == 0.7
    assert verifier_threshold(SpyVerifier(), 0.2, "v") == 0.2
    with pytest.raises(ConfigError, match=r"routing\.verifier_threshold"):
        verifier_threshold(SpyVerifier(), None, "v")
    with pytest.raises(ConfigError, match="a number"):
        verifier_threshold(SpyVerifier(), float("nan"), "v")
    # a calibrated cascade whose verifier accepts nothing: every verified row is reviewed
    assert verifier_threshold(SpyVerifier(), float("-inf"), "v") == float("-inf")


def test_the_cascade_ranks_bands_first_and_each_band_by_its_own_scorer():
    bands = np.array(["review", "verify", "accept", "verify", "accept", "review", "verify"])
    gate = np.array([0.9, 0.5, 0.1, 0.6, 0.2, 0.8, 0.55])
    verifier = np.array([np.nan, 0.9, np.nan, 0.1, np.nan, np.nan, 0.1])
    score = cascade_risk(gate, verifier, bands)
    order = [int(i) for i in np.argsort(-score, kind="stable")]
    # review band by gate (0, 5), verify band by verifier (1, then the tie 3/6), accept by gate
    assert order[:3] == [0, 5, 1] and set(order[3:5]) == {3, 6} and order[5:] == [4, 2]
    assert score[3] == score[6]  # a tie within a band stays a tie
    with pytest.raises(ValueError, match="verify row has no score"):
        cascade_risk(gate, np.full(7, np.nan), bands)


@pytest.mark.slow
def test_a_saved_bert_detector_loads_through_the_verifier_and_scores_the_band(tmp_path):
    folder = save_tiny_detector(tmp_path / "detector")
    verifier = LettuceDetectVerifier(model=str(folder), max_length=512)
    assert type(verifier.loaded.model).__name__ == "BertForTokenClassification"
    records = pd.read_json(ragtruth_file(tmp_path / "rows.jsonl", per_task=6), lines=True)
    frame = records.rename(columns={"id": "example_id"}).astype({"example_id": str})
    band = np.arange(len(frame)) % 3 == 1
    got = score_band(verifier, frame, band)
    assert got.rows_sent == int(band.sum())
    alone = verifier.score(frame[band].reset_index(drop=True))
    np.testing.assert_allclose(got.risk[band], alone, rtol=0, atol=1e-6)
    assert ((got.risk[band] > 0) & (got.risk[band] < 1)).all()
    assert np.isnan(got.risk[~band]).all()
