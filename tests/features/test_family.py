"""lexical_features over frames: shape, order, validation, dedup, no NaN."""

import math

import numpy as np
import pandas as pd
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from runner.features import (
    BASE_FEATURE_NAMES,
    FEATURES,
    LEXICAL_FEATURE_NAMES,
    SUPPORT_FEATURE_NAMES,
    ExampleView,
    lexical_features,
)


@pytest.fixture
def frame():
    return pd.DataFrame(
        {
            "question": ["Who founded Acme?", "Who founded Acme?", "What is sold?", ""],
            "context": ["Acme was founded by Jane. It sells anvils."] * 3 + [""],
            "answer": ["Jane founded Acme.", "John founded Acme in 1,999.", "Anvils.", ""],
        },
        index=["r1", "r2", "r3", "r4"],
    )


def test_feature_lists():
    assert BASE_FEATURE_NAMES == (
        "answer_length",
        "context_length",
        "coverage",
        "uncovered_fraction",
        "rare_token_coverage",
        "answer_context_jaccard",
        "question_answer_jaccard",
        "longest_supported_run",
        "best_sentence_support",
        "numeric_coverage",
        "numeric_count",
    )
    assert SUPPORT_FEATURE_NAMES == ("rouge_l_risk", "token_f1_risk")
    assert LEXICAL_FEATURE_NAMES == BASE_FEATURE_NAMES + SUPPORT_FEATURE_NAMES
    assert tuple(FEATURES) == LEXICAL_FEATURE_NAMES


def test_same_index_float_columns_in_canonical_order(frame):
    out = lexical_features(frame)
    assert list(out.index) == ["r1", "r2", "r3", "r4"]
    assert list(out.columns) == list(LEXICAL_FEATURE_NAMES)
    assert all(dtype == np.float64 for dtype in out.dtypes)
    assert np.isfinite(out.to_numpy()).all()


def test_rows_equal_single_example_computation(frame):
    out = lexical_features(frame)
    for label, row in frame.iterrows():
        x = ExampleView.of(row["question"], row["context"], row["answer"])
        expected = [FEATURES[name](x) for name in LEXICAL_FEATURE_NAMES]
        assert out.loc[label].tolist() == expected


def test_known_values(frame):
    out = lexical_features(frame)
    assert out.loc["r1", "uncovered_fraction"] == 0.0
    assert out.loc["r2", "uncovered_fraction"] == pytest.approx(2 / 4)  # john 1999
    assert out.loc["r2", "numeric_count"] == 1.0
    assert out.loc["r4", "uncovered_fraction"] == 1.0


def test_subset_in_requested_order(frame):
    out = lexical_features(frame, features=["rouge_l_risk", "coverage"])
    assert list(out.columns) == ["rouge_l_risk", "coverage"]
    full = lexical_features(frame)
    assert out["coverage"].tolist() == full["coverage"].tolist()


def test_row_order_does_not_change_values(frame):
    shuffled = frame.iloc[[3, 1, 0, 2]]
    assert lexical_features(shuffled).loc[frame.index].equals(lexical_features(frame))


def test_empty_frame():
    empty = pd.DataFrame({"question": [], "context": [], "answer": []}, dtype=object)
    out = lexical_features(empty)
    assert out.shape == (0, len(LEXICAL_FEATURE_NAMES))


def test_missing_column_is_named(frame):
    with pytest.raises(ValueError, match="answer"):
        lexical_features(frame.drop(columns="answer"))


@pytest.mark.parametrize("bad", [None, float("nan"), 3])
def test_non_string_value_names_row_and_field(frame, bad):
    frame = frame.astype(object)
    frame.loc["r3", "context"] = bad
    with pytest.raises(ValueError, match=r"row 'r3', field 'context'"):
        lexical_features(frame)


def test_unknown_or_repeated_feature_is_rejected(frame):
    with pytest.raises(ValueError, match="unknown lexical feature"):
        lexical_features(frame, features=["coverage", "nope"])
    with pytest.raises(ValueError, match="repeat"):
        lexical_features(frame, features=["coverage", "coverage"])


def test_not_a_frame_is_rejected():
    with pytest.raises(ValueError, match="DataFrame"):
        lexical_features([("q", "c", "a")])


text = st.lists(st.sampled_from([*"ab1,. \n!é", "the ", "is ", "1,000"]), max_size=30).map("".join)


@settings(max_examples=200, deadline=None)
@given(text, text, text)
def test_every_feature_is_finite_and_bounded(question, context, answer):
    out = lexical_features(
        pd.DataFrame({"question": [question], "context": [context], "answer": [answer]})
    ).iloc[0]
    assert all(math.isfinite(v) for v in out)
    for name in LEXICAL_FEATURE_NAMES:
        if name not in ("answer_length", "context_length", "numeric_count"):
            assert 0.0 <= out[name] <= 1.0, name
    assert out["coverage"] + out["uncovered_fraction"] == pytest.approx(1.0)
    assert out["rouge_l_risk"] >= out["uncovered_fraction"] - 1e-12  # LCS ≤ covered tokens
