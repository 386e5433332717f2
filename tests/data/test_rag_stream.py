"""Reading a team's file in batches: the same rows, ids and problems as reading it whole."""

from __future__ import annotations

import json
from pathlib import Path

import pandas as pd
import pyarrow as pa
import pytest

from runner.data.rag_file import GENERATED_IDS, IDS_FROM_FILE, load_rag_file
from runner.data.rag_stream import (
    FrameStream,
    RagStream,
    RowStream,
    arrow_records,
    as_stream,
    open_stream,
    parquet_rows,
)
from runner.errors import ConfigError, DataError, DataNotFoundError

FIXTURE = Path(__file__).resolve().parents[1] / "fixtures" / "rag_file" / "rag_example.jsonl"


def rows(n: int, start: int = 0, **extra) -> list[dict]:
    return [
        {
            "id": f"r{i}",
            "question": f"q{i}",
            "context": f"context {i}",
            "answer": f"answer {i}",
            "source": "docs",
            **extra,
        }
        for i in range(start, start + n)
    ]


def write_jsonl(path: Path, records: list[dict], blank_after: int | None = None) -> Path:
    lines = [json.dumps(r) for r in records]
    if blank_after is not None:
        lines.insert(blank_after, "")
    path.write_text("\n".join(lines) + "\n")
    return path


def streamed(stream, batch_rows: int) -> tuple[pd.DataFrame, list[int], list[dict]]:
    frames, kept, skipped = [], [], []
    for spec in stream.plan(batch_rows):
        batch = stream.read(spec)
        frames.append(batch.frame)
        kept += batch.rows
        skipped += batch.skipped
    return pd.concat(frames, ignore_index=True), kept, skipped


@pytest.mark.parametrize("batch_rows", [1, 7, 80, 1000])
def test_batches_of_the_fixture_hold_the_rows_the_whole_file_loader_reads(batch_rows):
    whole = load_rag_file(str(FIXTURE)).frame
    frame, kept, _ = streamed(RagStream(str(FIXTURE)), batch_rows)
    pd.testing.assert_frame_equal(frame, whole)
    assert kept == list(range(1, 81))  # JSONL rows are named by their line


def test_a_parquet_file_and_a_folder_of_shards_stream_the_same_rows(tmp_path):
    canonical = load_rag_file(str(FIXTURE)).frame
    source = canonical.rename(columns={"example_id": "id", "group_id": "group"})
    source.to_parquet(tmp_path / "one.parquet", index=False)
    whole = load_rag_file(str(tmp_path / "one.parquet")).frame
    shards = tmp_path / "shards"
    shards.mkdir()
    for k, start in enumerate(range(0, len(source), 30)):
        source.iloc[start : start + 30].to_parquet(shards / f"part-{k:05d}.parquet", index=False)
    for path in (tmp_path / "one.parquet", shards):
        stream = RagStream(str(path))
        frame, _, _ = streamed(stream, 11)
        pd.testing.assert_frame_equal(frame, whole)
    specs = RagStream(str(shards)).plan(11)
    assert [(Path(s.file).name, s.start, s.stop) for s in specs[:4]] == [
        ("part-00000.parquet", 0, 11),
        ("part-00000.parquet", 11, 22),
        ("part-00000.parquet", 22, 30),
        ("part-00001.parquet", 0, 11),
    ]


def test_a_row_range_reads_only_its_rows_across_row_groups(tmp_path):
    frame = pd.DataFrame({"x": range(100)})
    frame.to_parquet(tmp_path / "f.parquet", index=False, row_group_size=15)
    assert parquet_rows(str(tmp_path / "f.parquet"), 28, 47).column("x").to_pylist() == list(
        range(28, 47)
    )


def test_a_bad_row_in_a_later_batch_names_the_file_line_and_field(tmp_path):
    records = rows(12)
    records[9]["answer"] = ""
    path = write_jsonl(tmp_path / "t.jsonl", records)
    stream = RagStream(str(path))
    specs = stream.plan(5)
    stream.read(specs[0])
    with pytest.raises(DataError, match=r"t.jsonl.*row 10.*'answer'"):
        stream.read(specs[1])
    skipping = RagStream(str(path), skip_invalid=True)
    frame, kept, skipped = streamed(skipping, 5)
    assert len(frame) == 11 and 10 not in kept
    assert skipped == [
        {
            "file": str(path),
            "row": 10,
            "field": "answer",
            "reason": "must be a non-empty string, got ''",
            "id": "r9",
        }
    ]


def test_blank_lines_keep_line_numbers_and_batches_stay_fixed(tmp_path):
    path = write_jsonl(tmp_path / "t.jsonl", rows(6), blank_after=3)
    frame, kept, _ = streamed(RagStream(str(path)), 2)
    assert kept == [1, 2, 3, 5, 6, 7] and list(frame["example_id"]) == [f"r{i}" for i in range(6)]


def test_a_field_first_seen_after_the_first_batch_fails_naming_its_line(tmp_path):
    records = rows(4) + rows(2, start=4, task="QA")
    path = write_jsonl(tmp_path / "t.jsonl", records)
    stream = RagStream(str(path))
    specs = stream.plan(4)
    with pytest.raises(DataError, match=r"row 5.*'task'.*first appears"):
        stream.read(specs[1])


def test_shards_with_other_columns_fail_naming_the_shard(tmp_path):
    folder = tmp_path / "shards"
    folder.mkdir()
    pd.DataFrame(rows(3)).to_parquet(folder / "part-0.parquet", index=False)
    pd.DataFrame(rows(3, start=3, task="QA")).to_parquet(folder / "part-1.parquet", index=False)
    with pytest.raises(DataError, match=r"part-1.parquet.*columns differ.*\['task'\]"):
        RagStream(str(folder)).plan(10)


def test_a_folder_without_shards_and_a_csv_are_said_plainly(tmp_path):
    with pytest.raises(DataNotFoundError, match=r"holds no \.parquet shards"):
        RagStream(str(tmp_path))
    with pytest.raises(ConfigError, match="streams through experiment=route"):
        load_rag_file(str(tmp_path))  # the whole-file loader reads one file
    csv = tmp_path / "t.csv"
    pd.DataFrame(rows(3)).to_csv(csv, index=False)
    loaded = open_stream(str(csv))
    assert not isinstance(loaded, RowStream) and len(loaded.frame) == 3  # a CSV is read whole


def test_the_fingerprint_is_the_whole_file_loaders(tmp_path):
    assert RagStream(str(FIXTURE)).fingerprint == load_rag_file(str(FIXTURE)).fingerprint


def test_an_in_memory_data_set_is_sliced_into_batches():
    loaded = load_rag_file(str(FIXTURE))
    stream = FrameStream(loaded)
    frame, kept, skipped = streamed(stream, 30)
    pd.testing.assert_frame_equal(frame, loaded.frame)
    assert kept == list(range(80)) and skipped == [] and stream.labelled


# ------------------------------------------------------ one interface for files and frames


def test_a_file_and_a_loaded_frame_answer_route_the_same_questions(tmp_path):
    path = write_jsonl(tmp_path / "t.jsonl", [*rows(2), {"question": "q", "answer": "a"}])
    loaded = load_rag_file(str(path), skip_invalid=True)  # the bad row: skipped, listed
    whole = as_stream(loaded)
    batches = as_stream(RagStream(str(path), skip_invalid=True))
    assert isinstance(whole, FrameStream) and not whole.reads_in_batches
    assert isinstance(batches, RagStream) and batches.reads_in_batches
    batches.plan(10)
    for stream in (whole, batches):
        assert stream.ids == IDS_FROM_FILE and stream.ids_from_file
        assert stream.where == str(path) and stream.id_field == "id"
    # what the loader found before routing: only the frame knows it; a stream finds it
    # batch by batch, as it reads
    assert whole.rows_read == 3 and [p["row"] for p in whole.loader_skipped] == [3]
    assert batches.rows_read is None and batches.loader_skipped == []


def test_ids_made_from_content_and_a_renamed_id_field_are_said_by_the_stream(tmp_path):
    no_ids = write_jsonl(tmp_path / "n.jsonl", [{k: v for k, v in r.items() if k != "id"}
                                               for r in rows(2)])  # fmt: skip
    stream = RagStream(str(no_ids))
    stream.plan(10)
    assert stream.ids == GENERATED_IDS and not stream.ids_from_file
    renamed = write_jsonl(tmp_path / "r.jsonl", [{**r, "request_id": r.pop("id")} for r in rows(2)])
    assert RagStream(str(renamed), columns={"id": "request_id"}).id_field == "request_id"


def test_arrow_records_are_the_pandas_records_value_for_value_and_type_for_type():
    plain = pa.table(
        {
            "id": pa.array([7, 8], pa.int64()),
            "question": pa.array(["q", ""]),
            "context": pa.array(["c1", "c2"], pa.large_string()),
            "label": pa.array([True, False]),
        }
    )
    nulls = plain.set_column(1, "question", pa.array(["q", None]))
    floats = plain.set_column(0, "id", pa.array([7.0, 8.5]))
    for table in (plain, nulls, floats):
        expected = table.to_pandas().to_dict("records")
        got = arrow_records(table)
        assert [list(map(type, r.values())) for r in got] == [
            list(map(type, r.values())) for r in expected
        ]
        assert str(got) == str(expected)  # NaN != NaN: compared as written
