"""scripts/detector_errors.py: each positive sentence lands in its slices, scored against the
task's negatives."""

from __future__ import annotations

from types import SimpleNamespace

import numpy as np
import pandas as pd
import pytest
from tests.conftest import load_script


@pytest.fixture(scope="module")
def errors():
    return load_script("detector_errors")


def test_each_sentence_gets_its_types_span_length_and_position(errors):
    answer = "One fact. A wrong fact here. Last one."
    rows = pd.DataFrame({"task": ["QA"], "answer": [answer]})
    wrong = answer.index("A wrong")
    spans = [[{"start": wrong + 2, "end": wrong + 7, "label_type": "Evident Conflict"}]]
    pairs = SimpleNamespace(
        example_of=np.array([0, 0, 0]),
        spans=[(0, 9), (10, 28), (29, 38)],
        labels=np.array([0, 1, 0]),
    )
    frame = errors.pair_frame(pairs, rows, spans)
    assert frame["position"].tolist() == ["first", "middle", "last"]
    assert frame["types"].tolist() == [[], ["Evident Conflict"], []]
    assert frame["span_chars"].tolist() == [0, 5, 0]


def test_a_slice_is_scored_against_the_negatives_of_its_task_only(errors):
    frame = pd.DataFrame(
        {
            "task": ["QA"] * 8 + ["Summary"] * 4,
            "label": [1] * 5 + [0] * 3 + [0] * 4,
            "types": [["Evident Conflict"]] * 5 + [[]] * 7,
            "span_chars": [10] * 5 + [0] * 7,
            "position": ["middle"] * 12,
        }
    )
    probs = np.array([0.9, 0.8, 0.7, 0.6, 0.2, 0.5, 0.1, 0.3] + [0.95] * 4)
    table = errors.sentence_table(frame, probs, threshold=0.55)
    qa = next(r for r in table if r["slice"] == "type: Evident Conflict" and r["task"] == "QA")
    assert qa["positives"] == 5 and qa["recall"] == pytest.approx(4 / 5)
    assert qa["auroc"] == pytest.approx(13 / 15)  # QA negatives only (Summary's are 0.95)
    every = next(r for r in table if r["slice"] == "every positive sentence" and r["task"] == "all")
    assert every["auroc"] < qa["auroc"]  # across tasks, Summary's negatives outrank them
