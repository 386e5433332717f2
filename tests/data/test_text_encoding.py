"""A byte that is not UTF-8: every text loader names file, line and byte offset, or skips it."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from tests.data.test_claims import GOOD
from tests.data.test_factbench import fb_record, tree_record, write_folder

from runner.data.claims_jsonl import load_claims_jsonl
from runner.data.factbench import load_factbench
from runner.data.halubench import load_halubench
from runner.data.hri_claims import read_claims_file
from runner.data.ragtruth import load_ragtruth
from runner.data.row_issues import IssueLog
from runner.data.text_files import text_lines
from runner.errors import DataError
from runner.verifiers.tokenizer_training import read_corpus

LATIN1 = "café".encode("latin-1")  # b"caf\xe9": valid Latin-1, invalid UTF-8


def spoil_line(path: Path, line: int, token: bytes) -> int:
    """Replace the first occurrence of `token` on 1-based `line` with Latin-1 bytes; return
    the byte offset of the bad byte in the file."""
    lines = path.read_bytes().split(b"\n")
    at = lines[line - 1].index(token)
    lines[line - 1] = lines[line - 1][:at] + LATIN1 + lines[line - 1][at + len(token) :]
    path.write_bytes(b"\n".join(lines))
    return sum(len(x) + 1 for x in lines[: line - 1]) + at + 3


def test_text_lines_names_line_and_byte_offset(tmp_path):
    path = tmp_path / "t.txt"
    path.write_bytes(b"first\n" + b"s\xc3\xa9cond " + LATIN1 + b"\nthird\n")
    with pytest.raises(DataError) as err:
        list(text_lines(path))
    assert (err.value.file, err.value.row, err.value.field) == (str(path), 2, "<bytes>")
    offset = len(b"first\n") + len(b"s\xc3\xa9cond caf")
    assert f"byte e9 at byte offset {offset} of the file" in str(err.value)
    assert "(byte 11 of the line" in str(err.value)
    assert path.read_bytes()[offset] == 0xE9


def test_text_lines_skips_only_the_bad_line_when_skipping(tmp_path):
    path = tmp_path / "t.txt"
    path.write_bytes(b"first\n" + LATIN1 + b"\nthird")
    issues = IssueLog(skip_invalid=True)
    assert list(text_lines(path, issues)) == [(1, "first\n"), (3, "third")]
    assert issues.skipped_rows() == 1 and issues.skipped()[0]["row"] == 2


def _claims_file(tmp_path: Path) -> Path:
    path = tmp_path / "mine.jsonl"
    records = [{**GOOD, "claim_id": f"c{i}", "claim": f"Claim {i}."} for i in range(3)]
    path.write_text("".join(json.dumps(r) + "\n" for r in records))
    return path


def test_claims_jsonl_names_file_line_and_offset(tmp_path):
    path = _claims_file(tmp_path)
    offset = spoil_line(path, 2, b"Claim 1")
    with pytest.raises(DataError) as err:
        load_claims_jsonl(str(path))
    assert err.value.row == 2 and err.value.field == "<bytes>"
    assert f"file {path}" in str(err.value) and f"byte offset {offset} " in str(err.value)


def test_claims_jsonl_skip_invalid_skips_that_line(tmp_path):
    path = _claims_file(tmp_path)
    spoil_line(path, 2, b"Claim 1")
    loaded = load_claims_jsonl(str(path), skip_invalid=True)
    assert loaded.frame["claim_id"].tolist() == ["c0", "c2"]
    assert loaded.info["skipped_rows"] == 1
    assert loaded.info["skipped"][0]["field"] == "<bytes>"


def test_ragtruth_original_names_the_line_and_skips_it(original_dir):
    folder = original_dir()
    responses = folder / "response.jsonl"
    offset = spoil_line(responses, 3, b'"response": "')
    with pytest.raises(DataError) as err:
        load_ragtruth(path=str(folder), split="test")
    assert (err.value.file, err.value.row) == (str(responses), 3)
    assert f"byte offset {offset} " in str(err.value)
    full = load_ragtruth(path=str(original_dir()), split="test")
    spoil_line(responses, 3, b'"response": "')
    skipped = load_ragtruth(path=str(folder), split="test", skip_invalid=True)
    assert skipped.info["skipped_rows"] == 1
    assert len(skipped.frame) < len(full.frame)


def test_halubench_csv_names_the_line_and_skips_it(halubench_csv):
    path = halubench_csv()
    offset = spoil_line(path, 3, b"answer 1")  # line 3: the second data row
    with pytest.raises(DataError) as err:
        load_halubench(path=str(path))
    assert err.value.row == 3 and f"byte offset {offset} " in str(err.value)
    loaded = load_halubench(path=str(path), skip_invalid=True)
    assert "answer 1" not in loaded.frame["answer"].tolist()
    assert len(loaded.frame) == 3 and loaded.info["skipped_rows"] == 1


def test_factbench_names_the_line(tmp_path):
    folder = write_folder(tmp_path, [fb_record(), fb_record(prompt="q2?")], [tree_record()])
    offset = spoil_line(folder / "Factbench.jsonl", 2, b"q2?")
    with pytest.raises(DataError) as err:
        load_factbench(str(folder))
    assert err.value.row == 2 and f"byte offset {offset} " in str(err.value)


def test_claims_yaml_names_the_line(tmp_path):
    path = tmp_path / "claims.yaml"
    path.write_bytes(b"responses:\n  - id: r1\n    question: " + LATIN1 + b"\n")
    with pytest.raises(DataError, match=r"row 3, field '<bytes>': line 3 is not valid UTF-8"):
        read_claims_file(path)


@pytest.mark.parametrize("suffix", [".txt", ".csv", ".jsonl"])
def test_a_tokenizer_corpus_names_the_line(tmp_path, suffix):
    path = tmp_path / f"corpus{suffix}"
    body = {
        ".txt": b"one text\n" + LATIN1 + b"\n",
        ".csv": b"context,other\n" + LATIN1 + b",y\n",
        ".jsonl": b'{"context": "one text"}\n{"context": "' + LATIN1 + b'"}\n',
    }[suffix]
    path.write_bytes(body)
    with pytest.raises(DataError, match=r"row 2, field '<bytes>'"):
        read_corpus(path, columns=["context"])
