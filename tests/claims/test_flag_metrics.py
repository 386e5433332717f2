"""The flag task's metrics and the Venn regions of the judges' flags."""

from __future__ import annotations

import numpy as np
import pytest

from runner.claims.flag_metrics import (
    MARK_COLUMN,
    decided_metrics,
    flag_metrics,
    safe_auroc,
    venn_regions,
)


def test_flag_metrics_on_a_hand_made_table():
    flagged = np.array([1, 1, 0, 0, 1], dtype=bool)
    positive = np.array([1, 0, 1, 0, 1], dtype=bool)
    m = flag_metrics(flagged, positive)
    assert (m["flags"], m["true_alarms"], m["false_alarms"]) == (3, 2, 1)
    assert m["precision"] == pytest.approx(2 / 3) and m["recall"] == pytest.approx(2 / 3)
    assert m["f1"] == pytest.approx(2 * 2 / (2 * 2 + 1 + 1))
    none = flag_metrics(np.zeros(3, bool), np.array([1, 0, 0], bool))
    assert none["precision"] is None and none["recall"] == 0 and none["f1"] == 0
    assert flag_metrics(np.zeros(2, bool), np.zeros(2, bool))["f1"] is None


def test_decided_metrics_leave_out_abstentions_and_mark_mostly_abstained():
    flagged = np.array([1, 1, 1, 0], dtype=bool)
    positive = np.array([1, 0, 1, 0], dtype=bool)
    abstained = np.array([0, 1, 1, 0], dtype=bool)  # abstentions are yellow, so flagged
    m = decided_metrics(flagged, positive, abstained)
    assert m["decided share"] == 0.5 and m[MARK_COLUMN] == 0.0  # exactly half: not marked
    assert m["precision (decided)"] == 1.0 and m["recall (decided)"] == 1.0
    most = decided_metrics(flagged, positive, np.array([1, 1, 1, 0], dtype=bool))
    assert most["decided share"] == 0.25 and most[MARK_COLUMN] == 1.0
    assert decided_metrics(flagged[:0], positive[:0], abstained[:0])["decided share"] is None


def test_auroc_is_none_with_one_class():
    assert safe_auroc(np.array([True, True]), np.array([0.1, 0.2])) is None
    assert safe_auroc(np.array([True, False]), np.array([0.9, 0.2])) == 1.0


def test_venn_regions_count_exact_memberships():
    sets = {"a": np.array([1, 1, 0, 0, 1], bool), "b": np.array([0, 1, 1, 0, 1], bool)}
    assert venn_regions(sets) == [("a", 1), ("b", 1), ("a & b", 2), ("none", 1)]
    three = venn_regions({"a": np.array([1, 0]), "b": np.array([1, 0]), "c": np.array([0, 0])})
    assert dict(three)["a & b"] == 1 and dict(three)["none"] == 1 and len(three) == 8
