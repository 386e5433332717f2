"""scripts/detector_fusion.py: the aggregation rules, and every rule scored out of fold on
real RAGTruth test rows (sentence logits here made from the labels, so the rules' order is
known; the real detector's are in docs/detector.md)."""

from __future__ import annotations

import numpy as np
import pandas as pd
import pytest
from tests.conftest import load_script, real_data_dir

from runner.data import load_ragtruth


@pytest.fixture(scope="module")
def fusion():
    return load_script("detector_fusion")


def test_the_aggregates_of_each_responses_sentences(fusion):
    p = np.array([0.1, 0.5, 0.2, 0.9])
    agg = fusion._aggregates(p, np.array([0, 0, 0, 2]), 3)
    np.testing.assert_allclose(agg["max"], [0.5, np.nan, 0.9])
    np.testing.assert_allclose(agg["noisy_or"], [1 - 0.9 * 0.5 * 0.8, np.nan, 0.9])
    np.testing.assert_allclose(agg["top2"], [0.35, np.nan, 0.9])
    np.testing.assert_allclose(agg["mean"], [0.8 / 3, np.nan, 0.9])


@pytest.mark.slow
def test_every_rule_scores_every_row_out_of_fold(fusion):
    frame = load_ragtruth(split="test", data_dir=str(real_data_dir())).frame
    frame = frame[frame["group_id"].isin(frame["group_id"].unique()[:40])].reset_index(drop=True)
    rng = np.random.default_rng(0)
    units = []
    for row, (answer, spans) in enumerate(zip(frame["answer"], frame["spans"], strict=True)):
        half = len(answer) // 2
        for start, end in ((0, half), (half, len(answer))):
            gold = any(start < s["end"] and s["start"] < end for s in spans)
            units.append((row, start, end, 2.0 * gold + rng.normal(), int(gold)))
    units = pd.DataFrame(units, columns=["row", "start", "end", "logit", "label"])
    frame = fusion.with_lexical_features(frame, None)
    risks = fusion.fuse(frame, units, similarity=True, cache_dir=None)
    assert len(risks) == 10
    assert all(r.shape == (len(frame),) and np.isfinite(r).all() for r in risks.values())
    rows = {r["rule"]: r for r in fusion.table(frame, risks)}
    assert rows["detector alone (max sentence probability)"]["auroc"] > 0.8  # label-made
    assert rows["RAGScope-E (out of fold)"]["auroc"] < rows["sentence model, max"]["auroc"]
