"""HaluBench: CSV sample, parquet, source selection, id derivation, the Hub, the real sample."""

from __future__ import annotations

import hashlib
import json

import datasets
import pandas as pd
import pytest

from runner.data import halubench, hub
from runner.data.halubench import load_halubench
from runner.errors import ConfigError, DataError, DataNotFoundError
from runner.frames import REQUIRED_COLUMNS


def test_csv_mapping(halubench_csv):
    path = halubench_csv()
    loaded = load_halubench(path=path)
    frame = loaded.frame
    assert list(frame.columns[: len(REQUIRED_COLUMNS)]) == list(REQUIRED_COLUMNS)
    assert frame["example_id"].tolist() == ["RAGTruth-0", "RAGTruth-1", "pubmedQA-2", "pubmedQA-3"]
    assert frame["label"].tolist() == [0, 1, 0, 1]  # PASS = faithful, FAIL = hallucinated
    assert frame["task"].tolist() == frame["source"].tolist()
    assert frame.loc[0, "context"] == "passage 1:Text of RAGTruth passage 0."
    passage = frame.loc[2, "context"]
    assert frame.loc[2, "group_id"] == "pubmedQA:" + hashlib.sha1(passage.encode()).hexdigest()[:16]
    assert frame.loc[0, "group_id"] == frame.loc[1, "group_id"]
    assert frame["hub_row"].tolist() == [100, 101, 102, 103]
    assert "spans" not in frame.columns
    info = loaded.info
    assert info["origin"] == "local" and info["id_scheme"] == "id"
    assert info["sources_found"] == ["RAGTruth", "pubmedQA"]
    assert info["counts_per_source"] == {"RAGTruth": 2, "pubmedQA": 2}
    json.dumps(info)


def test_text_cells_stay_text(halubench_csv):
    # "NA", "None" and "1" are answers, not missing values or numbers.
    def edit(frame):
        frame["answer"] = ["NA", "None", "1", "null"]
        return frame

    assert load_halubench(path=halubench_csv(edit)).frame["answer"].tolist() == [
        "NA",
        "None",
        "1",
        "null",
    ]


@pytest.mark.parametrize("bad", ["pass", "UNKNOWN", ""])
def test_label_other_than_pass_fail_names_row_and_field(halubench_csv, bad):
    def edit(frame):
        frame.loc[2, "label"] = bad
        return frame

    path = halubench_csv(edit)
    with pytest.raises(DataError, match="PASS") as caught:
        load_halubench(path=path)
    assert (caught.value.file, caught.value.row, caught.value.field) == (str(path), 2, "label")


def test_empty_answer_and_missing_column(halubench_csv):
    def edit(frame):
        frame.loc[1, "answer"] = ""
        return frame

    with pytest.raises(DataError) as caught:
        load_halubench(path=halubench_csv(edit))
    assert (caught.value.row, caught.value.field) == (1, "answer")

    with pytest.raises(DataError) as caught:
        load_halubench(path=halubench_csv(lambda f: f.drop(columns=["passage"])))
    assert (caught.value.row, caught.value.field) == ("header", "passage")


def test_skip_invalid_reports_each_row_once(halubench_csv):
    def edit(frame):
        frame.loc[0, "label"] = "MAYBE"
        frame.loc[3, "passage"] = ""
        return frame

    loaded = load_halubench(path=halubench_csv(edit), skip_invalid=True)
    assert loaded.frame["example_id"].tolist() == ["RAGTruth-1", "pubmedQA-2"]
    assert loaded.info["skipped_rows"] == 2
    assert [(s["row"], s["field"]) for s in loaded.info["skipped"]] == [
        (0, "label"),
        (3, "context"),
    ]


def test_sources_restricts_and_reports_missing(halubench_csv):
    loaded = load_halubench(path=halubench_csv(), sources=["pubmedQA", "DROP"])
    assert set(loaded.frame["source"]) == {"pubmedQA"}
    assert loaded.info["sources_missing"] == ["DROP"]
    assert loaded.info["rows_excluded_by_source"] == 2
    assert loaded.info["sources_found"] == ["RAGTruth", "pubmedQA"]
    assert load_halubench(path=halubench_csv(), sources="RAGTruth").info["rows"] == 2


def test_sources_none_present_is_an_error(halubench_csv):
    with pytest.raises(DataNotFoundError, match=r"sources present: \['RAGTruth', 'pubmedQA'\]"):
        load_halubench(path=halubench_csv(), sources=["DROP"])


def test_require_sources_names_missing_and_present(halubench_csv):
    with pytest.raises(DataNotFoundError) as caught:
        load_halubench(path=halubench_csv(), require_sources=["RAGTruth", "DROP", "covidQA"])
    message = str(caught.value)
    assert "['DROP', 'covidQA']" in message
    assert "sources present: ['RAGTruth', 'pubmedQA']" in message
    assert "PatronusAI/HaluBench" in message
    assert load_halubench(path=halubench_csv(), require_sources=["pubmedQA"]).info["rows"] == 4


def test_require_sources_outside_sources_is_a_config_error(halubench_csv):
    with pytest.raises(ConfigError, match="excluded"):
        load_halubench(path=halubench_csv(), sources=["RAGTruth"], require_sources=["pubmedQA"])


def test_limit_applies_after_the_source_filter(halubench_csv):
    loaded = load_halubench(path=halubench_csv(), sources=["pubmedQA"], limit=1)
    assert loaded.frame["example_id"].tolist() == ["pubmedQA-2"]
    with pytest.raises(ConfigError):
        load_halubench(path=halubench_csv(), limit=0)


def test_colliding_ids_are_derived_as_source_and_id(halubench_csv):
    def edit(frame):
        frame["id"] = ["7", "8", "7", "8"]  # unique within each source only
        return frame

    loaded = load_halubench(path=halubench_csv(edit))
    assert loaded.info["id_scheme"] == "source:id"
    assert loaded.frame["example_id"].tolist() == [
        "RAGTruth:7",
        "RAGTruth:8",
        "pubmedQA:7",
        "pubmedQA:8",
    ]
    # A row keeps its id whichever sources are selected.
    only = load_halubench(path=halubench_csv(edit), sources=["pubmedQA"])
    assert only.frame["example_id"].tolist() == ["pubmedQA:7", "pubmedQA:8"]


def test_ids_colliding_within_a_source_get_occurrence_numbers(halubench_csv):
    def edit(frame):
        frame["id"] = ["7", "7", "7", "8"]
        return frame

    loaded = load_halubench(path=halubench_csv(edit))
    assert loaded.info["id_scheme"] == "source:id#n"
    assert loaded.frame["example_id"].tolist() == [
        "RAGTruth:7#1",
        "RAGTruth:7#2",
        "pubmedQA:7#1",
        "pubmedQA:8#1",
    ]


def test_empty_id_is_an_error_even_when_ids_collide(halubench_csv):
    def edit(frame):
        frame["id"] = ["7", "7", "", "8"]
        return frame

    with pytest.raises(DataError) as caught:
        load_halubench(path=halubench_csv(edit))
    assert (caught.value.row, caught.value.field) == (2, "example_id")


def test_parquet_full_set_layout(halubench_csv, tmp_path):
    # The Hub's shard has no "Unnamed: 0" column.
    frame = pd.read_csv(halubench_csv()).drop(columns=["Unnamed: 0"])
    path = tmp_path / "halubench_full.parquet"
    frame.to_parquet(path, index=False)
    loaded = load_halubench(path=path)
    assert loaded.info["rows"] == 4 and "hub_row" not in loaded.frame.columns


def test_directory_reads_every_file_and_names_the_file_at_fault(halubench_csv, tmp_path):
    halubench_csv(name="a.csv")

    def edit(frame):
        frame["id"] = [f"other-{i}" for i in range(4)]
        frame.loc[3, "label"] = "?"
        return frame

    bad = halubench_csv(edit, name="b.csv")
    with pytest.raises(DataError) as caught:
        load_halubench(path=tmp_path)
    assert (caught.value.file, caught.value.row) == (str(bad), 3)
    loaded = load_halubench(path=tmp_path, skip_invalid=True)
    assert loaded.info["rows"] == 7 and len(loaded.files) == 2


def test_duplicate_ids_across_files_are_derived(halubench_csv, tmp_path):
    halubench_csv(name="a.csv")
    halubench_csv(name="b.csv")  # the same rows again
    loaded = load_halubench(path=tmp_path)
    assert loaded.info["id_scheme"] == "source:id#n"
    assert loaded.frame["example_id"].is_unique


def test_bad_paths(tmp_path):
    with pytest.raises(DataNotFoundError, match="does not exist"):
        load_halubench(path=tmp_path / "nope.csv")
    (tmp_path / "x.txt").write_text("x")
    with pytest.raises(ConfigError, match="neither"):
        load_halubench(path=tmp_path / "x.txt")
    with pytest.raises(DataNotFoundError, match=r"no \.csv or \.parquet"):
        load_halubench(path=tmp_path)


def test_offline_without_data_fails_at_once(tmp_path, monkeypatch):
    monkeypatch.setenv("HF_HUB_OFFLINE", "1")
    monkeypatch.setattr(hub, "hub_reachable", _must_not_be_called)
    monkeypatch.setattr(datasets, "load_dataset", _must_not_be_called)
    with pytest.raises(DataNotFoundError) as caught:  # no probe, no download: at once
        load_halubench(data_dir=tmp_path)
    assert "RUNNER_DATA_DIR" in str(caught.value) and "PatronusAI/HaluBench" in str(caught.value)


def test_online_loads_the_hub_test_split(halubench_csv, tmp_path, monkeypatch):
    table = pd.read_csv(halubench_csv()).drop(columns=["Unnamed: 0"])
    calls = []

    def fake_load_dataset(hub_id, split):
        calls.append((hub_id, split))
        return datasets.Dataset.from_pandas(table, preserve_index=False)

    monkeypatch.delenv("HF_HUB_OFFLINE", raising=False)
    monkeypatch.delenv("HF_DATASETS_OFFLINE", raising=False)
    monkeypatch.setattr(hub, "hub_reachable", lambda timeout=3.0: True)
    monkeypatch.setattr(datasets, "load_dataset", fake_load_dataset)
    loaded = load_halubench(data_dir=tmp_path)
    assert calls == [("PatronusAI/HaluBench", "test")]
    assert loaded.info["origin"] == "hub" and loaded.info["rows"] == 4
    assert len(loaded.fingerprint) == 64


def test_default_file_is_the_1000_row_sample():
    assert halubench.DEFAULT_FILE == "halubench_sample_1000.csv"


def test_real_sample(data_dir):
    loaded = load_halubench(data_dir=data_dir)
    frame = loaded.frame
    counts = frame.groupby("source")["label"].agg(["size", "sum"])
    assert counts["size"].to_dict() == {
        "FinanceBench": 250,
        "RAGTruth": 250,
        "halueval": 250,
        "pubmedQA": 250,
    }
    assert set(counts["sum"]) == {125}
    assert loaded.info["sources_found"] == ["FinanceBench", "RAGTruth", "halueval", "pubmedQA"]
    assert loaded.info["id_scheme"] == "id" and loaded.info["skipped_rows"] == 0
    assert frame["example_id"].is_unique


def test_real_samples_together_and_missing_sources(data_dir):
    both = load_halubench(path=data_dir / "halubench")
    assert both.info["rows"] == 1016 and both.info["id_scheme"] == "id"
    with pytest.raises(DataNotFoundError, match=r"\['DROP', 'covidQA'\]"):
        load_halubench(data_dir=data_dir, require_sources=["DROP", "covidQA"])


def _must_not_be_called(*args, **kwargs):
    raise AssertionError("must not be called")


def test_integer_ids_in_parquet_become_strings(halubench_csv, tmp_path):
    frame = pd.read_csv(halubench_csv())
    frame["id"] = [5, 6, 7, 8]
    path = tmp_path / "ints.parquet"
    frame.to_parquet(path, index=False)
    assert load_halubench(path=path).frame["example_id"].tolist() == ["5", "6", "7", "8"]
