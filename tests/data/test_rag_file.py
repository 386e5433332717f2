"""`rag_file`: a team's own RAG outputs as JSONL, CSV or Parquet, with strict validation."""

from __future__ import annotations

import json
from pathlib import Path

import pandas as pd
import pytest

from runner.data.hashing import group_key
from runner.data.rag_file import PASSAGE_JOIN, load_rag_file, parse_label
from runner.errors import ConfigError, DataError, DataNotFoundError
from runner.frames import REQUIRED_COLUMNS

EXAMPLE = Path(__file__).resolve().parents[1] / "fixtures" / "rag_file" / "rag_example.jsonl"
GOOD = {"id": "a1", "question": "q?", "context": "The sky is blue.", "answer": "It is blue."}


def write_jsonl(tmp_path: Path, records: list, name: str = "mine.jsonl") -> Path:
    path = tmp_path / name
    path.write_text("\n".join(r if isinstance(r, str) else json.dumps(r) for r in records) + "\n")
    return path


def test_the_documented_example_loads_into_the_canonical_frame():
    data = load_rag_file(str(EXAMPLE))
    frame = data.frame
    assert list(frame.columns) == list(REQUIRED_COLUMNS)
    assert len(frame) == 80 and data.info["labelled"] is True
    assert frame["label"].dtype == "int64" and set(frame["label"]) == {0, 1}
    assert data.info["counts_per_source"] == {"docs_search": 40, "support_bot": 40}
    assert data.info["positives"] == 40
    raw = [json.loads(line) for line in EXAMPLE.read_text().splitlines()]
    listed = next(r for r in raw if isinstance(r["context"], list))
    row = frame[frame["example_id"] == listed["id"]].iloc[0]
    assert row["context"] == PASSAGE_JOIN.join(listed["context"])
    # No group column: answers of one context share one group id, a hash of the context.
    assert row["group_id"] == group_key("ctx", row["context"])
    assert frame.groupby("group_id").size().eq(4).all()


@pytest.mark.parametrize(
    ("value", "expected"),
    [
        (1, 1),
        (0, 0),
        (1.0, 1),
        (True, 1),
        (False, 0),
        ("1", 1),
        ("0", 0),
        ("TRUE", 1),
        ("false", 0),
        ("Hallucinated", 1),
        ("faithful", 0),
        ("FAIL", 1),
        ("pass", 0),
        (2, None),
        ("maybe", None),
        (None, None),
        (float("nan"), None),
    ],
)
def test_label_spellings_map_onto_one_for_hallucinated(value, expected):
    assert parse_label(value) == expected


def test_csv_and_parquet_give_the_same_frame_as_jsonl(tmp_path):
    raw = [json.loads(line) for line in EXAMPLE.read_text().splitlines()]
    table = pd.DataFrame(raw)
    table["label"] = [str(v) for v in table["label"]]
    contexts = [
        json.dumps(r["context"]) if isinstance(r["context"], list) else r["context"] for r in raw
    ]
    csv_table = table.assign(context=contexts)
    csv_table.to_csv(tmp_path / "mine.csv", index=False)
    # Parquet holds one type per column: every context as a list of passages.
    lists = [c if isinstance(c, list) else [c] for c in table["context"]]
    table.assign(context=lists).to_parquet(tmp_path / "mine.parquet", index=False)
    want = load_rag_file(str(EXAMPLE)).frame
    for name in ("mine.csv", "mine.parquet"):
        got = load_rag_file(str(tmp_path / name)).frame
        pd.testing.assert_frame_equal(got, want, check_dtype=True)


def test_columns_map_other_names_onto_the_fields(tmp_path):
    rec = {"rid": 7, "q": "q?", "ctx": ["P one.", "P two."], "resp": "One.", "y": "FAIL"}
    path = write_jsonl(tmp_path, [rec])
    data = load_rag_file(
        str(path),
        columns={"id": "rid", "question": "q", "context": "ctx", "answer": "resp", "label": "y"},
    )
    row = data.frame.iloc[0]
    assert (row["example_id"], row["label"], row["context"]) == ("7", 1, "P one.\n\nP two.")
    assert (row["source"], row["task"]) == ("unspecified", "all")


def test_a_file_without_labels_loads_with_missing_labels(tmp_path):
    data = load_rag_file(str(write_jsonl(tmp_path, [GOOD])))
    assert data.info["labelled"] is False
    assert data.frame["label"].isna().all() and data.frame["label"].dtype == "Int64"


@pytest.mark.parametrize(
    ("record", "field", "needle"),
    [
        ({**GOOD, "answer": ""}, "answer", "non-empty string"),
        ({**GOOD, "context": []}, "context", "at least one passage"),
        ({**GOOD, "context": ["ok", ""]}, "context", "passage 2"),
        ({**GOOD, "label": "unsure"}, "label", "FAIL/PASS"),
        ({**GOOD, "id": ""}, "id", "non-empty"),
        ({**GOOD, "question": 3}, "question", "must be a string"),
        ({**GOOD, "source": 3.5}, "source", "non-empty string"),
    ],
)
def test_a_bad_row_names_file_line_and_field(tmp_path, record, field, needle):
    path = write_jsonl(
        tmp_path,
        [
            {**GOOD, "id": "a0", "label": 0},
            {**record, "label": 1} if "label" not in record else record,
        ],
    )
    with pytest.raises(DataError) as err:
        load_rag_file(str(path))
    assert err.value.file == str(path) and err.value.row == 2 and err.value.field == field
    assert needle in str(err.value)


def test_header_problems_name_the_column(tmp_path):
    missing = write_jsonl(tmp_path, [{k: v for k, v in GOOD.items() if k != "answer"}])
    with pytest.raises(DataError, match="required field missing") as err:
        load_rag_file(str(missing))
    assert (err.value.row, err.value.field) == ("header", "answer")
    extra = write_jsonl(tmp_path, [{**GOOD, "lable": 1}], "extra.jsonl")
    with pytest.raises(DataError, match=r"unknown column\(s\) \['lable'\]") as err:
        load_rag_file(str(extra))
    assert err.value.field == "lable"
    assert load_rag_file(str(extra), extra_columns="ignore").info["labelled"] is False
    with pytest.raises(DataError, match="does not have"):
        load_rag_file(str(extra), columns={"label": "y"})


def test_duplicate_ids_and_skip_invalid_count_and_list_every_bad_row(tmp_path):
    records = [
        {**GOOD, "label": 0},
        {**GOOD, "label": 1},
        {**GOOD, "id": "a2", "answer": " ", "label": 1},
        {**GOOD, "id": "a3", "label": 1},
    ]
    path = write_jsonl(tmp_path, records)
    with pytest.raises(DataError, match="duplicate id 'a1'") as err:
        load_rag_file(str(path))
    assert err.value.row == 2
    data = load_rag_file(str(path), skip_invalid=True)
    assert data.frame["example_id"].tolist() == ["a1", "a3"]
    assert data.info["skipped_rows"] == 2
    assert [(s["row"], s["field"]) for s in data.info["skipped"]] == [(2, "id"), (3, "answer")]


def test_skip_invalid_accounts_for_every_row_read_with_its_id(tmp_path):
    records = [GOOD, {**GOOD, "id": "a2", "answer": ""}, "not json", {**GOOD, "id": "a3"}]
    data = load_rag_file(str(write_jsonl(tmp_path, records)), skip_invalid=True)
    assert (data.info["rows_read"], data.info["rows"], data.info["skipped_rows"]) == (4, 2, 2)
    assert [(s["row"], s["id"]) for s in data.info["skipped"]] == [(3, None), (2, "a2")]


@pytest.mark.parametrize("cell", ['["a", "It ships', '  [ "only one', '["a", 3'])
def test_a_csv_cell_that_starts_a_json_list_but_does_not_parse_is_an_error(tmp_path, cell):
    path = tmp_path / "mine.csv"
    pd.DataFrame([{**GOOD, "context": cell}]).to_csv(path, index=False)
    with pytest.raises(DataError, match="looks like a JSON list") as err:
        load_rag_file(str(path))
    assert (err.value.row, err.value.field) == (2, "context")


def test_a_context_that_only_starts_with_a_bracket_stays_text(tmp_path):
    path = tmp_path / "mine.csv"
    pd.DataFrame([{**GOOD, "context": "[1] The sky is blue."}]).to_csv(path, index=False)
    assert load_rag_file(str(path)).frame["context"].tolist() == ["[1] The sky is blue."]


def test_csv_rows_are_named_by_their_line_in_the_file(tmp_path):
    path = tmp_path / "mine.csv"
    path.write_text("id,question,context,answer,label\na,q,ctx,ans,1\nb,q,ctx,ans,7\n")
    with pytest.raises(DataError) as err:
        load_rag_file(str(path))
    assert (err.value.row, err.value.field) == (3, "label")


def test_a_row_after_a_multi_line_field_is_named_by_its_id_and_physical_line(tmp_path):
    # Line 1 header; record "a" spans lines 2-5 (a quoted context with a blank line inside);
    # line 6 is blank; record "b" starts on line 7. Counting records would say row 3.
    path = tmp_path / "mine.csv"
    lines = ["id,question,context,answer,label", 'a,q,"P one.', "P two.", "", 'P four.",ans,1']
    path.write_text("\n".join([*lines, "", "b,q,ctx,ans,7"]) + "\n")
    with pytest.raises(DataError, match=r"row 7 \(id 'b'\), field 'label'") as err:
        load_rag_file(str(path))
    assert (err.value.row, err.value.ident) == (7, "b")
    data = load_rag_file(str(path), skip_invalid=True)
    assert data.frame["context"].tolist() == ["P one.\nP two.\n\nP four."]
    assert [(s["row"], s["id"]) for s in data.info["skipped"]] == [(7, "b")]


def test_csv_lines_survive_crlf_doubled_quotes_and_huge_fields(tmp_path):
    # CRLF line ends, a doubled quote inside a quoted field and a field over the csv
    # module's 128 KiB default limit must not lose the line count (nor leave the limit raised).
    import csv

    limit = csv.field_size_limit()
    big = "x" * 200_000
    path = tmp_path / "mine.csv"
    path.write_bytes(
        (
            "id,question,context,answer,label\r\n"
            f'a,q,"say ""hi""\r\nthen {big}",ans,1\r\n'
            "b,q,ctx,,0\r\n"
        ).encode()
    )
    with pytest.raises(DataError, match=r"row 4 \(id 'b'\), field 'answer'"):
        load_rag_file(str(path))
    assert csv.field_size_limit() == limit


def test_a_bad_row_without_a_readable_id_is_named_by_its_line_only(tmp_path):
    path = write_jsonl(tmp_path, [GOOD, {**GOOD, "id": ""}])
    with pytest.raises(DataError) as err:
        load_rag_file(str(path))
    assert err.value.ident is None and "(id" not in str(err.value)


def test_non_utf8_bytes_name_the_line_and_byte_offset(tmp_path):
    path = tmp_path / "mine.jsonl"
    good = json.dumps(GOOD).encode() + b"\n"
    path.write_bytes(good + b'{"id": "b\xff"}\n')
    with pytest.raises(DataError, match=f"byte offset {len(good) + 9}") as err:
        load_rag_file(str(path))
    assert err.value.row == 2


def test_config_errors_come_before_reading(tmp_path):
    with pytest.raises(ConfigError, match="extension"):
        load_rag_file(str(tmp_path / "x.txt"))
    with pytest.raises(DataNotFoundError):
        load_rag_file(str(tmp_path / "x.jsonl"))
    with pytest.raises(ConfigError, match="not fields"):
        load_rag_file(str(EXAMPLE), columns={"answr": "x"})


def test_the_fingerprint_follows_bytes_and_parameters(tmp_path):
    a = load_rag_file(str(EXAMPLE))
    assert a.fingerprint == load_rag_file(str(EXAMPLE)).fingerprint
    assert a.fingerprint != load_rag_file(str(EXAMPLE), limit=10).fingerprint


def test_a_file_without_ids_gets_stable_content_ids_and_says_so(tmp_path):
    records = [{k: v for k, v in r.items() if k != "id"} for r in (GOOD, {**GOOD, "answer": "X."})]
    data = load_rag_file(str(write_jsonl(tmp_path, records)))
    expected = group_key("content", "\x1f".join(("q?", "The sky is blue.", "It is blue.")))
    assert data.frame["example_id"].tolist()[0] == expected
    assert data.info["ids"].startswith("generated: content:<sha1[:16]>")
    assert load_rag_file(str(EXAMPLE)).info["ids"] == "from the file"
    with pytest.raises(DataError, match="same question, context and answer as row 1"):
        load_rag_file(str(write_jsonl(tmp_path, [records[0], records[0]], "dup.jsonl")))


def test_a_jsonl_with_a_utf8_bom_reads_like_a_csv_with_one(tmp_path):
    path = tmp_path / "bom.jsonl"
    path.write_bytes(b"\xef\xbb\xbf" + json.dumps(GOOD).encode() + b"\n")
    assert load_rag_file(str(path)).frame["example_id"].tolist() == ["a1"]


@pytest.mark.parametrize(
    ("name", "content"),
    [("empty.jsonl", ""), ("blank.jsonl", "\n\n"), ("header.csv", "id,question,context,answer\n")],
)
def test_an_empty_or_header_only_file_says_no_rows(tmp_path, name, content):
    path = tmp_path / name
    path.write_text(content)
    with pytest.raises(DataError, match="no rows"):
        load_rag_file(str(path))
