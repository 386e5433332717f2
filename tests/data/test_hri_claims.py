"""Claims files: the documented YAML format, its errors, and the claim-level frame."""

from __future__ import annotations

from pathlib import Path

import pytest
import yaml

from runner.data.hri_claims import (
    DEFAULT_CLAIMS_FILE,
    FRAME_COLUMNS,
    load_hri_claims,
    read_claims_file,
    responses_from_frame,
    responses_to_frame,
)
from runner.errors import DataError, DataNotFoundError
from runner.paths import PROJECT_ROOT


def write(tmp_path: Path, doc: object, name: str = "claims.yaml") -> Path:
    path = tmp_path / name
    path.write_text(yaml.safe_dump(doc) if not isinstance(doc, str) else doc)
    return path


def one(claims: list[dict], **response: object) -> dict:
    return {"responses": [{"response_id": "r1", "claims": claims, **response}]}


def test_the_worked_example_file_loads_as_a_claim_frame():
    data = load_hri_claims()
    frame = data.frame
    assert list(frame.columns) == list(FRAME_COLUMNS)
    assert len(frame) == 6 and frame["criticality"].sum() == 11
    assert frame["claim_id"].tolist()[0] == "supplier-contract/1"
    assert frame["label"].tolist() == ["green", "red", "red", "red", "red", "red"]
    assert frame.loc[2, "hri_dimensions"] == [["F", "C"]]
    assert data.files == [str(PROJECT_ROOT / DEFAULT_CLAIMS_FILE)]
    assert data.info["responses"] == 1
    assert load_hri_claims().fingerprint == data.fingerprint


def test_frame_round_trip_keeps_labels_dimensions_and_feedback(tmp_path):
    doc = one(
        [
            {"claim_id": "a", "labels": ["partial"], "text": "t"},
            {
                "claim_id": "b",
                "labels": [{"label": "CONTRADICTED", "dimensions": ["F", "C"]}, "OUTDATED"],
                "criticality": 3,
            },
            {
                "claim_id": "c",
                "labels": ["VALIDATED_NEGATIVE_FEEDBACK"],
                "feedback": [{"at": "2026-06-01", "validated_by": "rev", "severity": 0.5}],
            },
        ],
        as_of="2026-07-01",
        n_reviewed=3,
        outcome=1,
        source="pilot",
        question="q?",
    )
    responses = read_claims_file(write(tmp_path, doc))
    back = responses_from_frame(responses_to_frame(responses))
    assert back == responses
    assert back[0].claims[0].labels[0].label == "PARTIAL"  # names are upper-cased
    assert responses_to_frame(responses)["label"].tolist() == ["yellow", "red", "red"]


@pytest.mark.parametrize(
    ("doc", "message"),
    [
        (
            one([{"claim_id": "a", "labels": ["SUPPORTED"], "critcality": 2}]),
            r"row responses\[0\]\.claims\[0\]: unknown key\(s\) \['critcality'\]",
        ),
        (one([]), "claims must be a non-empty list"),
        (one([{"claim_id": "a", "labels": []}]), "labels must be a non-empty list"),
        (one([{"claim_id": "a", "labels": ["SUPPORTED", "supported"]}]), "more than once"),
        (
            one(
                [
                    {"claim_id": "a", "labels": ["SUPPORTED"]},
                    {"claim_id": "a", "labels": ["SUPPORTED"]},
                ]
            ),
            "duplicate claim_id 'a'",
        ),
        (
            one([{"claim_id": "a", "labels": ["SUPPORTED"], "criticality": 0}]),
            r"claims\[0\], field 'criticality': claim 'a': criticality must be",
        ),
        (one([{"claim_id": "a", "labels": ["SUPPORTED"]}], outcome=2), "outcome must be 0, 1"),
        (
            one(
                [
                    {
                        "claim_id": "a",
                        "labels": ["VALIDATED_NEGATIVE_FEEDBACK"],
                        "feedback": [{"at": "2026-06-01", "validated_by": "x"}],
                    }
                ]
            ),
            "no as_of",
        ),
        (
            one(
                [
                    {
                        "claim_id": "a",
                        "labels": ["VALIDATED_NEGATIVE_FEEDBACK"],
                        "feedback": [{"at": "2026-08-01", "validated_by": "x"}],
                    }
                ],
                as_of="2026-07-01",
            ),
            r"claim 'a': feedback\[0\] at 2026-08-01.*future",
        ),
        (
            one(
                [
                    {
                        "claim_id": "a",
                        "labels": ["VALIDATED_NEGATIVE_FEEDBACK"],
                        "feedback": [{"at": "2026-06-01"}],
                    }
                ],
                as_of="2026-07-01",
            ),
            r"claim 'a'.*feedback without validation",
        ),
        (
            {
                "responses": [
                    {"response_id": "r", "claims": [{"claim_id": "a", "labels": ["X"]}]},
                    {"response_id": "r", "claims": [{"claim_id": "a", "labels": ["X"]}]},
                ]
            },
            "duplicate response_id 'r'",
        ),
        ({"claims": []}, "top level must be a mapping"),
        ({"responses": []}, "non-empty list"),
    ],
)
def test_bad_claims_files_name_file_position_and_field(tmp_path, doc, message):
    path = write(tmp_path, doc)
    with pytest.raises(DataError, match=message) as info:
        read_claims_file(path)
    assert str(path) in str(info.value)


def test_invalid_yaml_and_missing_files(tmp_path):
    with pytest.raises(DataError, match="not valid YAML"):
        read_claims_file(write(tmp_path, "responses: [\n  - {"))
    with pytest.raises(DataNotFoundError, match="not found"):
        load_hri_claims(str(tmp_path / "nope.yaml"))


def test_frame_with_inconsistent_response_fields_is_rejected(tmp_path):
    doc = one([{"claim_id": "a", "labels": ["SUPPORTED"]}, {"claim_id": "b", "labels": ["X"]}])
    frame = responses_to_frame(read_claims_file(write(tmp_path, doc)))
    frame.loc[1, "question"] = "different"
    with pytest.raises(DataError, match="response-level fields differ"):
        responses_from_frame(frame)
    with pytest.raises(DataError, match="lacks column"):
        responses_from_frame(frame.drop(columns=["hri_labels"]))
