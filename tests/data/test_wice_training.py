"""WiCE's non-test parts as training rows of the claim verifier, and their sentence pairs."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from tests.conftest import real_data_dir
from tests.routing.detector import minilm_dir

from runner.data.wice_training import load_wice_claim_training, token_spans
from runner.errors import ConfigError, DataError
from runner.verifiers.detector_inputs import InputRule
from runner.verifiers.sentence_pairs import build_pairs
from runner.verifiers.token_labels import gold_spans


@pytest.fixture(scope="module")
def loaded():
    return load_wice_claim_training(data_dir=str(real_data_dir()))


def test_every_non_test_part_is_read_and_no_test_claim(loaded):
    frame = loaded.frame
    assert loaded.info["counts_per_task"] == {
        "dev": 349,
        "dev_oracle": 1043,
        "non_supported_tokens_train": 374,
    }
    assert loaded.info["split"] == "train"
    assert loaded.info["trained_on"] == ["wice:dev", "wice:non_supported_tokens/train"]
    assert not frame["group_id"].str.startswith("test").any()
    assert frame["example_id"].is_unique
    # a dev claim and its oracle chunks are one group: the validation split keeps them together
    dev_group = frame.loc[frame["task"] == "dev", "group_id"].iloc[0]
    assert set(frame.loc[frame["group_id"] == dev_group, "task"]) == {"dev", "dev_oracle"}


def test_labels_follow_wice_and_the_token_masks(loaded):
    frame = loaded.frame
    assert (frame["label"] == frame["raw_label"].ne("supported").astype(int)).all()
    positive = frame[frame["label"] == 1]
    assert all(len(s) > 0 for s in positive["spans"])
    assert all(len(s) == 0 for s in frame.loc[frame["label"] == 0, "spans"])
    first = frame[frame["task"] == "non_supported_tokens_train"].iloc[0]
    assert first["answer"] == "The audience consists of Australian ex-pats."
    assert [first["answer"][s:e] for s, e in first["spans"]] == ["Australian"]


def test_token_spans_merge_adjacent_marked_tokens_and_refuse_a_missing_token(tmp_path):
    claim = "He won the 1999 Open in Paris."
    rec = {
        "claim_tokens": ["He", "won", "the", "1999", "Open", "in", "Paris", "."],
        "non_supported_spans": [False, False, False, True, True, False, True, False],
    }
    assert token_spans(claim, rec, Path("f.jsonl"), 1) == [(11, 20), (24, 29)]
    rec["claim_tokens"][6] = "London"
    with pytest.raises(DataError, match=r"token 'London' not found"):
        token_spans(claim, rec, Path("f.jsonl"), 1)


def test_an_unknown_source_is_refused_before_any_file_is_read():
    with pytest.raises(ConfigError, match=r"dataset\.sources must be a non-empty subset"):
        load_wice_claim_training(sources=["test"], data_dir="/nonexistent")


def test_a_claim_is_paired_with_its_best_evidence_sentences_first():
    """The sentence recipe's pairs with the claim as the answer: the evidence sentences
    that share most content words with the claim fill the window, in document order."""
    from transformers import AutoTokenizer

    tokenizer = AutoTokenizer.from_pretrained(str(minilm_dir()))
    filler = [f"Unrelated sentence number {k} talks about weather and crops." for k in range(40)]
    evidence = [*filler[:20], "Whitehead hosted The Wall, filmed in Warsaw.", *filler[20:]]
    evidence += ["The Wall audience were English speaking locals in Warsaw."]
    claim = "The Wall audience consists of Australian ex-pats in Warsaw."
    rule = InputRule(rule="evidence", max_length=128, template="plain", include_question=True)
    pairs = build_pairs(
        tokenizer, rule, [""], ["\n".join(evidence)], [claim], ["c1"],
        [gold_spans([(30, 52)], claim, "c1")],
    )  # fmt: skip
    assert pairs.stats.n_pairs == 1 and pairs.stats.pairs_reduced == 1
    text = tokenizer.decode(pairs.encoded.input_ids[0])
    assert "english speaking locals" in text and "whitehead hosted the wall" in text
    assert "number 39 " not in text  # the window is full before the last unrelated one
    assert text.index("whitehead") < text.index("english speaking")  # document order
    assert pairs.labels.tolist() == [1]
    assert json.dumps(pairs.stats.to_dict())  # the card can record it
