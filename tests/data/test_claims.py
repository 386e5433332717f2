"""Claim-level loaders: WiCE, WiCE oracle chunks, Factcheck-Bench stance, the user format."""

from __future__ import annotations

import json
from pathlib import Path

import pandas as pd
import pytest

from runner.data.claim_frame import CLAIM_COLUMNS, validate_claim_frame
from runner.data.claims_jsonl import load_claims_jsonl
from runner.data.factcheck_stance import load_factcheck_stance
from runner.data.wice import load_wice, load_wice_oracle
from runner.errors import ConfigError, DataError, DataNotFoundError

EXAMPLE = Path(__file__).resolve().parents[1] / "fixtures" / "claims" / "claims_example.jsonl"
GOOD = {
    "question": "q?",
    "claim": "A claim.",
    "passages": ["A passage."],
    "label": "green",
}


def write(tmp_path: Path, records: list, name: str = "mine.jsonl") -> Path:
    path = tmp_path / name
    lines = [r if isinstance(r, str) else json.dumps(r) for r in records]
    path.write_text("\n".join(lines) + "\n")
    return path


# --------------------------------------------------------------------------- user format


def test_the_documented_example_loads_into_the_canonical_claim_frame():
    data = load_claims_jsonl(str(EXAMPLE))
    frame = data.frame
    assert list(frame.columns[: len(CLAIM_COLUMNS)]) == list(CLAIM_COLUMNS)
    assert frame["label"].tolist() == ["green", "yellow", "green", "green", "red", "red"]
    assert frame["raw_label"].tolist()[1] == "partial"
    assert frame["category"].tolist()[1] == "overstated certainty"
    assert frame["category"].tolist()[0] == ""
    assert frame["criticality"].dtype == "Int64"
    assert frame["criticality"].tolist()[1] == 2 and pd.isna(frame["criticality"].tolist()[0])
    assert frame["passages"].tolist()[0][1].startswith("It applies")
    # No response_id: claims of one question share one derived id; no claim_id: stem:line.
    assert frame["response_id"].iloc[4] == frame["response_id"].iloc[5]
    assert frame["response_id"].iloc[4].startswith("q:")
    assert frame["claim_id"].iloc[5] == "claims_example:7"
    assert data.info["blank_lines"] == 1
    assert data.info["labels"] == {"green": 3, "red": 2, "yellow": 1}
    assert data.info["flagged_positives"] == 3
    assert data.info["categories"] == {
        "numbers and lists": 1,
        "overstated certainty": 1,
        "wrong attachment": 1,
    }
    assert data.files == [str(EXAMPLE)] and len(data.fingerprint) == 64


def test_loading_is_deterministic_and_limit_keeps_the_first_claims():
    a, b = load_claims_jsonl(str(EXAMPLE)), load_claims_jsonl(str(EXAMPLE))
    assert a.fingerprint == b.fingerprint
    pd.testing.assert_frame_equal(a.frame, b.frame)
    short = load_claims_jsonl(str(EXAMPLE), limit=2)
    assert short.frame["claim_id"].tolist() == ["q1-c1", "q1-c2"]
    assert short.fingerprint != a.fingerprint


def test_without_a_question_each_claim_is_its_own_response(tmp_path):
    path = write(tmp_path, [{**GOOD, "question": ""}, {**GOOD, "question": ""}])
    frame = load_claims_jsonl(str(path)).frame
    assert frame["response_id"].tolist() == frame["claim_id"].tolist() == ["mine:1", "mine:2"]
    assert "criticality" not in frame.columns


@pytest.mark.parametrize(
    ("record", "field", "reason"),
    [
        ({k: v for k, v in GOOD.items() if k != "claim"}, "claim", "required field missing"),
        ({k: v for k, v in GOOD.items() if k != "passages"}, "passages", "required"),
        ({**GOOD, "claim": "  "}, "claim", "empty string"),
        ({**GOOD, "claim": 3}, "claim", "must be a string"),
        ({**GOOD, "question": None}, "question", "missing value"),
        ({**GOOD, "passages": "one passage"}, "passages", "must be a list"),
        ({**GOOD, "passages": []}, "passages", "empty list"),
        ({**GOOD, "passages": ["ok", ""]}, "passages", "passage 2 is empty"),
        ({**GOOD, "passages": ["ok", 7]}, "passages", "passage 2 must be a string"),
        ({**GOOD, "passages": [""]}, "passages", "passage 1 is empty"),
        ({**GOOD, "label": "mostly"}, "label", "unknown label 'mostly'"),
        ({**GOOD, "label": "refute"}, "label", "unknown label"),
        ({**GOOD, "label": 1}, "label", "must be a string"),
        ({**GOOD, "criticality": "high"}, "criticality", "non-negative integer"),
        ({**GOOD, "criticality": -1}, "criticality", "non-negative integer"),
        ({**GOOD, "criticality": True}, "criticality", "non-negative integer"),
        ({**GOOD, "category": 5}, "category", "must be a string"),
        ({**GOOD, "claim_id": ""}, "claim_id", "empty string"),
        ({**GOOD, "response_id": 12}, "response_id", "must be a string"),
        ({**GOOD, "pasages": ["typo"]}, "pasages", "unknown field"),
    ],
)
def test_validation_errors_name_file_line_and_field(tmp_path, record, field, reason):
    path = write(tmp_path, [GOOD, record])
    with pytest.raises(DataError) as err:
        load_claims_jsonl(str(path))
    message = str(err.value)
    assert err.value.file == str(path) and err.value.row == 2 and err.value.field == field
    assert f"file {path}" in message and "row 2" in message and f"field '{field}'" in message
    assert reason in message


def test_a_line_that_is_not_json_names_its_line(tmp_path):
    path = write(tmp_path, [GOOD, '{"question": "q", "claim": '])
    with pytest.raises(DataError, match=r"row 2, field '<record>': line is not valid JSON"):
        load_claims_jsonl(str(path))


def test_duplicate_claim_ids_name_both_lines(tmp_path):
    path = write(tmp_path, [{**GOOD, "claim_id": "x"}, {**GOOD, "claim_id": "x"}])
    with pytest.raises(
        DataError,
        match=r"row 2, field 'claim_id': duplicate claim_id 'x' "
        r"\(first at line 1\)",
    ):
        load_claims_jsonl(str(path))


def test_skip_invalid_drops_counts_and_lists_bad_lines(tmp_path):
    path = write(tmp_path, [GOOD, {**GOOD, "label": "maybe"}, {**GOOD, "claim": ""}])
    data = load_claims_jsonl(str(path), skip_invalid=True)
    assert len(data.frame) == 1
    assert [(s["row"], s["field"]) for s in data.info["skipped"]] == [(2, "label"), (3, "claim")]


def test_missing_file_and_empty_file_fail_clearly(tmp_path):
    with pytest.raises(DataNotFoundError, match="not found"):
        load_claims_jsonl(str(tmp_path / "none.jsonl"))
    empty = tmp_path / "empty.jsonl"
    empty.write_text("\n")
    with pytest.raises(DataError, match="no claims to load"):
        load_claims_jsonl(str(empty))
    with pytest.raises(ConfigError, match="limit"):
        load_claims_jsonl(str(EXAMPLE), limit=0)


def test_the_frame_validator_catches_what_a_hand_built_frame_gets_wrong():
    frame = load_claims_jsonl(str(EXAMPLE)).frame
    validate_claim_frame(frame, "x")
    with pytest.raises(DataError, match="row header, field 'raw_label'"):
        validate_claim_frame(frame.drop(columns="raw_label"), "x")
    bad = frame.copy()
    bad.loc[2, "label"] = "blue"
    with pytest.raises(DataError, match="row 2, field 'label'"):
        validate_claim_frame(bad, "x")
    twice = pd.concat([frame.iloc[:1], frame.iloc[:1]], ignore_index=True)
    with pytest.raises(DataError, match="duplicate claim_id"):
        validate_claim_frame(twice, "x")
    units = pd.concat([frame.iloc[:1], frame.iloc[:1]], ignore_index=True)
    units["unit_id"] = ["a#0", "a#1"]
    units.loc[1, "label"] = "red"
    with pytest.raises(DataError, match="has two labels"):
        validate_claim_frame(units, "x")


# --------------------------------------------------------------------------- real data


def test_wice_test_has_358_claims_with_their_full_evidence(data_dir):
    data = load_wice("test", data_dir=str(data_dir))
    frame = data.frame
    assert len(frame) == 358 and frame["claim_id"].is_unique
    assert data.info["labels"] == {"green": 111, "red": 32, "yellow": 215}
    assert data.info["raw_labels"] == {
        "not_supported": 32,
        "partially_supported": 215,
        "supported": 111,
    }
    assert (frame["question"] == "").all() and (frame["category"] == "").all()
    assert frame["passages"].map(len).eq(1).all()
    first = frame.iloc[0]
    assert first["claim_id"] == "test00561" and first["label"] == "yellow"
    assert "Hollywood Star Walk" in first["passages"][0]
    assert load_wice("dev", data_dir=str(data_dir)).info["claims"] == 349
    assert load_wice("test", limit=5, data_dir=str(data_dir)).frame.shape[0] == 5


def test_wice_oracle_has_several_chunks_per_claim_and_one_label_per_claim(data_dir):
    data = load_wice_oracle("test", data_dir=str(data_dir))
    frame = data.frame
    assert len(frame) == 1070 and frame["claim_id"].nunique() == 358
    assert frame["unit_id"].is_unique
    assert data.info["chunks_per_claim"] == {"2": 4, "3": 354}
    assert data.info["labels"] == {"green": 110, "red": 32, "yellow": 216}
    assert frame.groupby("claim_id")["label"].nunique().eq(1).all()
    first = frame[frame["claim_id"] == "test00561"]
    assert first["unit_id"].tolist() == ["test00561#0", "test00561#1", "test00561#2"]
    assert first["chunk"].tolist() == [0, 1, 2]
    short = load_wice_oracle("test", limit=2, data_dir=str(data_dir)).frame
    assert short["claim_id"].nunique() == 2 and len(short) == 6


def test_factcheck_stance_excludes_or_maps_irrelevant_pairs(data_dir):
    kept = load_factcheck_stance(data_dir=str(data_dir))
    assert len(kept.frame) == 3305 - 2057
    assert kept.info["excluded"] == {"irrelevant": 2057}
    assert kept.info["labels"] == {"green": 696, "red": 161, "yellow": 391}
    assert kept.frame["passages"].map(len).eq(1).all()
    as_red = load_factcheck_stance(irrelevant="red", data_dir=str(data_dir))
    assert len(as_red.frame) == 3305 and as_red.info["labels"]["red"] == 161 + 2057
    assert as_red.info["responses"] == 661  # the five pairs of one claim share a response id
    first = as_red.frame.iloc[0]
    assert (first["claim_id"], first["raw_label"], first["label"]) == (
        "fcb3-00001",
        "irrelevant",
        "red",
    )
    yellow = load_factcheck_stance(irrelevant="yellow", limit=10, data_dir=str(data_dir))
    assert len(yellow.frame) == 10
    assert kept.fingerprint != as_red.fingerprint
    with pytest.raises(ConfigError, match="irrelevant must be one of"):
        load_factcheck_stance(irrelevant="drop", data_dir=str(data_dir))


def test_bad_splits_and_missing_data_fail_clearly(tmp_path, monkeypatch):
    with pytest.raises(ConfigError, match="split"):
        load_wice("train")
    with pytest.raises(DataNotFoundError, match="wice"):
        load_wice("test", data_dir=str(tmp_path))
    monkeypatch.delenv("RUNNER_DATA_DIR", raising=False)
    with pytest.raises(DataNotFoundError, match="RUNNER_DATA_DIR is not set"):
        load_factcheck_stance()


def test_a_broken_wice_record_names_line_and_field(tmp_path):
    good = {"label": "supported", "claim": "c", "evidence": ["e"], "meta": {"id": "t1"}}
    path = write(tmp_path, [good, {**good, "meta": {"id": "t2"}, "label": "mostly"}], "w.jsonl")
    with pytest.raises(DataError, match=r"row 2, field 'label': unknown label 'mostly'"):
        load_wice(path=str(path))
    path = write(tmp_path, [good, {**good, "meta": {}}], "w2.jsonl")
    with pytest.raises(DataError, match=r"row 2, field 'meta.id'"):
        load_wice(path=str(path))
    path = write(tmp_path, [good, {**good, "meta": {"id": "t2"}, "evidence": "text"}], "w3.jsonl")
    with pytest.raises(DataError, match=r"row 2, field 'evidence'"):
        load_wice(path=str(path))
