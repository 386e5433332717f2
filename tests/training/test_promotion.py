"""The promotion rule: a new detector takes @champion only when its validation AP beats
both the answer-length baseline and the current champion on the same rows."""

from __future__ import annotations

import math

import numpy as np
import pandas as pd
import pytest

from runner.training.promotion import (
    CANDIDATE_ALIAS,
    Champion,
    answer_length_ap,
    choose_alias,
    rows_fingerprint,
)


def _rows() -> pd.DataFrame:
    return pd.DataFrame(
        {
            "example_id": ["a", "b", "c", "d"],
            "question": ["q"] * 4,
            "context": ["c"] * 4,
            "answer": ["one", "one two three", "one two", "one two three four"],
            "label": [0, 1, 0, 1],
        }
    )


def test_the_baseline_is_the_ap_of_the_answers_word_count():
    from sklearn.metrics import average_precision_score

    rows = _rows()
    assert answer_length_ap(rows) == pytest.approx(
        average_precision_score(rows.label, [1, 3, 2, 4])
    )
    assert math.isnan(answer_length_ap(rows.assign(label=0)))  # one class: undefined


def test_the_rows_fingerprint_changes_with_any_row_label_or_text():
    rows = _rows()
    key = rows_fingerprint(rows)
    assert key == rows_fingerprint(rows.copy())
    assert key != rows_fingerprint(rows.assign(label=[1, 1, 0, 1]))
    assert key != rows_fingerprint(rows.assign(answer=[*rows.answer[:3], "x"]))
    assert key != rows_fingerprint(rows.iloc[::-1])


@pytest.mark.parametrize(
    ("ap", "baseline", "champion", "alias", "says"),
    [
        (0.7, 0.5, None, "champion", "promoted to @champion"),
        (0.7, 0.5, Champion("3", 0.6, "scored"), "champion", "and @champion (version 3) 0.6000"),
        (0.5, 0.5, None, CANDIDATE_ALIAS, "does not beat the answer-length baseline's 0.5000"),
        (0.7, 0.5, Champion("3", 0.7, "recorded"), CANDIDATE_ALIAS,
         "does not beat @champion (version 3, recorded) 0.7000"),
        (0.55, 0.6, Champion("3", 0.5, "scored"), CANDIDATE_ALIAS, "baseline's 0.6000 on"),
        (0.55, 0.6, Champion("3", 0.9, "recorded"), CANDIDATE_ALIAS,
         "baseline's 0.6000 nor @champion (version 3, recorded) 0.9000"),
        (float("nan"), 0.5, None, CANDIDATE_ALIAS, "hold one class"),
    ],
)  # fmt: skip
def test_only_a_model_better_than_baseline_and_champion_is_promoted(
    ap, baseline, champion, alias, says
):
    got, reason = choose_alias(ap, baseline, champion, rows=30)
    assert got == alias
    assert says in reason and "\n" not in reason
    assert "on the same 30 validation rows" in reason or np.isnan(ap)
    if alias == CANDIDATE_ALIAS:
        assert reason.startswith("not promoted to @champion") and "@candidate" in reason
