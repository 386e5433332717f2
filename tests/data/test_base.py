"""The canonical-frame validator, row skipping, JSONL reading and file fingerprints."""

from __future__ import annotations

import hashlib
import json
import logging

import numpy as np
import pandas as pd
import pytest

from runner.data.base import LoadedData
from runner.data.hashing import fingerprint_files, frame_fingerprint, group_key
from runner.data.response_frame import screen_rows, span_problem, validate_response_frame
from runner.data.row_issues import IssueLog
from runner.data.text_files import read_jsonl
from runner.errors import DataError
from runner.frames import REQUIRED_COLUMNS


def _error(frame: pd.DataFrame, file: str = "my.parquet") -> DataError:
    with pytest.raises(DataError) as caught:
        validate_response_frame(frame, file)
    return caught.value


def test_valid_frame_passes(canonical_frame):
    validate_response_frame(canonical_frame(), "my.parquet")


@pytest.mark.parametrize("column", REQUIRED_COLUMNS)
def test_missing_column_names_file_header_and_field(canonical_frame, column):
    err = _error(canonical_frame().drop(columns=[column]))
    assert (err.file, err.row, err.field) == ("my.parquet", "header", column)
    assert "my.parquet" in str(err) and column in str(err)


@pytest.mark.parametrize(
    ("column", "value", "reason"),
    [
        ("answer", "", "empty"),
        ("answer", "   \n", "empty"),
        ("answer", 42, "must be a string"),
        ("answer", None, "missing"),
        ("context", "", "empty"),
        ("context", float("nan"), "missing"),
        ("context", ["a list"], "must be a string"),
        ("example_id", "", "empty"),
        ("group_id", None, "missing"),
        ("task", 3, "must be a string"),
        ("source", "", "empty"),
        ("question", None, "missing"),
    ],
)
def test_bad_text_field_names_row_and_field(canonical_frame, column, value, reason):
    frame = canonical_frame()
    frame[column] = frame[column].astype(object)
    frame.at[1, column] = value
    err = _error(frame)
    assert (err.file, err.row, err.field) == ("my.parquet", 1, column)
    assert reason in str(err)


def test_empty_question_is_allowed(canonical_frame):
    frame = canonical_frame()
    frame.loc[:, "question"] = ""
    validate_response_frame(frame, "my.parquet")


@pytest.mark.parametrize("value", [2, -1, 0.5, "1", True, None, float("nan")])
def test_label_outside_0_1_is_rejected(canonical_frame, value):
    frame = canonical_frame()
    frame["label"] = frame["label"].astype(object)
    frame.at[2, "label"] = value
    err = _error(frame)
    assert (err.row, err.field) == (2, "label")


def test_float_labels_0_and_1_are_accepted_and_become_int(canonical_frame):
    frame = canonical_frame()
    frame["label"] = frame["label"].astype(float)
    out = screen_rows(frame, ["f"] * 3, [0, 1, 2], IssueLog())
    assert out["label"].dtype == np.int64
    assert out["label"].tolist() == [0, 1, 0]


def test_duplicate_id_names_both_rows(canonical_frame):
    frame = canonical_frame()
    frame.at[2, "example_id"] = "e1"
    err = _error(frame)
    assert (err.row, err.field) == (2, "example_id")
    assert "duplicate" in str(err) and "row 0" in str(err)


def test_row_numbers_come_from_the_index(canonical_frame):
    # Loaders put the user's row numbers (e.g. 1-based JSONL lines) in the index.
    frame = canonical_frame()
    frame.index = [4, 7, 9]
    frame.at[7, "answer"] = ""
    err = _error(frame, "data.jsonl")
    assert (err.file, err.row, err.field) == ("data.jsonl", 7, "answer")


def test_first_problem_in_row_order_is_raised(canonical_frame):
    frame = canonical_frame()
    frame.at[2, "answer"] = ""
    frame.at[1, "context"] = ""
    assert _error(frame).row == 1


@pytest.mark.parametrize(
    ("spans", "reason"),
    [
        ([{"start": 9, "end": 99, "text": "x"}], "out of range"),
        ([{"start": -1, "end": 3}], "out of range"),
        ([{"start": 5, "end": 3}], "out of range"),
        ([{"start": 9, "end": 17, "text": "2,300 km"}], "does not match"),
        ([{"start": "9", "end": 17}], "integer start and end"),
        ([{"end": 17}], "integer start and end"),
        (["9-17"], "must be a dict"),
        ("[]", "must be a list"),
    ],
)
def test_bad_spans_name_row_and_field(canonical_frame, spans, reason):
    frame = canonical_frame()
    frame.at[1, "spans"] = spans
    err = _error(frame)
    assert (err.row, err.field) == (1, "spans")
    assert reason in str(err)


def test_span_without_text_is_checked_for_range_only():
    assert span_problem([{"start": 0, "end": 3}], "abcdef") is None
    assert span_problem(np.array([{"start": 0, "end": 6, "text": "abcdef"}]), "abcdef") is None
    assert span_problem([], "abcdef") is None


def test_skip_invalid_drops_counts_lists_and_logs(canonical_frame, caplog):
    frame = canonical_frame()
    frame.at[0, "answer"] = ""
    frame.at[2, "example_id"] = "e2"  # duplicate of row 1
    issues = IssueLog(skip_invalid=True)
    with caplog.at_level(logging.WARNING, logger="runner.data.row_issues"):
        out = screen_rows(frame, ["f.parquet"] * 3, [0, 1, 2], issues)
    assert out["example_id"].tolist() == ["e2"]
    assert issues.skipped_rows() == 2
    assert issues.skipped() == [
        {"file": "f.parquet", "row": 0, "field": "answer", "reason": "empty string"},
        {
            "file": "f.parquet",
            "row": 2,
            "field": "example_id",
            "reason": "duplicate example_id 'e2' (first at file f.parquet, row 1)",
        },
    ]
    json.dumps(issues.skipped())  # serialisable for info
    assert sum("skipping f.parquet row" in r.message for r in caplog.records) == 2


def test_issue_log_without_skipping_raises_at_once():
    issues = IssueLog(skip_invalid=False)
    with pytest.raises(DataError, match=r"file a\.jsonl, row 3, field 'x': bad"):
        issues.add("a.jsonl", 3, "x", "bad")


def test_read_jsonl_numbers_lines_from_one_and_counts_blank_lines(tmp_path):
    path = tmp_path / "x.jsonl"
    path.write_text('{"a": 1}\n\n{"a": 2}\n')
    records, blank = read_jsonl(path, IssueLog())
    assert records == [(1, {"a": 1}), (3, {"a": 2})]
    assert blank == 1


@pytest.mark.parametrize(("line", "reason"), [('{"a": 1', "not valid JSON"), ("[1]", "object")])
def test_read_jsonl_bad_line_names_file_and_line(tmp_path, line, reason):
    path = tmp_path / "x.jsonl"
    path.write_text('{"a": 1}\n' + line + "\n")
    with pytest.raises(DataError) as caught:
        read_jsonl(path, IssueLog())
    assert (caught.value.file, caught.value.row, caught.value.field) == (str(path), 2, "<record>")
    assert reason in str(caught.value)


def test_read_jsonl_skips_and_reports_bad_lines(tmp_path):
    path = tmp_path / "x.jsonl"
    path.write_text('{"a": 1}\nnot json\n{"a": 3}\n')
    issues = IssueLog(skip_invalid=True)
    records, _ = read_jsonl(path, issues)
    assert [n for n, _ in records] == [1, 3]
    assert [(i["row"], i["field"]) for i in issues.skipped()] == [(2, "<record>")]


def test_fingerprint_of_one_file_is_its_sha256(tmp_path):
    path = tmp_path / "a.bin"
    payload = bytes(range(256)) * 9000  # > 1 MiB, so more than one chunk is read
    path.write_bytes(payload)
    assert fingerprint_files([path]) == hashlib.sha256(payload).hexdigest()


def test_fingerprint_of_several_files_depends_on_content_and_order(tmp_path):
    a, b = tmp_path / "a", tmp_path / "b"
    a.write_bytes(b"ab")
    b.write_bytes(b"c")
    assert fingerprint_files([a, b]) != fingerprint_files([b, a])
    # Not a hash of the concatenation: "ab"+"c" and "a"+"bc" differ.
    c, d = tmp_path / "c", tmp_path / "d"
    c.write_bytes(b"a")
    d.write_bytes(b"bc")
    assert fingerprint_files([a, b]) != fingerprint_files([c, d])
    with pytest.raises(ValueError, match="no files"):
        fingerprint_files([])


def test_frame_fingerprint_changes_with_selection_parameters():
    loader = "ragtruth/processed"
    base = frame_fingerprint("abc", loader, 1, {"split": "test", "limit": None})
    assert base == frame_fingerprint("abc", loader, 1, {"limit": None, "split": "test"})
    assert base != frame_fingerprint("abc", loader, 1, {"split": "test", "limit": 5})
    assert base != frame_fingerprint("abc", loader, 2, {"split": "test", "limit": None})
    assert base != frame_fingerprint("abd", loader, 1, {"split": "test", "limit": None})


def test_group_key_is_prefix_and_sha1_prefix():
    assert group_key("QA", "ctx") == "QA:" + hashlib.sha1(b"ctx").hexdigest()[:16]


def test_loaded_data_holds_its_parts(canonical_frame):
    loaded = LoadedData("x", canonical_frame(), ["f"], "fp", {"rows": 3})
    assert loaded.name == "x" and loaded.info["rows"] == len(loaded.frame)


def test_loaded_data_labels_its_frame_for_split_messages(canonical_frame):
    # Splitters see only the frame; the label is how their errors name the data set.
    local = LoadedData("mine", canonical_frame(), ["traffic.csv"], "fp", {"origin": "local"})
    assert local.frame.attrs["dataset"] == "mine (traffic.csv)"
    hub = LoadedData("ragtruth", canonical_frame(), ["a", "b"], "fp", {"origin": "hub"})
    assert hub.frame.attrs["dataset"] == "ragtruth"
    labelled = canonical_frame()
    labelled.attrs["dataset"] = "set by the loader"
    assert LoadedData("x", labelled, ["f"], "fp").frame.attrs["dataset"] == "set by the loader"
