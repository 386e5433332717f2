"""The detector card: what training writes beside the weights is what a verifier reads."""

from __future__ import annotations

from runner.verifiers.detector_card import read_detector_card, write_detector_card


def test_the_card_round_trips_and_a_folder_without_one_has_none(tmp_path):
    card = {"threshold": 0.35, "input_rule": {"rule": "evidence", "max_length": 128}}
    write_detector_card(tmp_path, card)
    assert read_detector_card(tmp_path) == card
    assert not (tmp_path / "detector.tmp").exists()  # written whole, then renamed
    assert read_detector_card(tmp_path / "none") is None
