"""Shared gate helpers: precomputed lexical columns, output and label checks."""

import numpy as np
import pandas as pd
import pytest

from runner.features import lexical_features
from runner.gates.base import as_risk, check_lexical_names, with_lexical


def test_present_columns_are_reused_and_missing_ones_computed(train):
    frame, _ = train
    frame = frame.assign(coverage=0.25)
    out = with_lexical(frame, ["coverage", "rouge_l_risk"])
    assert out["coverage"].tolist() == [0.25] * len(frame)
    expected = lexical_features(frame, features=["rouge_l_risk"])["rouge_l_risk"]
    assert out["rouge_l_risk"].tolist() == expected.tolist()
    assert "rouge_l_risk" not in frame.columns  # the input frame is left alone


def test_frame_with_every_column_is_returned_as_is(train):
    frame, _ = train
    frame = frame.assign(coverage=0.5)
    assert with_lexical(frame, ["coverage"]) is frame


def test_non_numeric_present_column_is_named(train):
    frame, _ = train
    frame = frame.assign(coverage="high")
    with pytest.raises(ValueError, match=r"row 0, field 'coverage'"):
        with_lexical(frame, ["coverage"])


def test_names_are_checked():
    assert check_lexical_names(("coverage",)) == ["coverage"]
    with pytest.raises(ValueError, match="list of names"):
        check_lexical_names("coverage")
    with pytest.raises(ValueError, match="repeat"):
        check_lexical_names(["coverage", "coverage"])


def test_as_risk_checks_length_and_finiteness():
    frame = pd.DataFrame({"a": [1, 2]})
    assert as_risk([1, 2], frame).dtype == np.float64
    with pytest.raises(RuntimeError, match="3 scores for 2 rows"):
        as_risk([1, 2, 3], frame)
    with pytest.raises(RuntimeError, match="non-finite"):
        as_risk([1, np.inf], frame)
