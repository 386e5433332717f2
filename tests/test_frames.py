"""`runner.frames.check_labels`: the one label check every layer uses."""

from __future__ import annotations

import numpy as np
import pandas as pd
import pytest

from runner.data.claim_labels import CLAIM_CHECK
from runner.errors import DataError
from runner.frames import BINARY, check_labels


def test_binary_labels_come_back_unchanged_and_booleans_count_as_0_1():
    assert check_labels([0, 1, 1]).tolist() == [0, 1, 1]
    assert check_labels(np.array([True, False])).tolist() == [True, False]
    assert check_labels(pd.Series([1.0, 0.0])).dtype == np.float64
    assert check_labels([1, 1]).tolist() == [1, 1]  # one class is fine unless asked otherwise


@pytest.mark.parametrize(
    ("labels", "match"),
    [
        (
            [0, 2, 1],
            r"y must hold 0/1 labels \(1 = unfaithful\); position 1 holds .*2",
        ),
        (["a", "b"], "y must hold 0/1 labels, got dtype"),
        ([], "y is empty"),
        ([[0, 1]], r"y must be 1-D, got shape \(1, 2\)"),
    ],
)
def test_a_bad_label_array_is_refused_saying_why(labels, match):
    with pytest.raises(ValueError, match=match):
        check_labels(labels)


def test_one_label_per_row_and_both_classes_when_a_caller_needs_them():
    gate = {"rows": 3, "need_all": "a learned gate"}
    assert check_labels([0, 1, 1], **gate).tolist() == [0, 1, 1]
    with pytest.raises(ValueError, match=r"one label per row: \(2,\) for 3 rows"):
        check_labels([0, 1], **gate)
    with pytest.raises(ValueError, match=r"holds only class \[0\]: a learned gate needs both"):
        check_labels([0, 0, 0], **gate)


def test_a_data_sets_labels_fail_as_a_data_error_naming_the_data_set():
    frame = pd.DataFrame({"label": [1, 1]})
    with pytest.raises(DataError, match=r"data set rt holds only class \[1\]: AUROC/AP needs"):
        check_labels(frame["label"], name="data set rt", need_all="AUROC/AP", error=DataError)


def test_claim_labels_are_text_classes_and_may_be_empty():
    checked = check_labels(["green", "red"], **CLAIM_CHECK)
    assert checked.dtype == object and checked.tolist() == ["green", "red"]
    assert check_labels([], **CLAIM_CHECK).tolist() == []
    with pytest.raises(ValueError, match="position 1 holds 'maybe', not a claim label"):
        check_labels(["green", "maybe"], **CLAIM_CHECK)


def test_binary_is_the_response_label_set():
    assert BINARY == (0, 1)
