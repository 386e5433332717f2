"""Claim labels: every known spelling maps onto green / yellow / red; nothing is guessed."""

from __future__ import annotations

import numpy as np
import pytest

from runner.data.claim_labels import (
    LABELS,
    from_severity,
    is_flagged,
    severity,
    to_label,
)


@pytest.mark.parametrize(
    ("raw", "label"),
    [
        ("supported", "green"),
        ("Supported ", "green"),
        ("completely-support", "green"),
        ("partially_supported", "yellow"),
        ("partial", "yellow"),
        ("partially-support", "yellow"),
        ("not_supported", "red"),
        ("unsupported", "red"),
        ("refute", "red"),
        ("RED", "red"),
    ],
)
def test_known_spellings_map_onto_the_traffic_light(raw, label):
    assert to_label(raw) == label


@pytest.mark.parametrize("raw", ["true", "irrelevant", "", "mostly", 1, None])
def test_an_unknown_or_non_string_label_is_an_error_not_a_guess(raw):
    with pytest.raises(ValueError):
        to_label(raw)


def test_a_custom_mapping_is_used_instead_of_the_defaults():
    assert to_label("ok", {"ok": "green"}) == "green"
    with pytest.raises(ValueError, match="unknown label"):
        to_label("supported", {"ok": "green"})
    with pytest.raises(ValueError, match="not one of"):
        to_label("ok", {"ok": "blue"})


def test_flagged_means_yellow_or_red():
    assert is_flagged(["green", "yellow", "red"]).tolist() == [False, True, True]


def test_severity_orders_the_labels_and_round_trips():
    codes = severity(["red", "green", "yellow"])
    assert codes.tolist() == [2, 0, 1]
    assert from_severity(codes).tolist() == ["red", "green", "yellow"]
    assert list(LABELS) == ["green", "yellow", "red"]


def test_severity_rejects_anything_but_the_three_labels():
    with pytest.raises(ValueError, match="not a claim label"):
        severity(["green", "supported"])
    assert severity(np.array([], dtype=object)).tolist() == []
