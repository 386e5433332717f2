"""RAGTruth: processed parquet, original JSONL pair, the Hub fallback, and the real splits."""

from __future__ import annotations

import hashlib
import json

import datasets
import pandas as pd
import pytest
from tests.conftest import real_data_dir

from runner.data import hub, ragtruth
from runner.data.ragtruth import load_ragtruth
from runner.errors import ConfigError, DataError, DataNotFoundError
from runner.frames import REQUIRED_COLUMNS

# --- processed parquet -------------------------------------------------------------------


def test_processed_mapping(processed_parquet):
    path = processed_parquet()
    loaded = load_ragtruth(path=path)
    frame = loaded.frame
    assert list(frame.columns[: len(REQUIRED_COLUMNS)]) == list(REQUIRED_COLUMNS)
    assert {"spans", "model", "temperature", "quality"} <= set(frame.columns)
    assert "input_str" not in frame.columns
    assert frame["example_id"].tolist() == ["10", "11", "12", "13"]
    assert frame["task"].tolist() == frame["source"].tolist() == ["QA", "QA", "Summary", "Data2txt"]
    assert frame["label"].tolist() == [0, 1, 0, 1]
    assert frame.loc[1, "spans"][0]["text"] == "5,000 km"
    assert frame.loc[1, "question"] == "how big is the reef?"
    assert frame.loc[1, "answer"] == "It spans 5,000 km."
    ctx = "passage 1:The reef spans 2,300 km."
    assert frame.loc[0, "group_id"] == "QA:" + hashlib.sha1(ctx.encode()).hexdigest()[:16]
    assert frame.loc[0, "group_id"] == frame.loc[1, "group_id"]
    assert loaded.files == [str(path)]
    assert loaded.info["origin"] == "local" and loaded.info["format"] == "processed"
    assert loaded.info["counts_per_task"] == {"Data2txt": 1, "QA": 2, "Summary": 1}
    assert loaded.info["positives_per_task"] == {"Data2txt": 1, "QA": 1, "Summary": 0}
    assert loaded.info["skipped"] == [] and loaded.info["skipped_rows"] == 0
    json.dumps(loaded.info)


def test_default_location_is_data_dir_ragtruth_split(processed_parquet, tmp_path):
    processed_parquet()
    loaded = load_ragtruth(data_dir=tmp_path)
    assert loaded.files == [str(tmp_path / "ragtruth" / "test.parquet")]


def test_env_data_dir_is_used_when_no_argument(processed_parquet, tmp_path, monkeypatch):
    processed_parquet()
    monkeypatch.setenv("RUNNER_DATA_DIR", str(tmp_path))
    assert len(load_ragtruth().frame) == 4


def test_directory_path_picks_the_split_file(processed_parquet, tmp_path):
    processed_parquet()
    assert len(load_ragtruth(path=tmp_path / "ragtruth").frame) == 4


def test_limit_keeps_first_rows_and_changes_fingerprint(processed_parquet):
    path = processed_parquet()
    full, two = load_ragtruth(path=path), load_ragtruth(path=path, limit=2)
    assert two.frame["example_id"].tolist() == ["10", "11"]
    assert full.fingerprint != two.fingerprint
    assert full.fingerprint == load_ragtruth(path=path).fingerprint


def test_fingerprint_changes_with_file_bytes(processed_parquet):
    before = load_ragtruth(path=processed_parquet()).fingerprint

    def edit(frame):
        frame.loc[0, "output"] = "It spans about 2,300 km."
        return frame

    assert load_ragtruth(path=processed_parquet(edit)).fingerprint != before


@pytest.mark.parametrize("bad", ['[{"start": 1', "{}", "not json"])
def test_malformed_hallucination_labels_names_row_and_field(processed_parquet, bad):
    def edit(frame):
        frame.loc[2, "hallucination_labels"] = bad
        return frame

    path = processed_parquet(edit)
    with pytest.raises(DataError) as caught:
        load_ragtruth(path=path)
    assert (caught.value.file, caught.value.row, caught.value.field) == (
        str(path),
        2,
        "hallucination_labels",
    )


def test_missing_processed_column_names_header(processed_parquet):
    path = processed_parquet(lambda f: f.drop(columns=["output"]))
    with pytest.raises(DataError) as caught:
        load_ragtruth(path=path)
    assert (caught.value.row, caught.value.field) == ("header", "output")


# Bad cells: {(row, column): value} written into the parquet, the message the error must
# match (None: any), and the (row, field) it must name.
BAD_CELLS = {
    "span out of range": (
        {(1, "hallucination_labels"): json.dumps([{"start": 9, "end": 400}])},
        "out of range",
        (1, "spans"),
    ),
    "empty output": (
        {(3, "output"): "", (3, "hallucination_labels"): "[]"},
        None,
        (3, "answer"),
    ),
    "duplicate id": ({(2, "id"): "10"}, "duplicate", (2, "example_id")),
    "unknown task type": ({(0, "task_type"): "Chat"}, None, (0, "task_type")),
}


@pytest.mark.parametrize(("cells", "match", "where"), BAD_CELLS.values(), ids=BAD_CELLS.keys())
def test_a_bad_cell_is_named_by_row_and_field(processed_parquet, cells, match, where):
    def edit(frame):
        for (row, column), value in cells.items():
            frame.loc[row, column] = value
        return frame

    with pytest.raises(DataError, match=match) as caught:
        load_ragtruth(path=processed_parquet(edit))
    assert (caught.value.row, caught.value.field) == where


def test_skip_invalid_counts_and_reports_every_bad_row(processed_parquet):
    def edit(frame):
        frame.loc[0, "hallucination_labels"] = "[oops"
        frame.loc[2, "context"] = "  "
        return frame

    loaded = load_ragtruth(path=processed_parquet(edit), skip_invalid=True)
    assert loaded.frame["example_id"].tolist() == ["11", "13"]
    assert loaded.info["rows"] == 2 and loaded.info["skipped_rows"] == 2
    assert [(s["row"], s["field"]) for s in loaded.info["skipped"]] == [
        (0, "hallucination_labels"),
        (2, "context"),
    ]
    json.dumps(loaded.info)


def test_bad_arguments_fail_before_reading(tmp_path):
    with pytest.raises(ConfigError, match="format"):
        load_ragtruth(path=tmp_path, format="csv")
    with pytest.raises(ConfigError, match="limit"):
        load_ragtruth(path=tmp_path, limit=0)


def test_explicit_missing_path_does_not_fall_back(tmp_path, monkeypatch):
    monkeypatch.setattr(ragtruth, "load_hub_split", _must_not_be_called)
    with pytest.raises(DataNotFoundError, match="does not exist"):
        load_ragtruth(path=tmp_path / "nope.parquet")
    with pytest.raises(DataNotFoundError, match="holds neither"):
        load_ragtruth(path=tmp_path)


# --- original format (response.jsonl + source_info.jsonl) ---------------------------------


def test_original_fixture_maps_to_canonical(fixtures_dir):
    loaded = load_ragtruth(path=fixtures_dir / "ragtruth_original")
    frame = loaded.frame.set_index("example_id")
    assert loaded.info["format"] == "original" and loaded.info["split"] == "test"
    assert len(frame) == 6  # the 2 train responses are left out
    assert frame["label"].to_dict() == {"101": 0, "102": 1, "103": 0, "104": 1, "105": 0, "106": 1}
    assert frame["group_id"].tolist() == ["QA:s1"] * 2 + ["Summary:s2"] * 2 + ["Data2txt:s3"] * 2
    assert frame.loc["101", "question"] == "how to cook beets and beet greens"
    assert frame.loc["101", "context"].startswith("passage 1:Beets can be roasted whole.")
    assert frame.loc["103", "question"] == ""
    assert frame.loc["103", "context"].startswith("The city council voted 7 to 2")
    assert frame.loc["105", "question"] == ""
    assert frame.loc["105", "context"].startswith("{'name': 'Harbor Cafe'")
    assert "'Music': None" in frame.loc["105", "context"]  # the prompt's Python repr
    assert frame.loc["104", "source_corpus"] == "Recent News"
    assert frame.loc["102", "model"] == "llama-2-7b-chat"
    spans = frame.loc["102", "spans"]
    assert [s["text"] for s in spans] == ["Boil the beets for 20 minutes", "butter"]
    assert frame["task"].equals(frame["source"])
    assert len(loaded.files) == 2


def test_original_train_split_and_response_file_path(fixtures_dir):
    responses = fixtures_dir / "ragtruth_original" / "response.jsonl"
    loaded = load_ragtruth(split="train", path=responses)
    assert loaded.frame["example_id"].tolist() == ["107", "108"]
    assert loaded.frame["label"].tolist() == [0, 1]  # implicit_true spans still count


def test_an_unknown_split_is_a_config_error_listing_the_splits_not_a_hub_download(
    original_dir, tmp_path
):
    for path in (original_dir(), None):
        with pytest.raises(ConfigError, match=r"split='dev' does not exist; valid splits: train"):
            load_ragtruth(split="dev", path=path, data_dir=tmp_path / "nothing")


def test_a_split_file_of_the_other_split_is_refused_naming_both(processed_parquet):
    test_file = processed_parquet()  # tmp/.../test.parquet
    assert test_file.name == "test.parquet"
    with pytest.raises(ConfigError) as err:
        load_ragtruth(split="train", path=str(test_file))
    message = str(err.value)
    assert "dataset.split=train" in message and f"dataset.path={test_file}" in message
    assert "set dataset.split=test" in message
    assert load_ragtruth(split="test", path=str(test_file)).info["split"] == "test"


def test_an_original_file_without_the_split_lists_the_splits_present(original_dir):
    def only_test(kind, lines):
        return [ln for ln in lines if kind != "response" or '"split": "test"' in ln]

    with pytest.raises(DataError, match="splits present: test"):
        load_ragtruth(split="train", path=original_dir(only_test))


def test_original_malformed_line_names_file_and_line(original_dir):
    def edit(kind, lines):
        if kind == "response":
            lines[2] = lines[2][:40]  # truncated JSON on line 3
        return lines

    path = original_dir(edit)
    with pytest.raises(DataError) as caught:
        load_ragtruth(path=path)
    err = caught.value
    assert (err.file, err.row, err.field) == (str(path / "response.jsonl"), 3, "<record>")
    assert "not valid JSON" in str(err) and "response.jsonl" in str(err)


def test_original_malformed_source_line_and_skip(original_dir):
    def edit(kind, lines):
        if kind == "source_info":
            lines[1] = "{broken"  # source s2 (Summary), line 2
        return lines

    path = original_dir(edit)
    with pytest.raises(DataError) as caught:
        load_ragtruth(path=path)
    assert (caught.value.file, caught.value.row) == (str(path / "source_info.jsonl"), 2)

    loaded = load_ragtruth(path=path, skip_invalid=True)
    assert sorted(loaded.frame["example_id"]) == ["101", "102", "105", "106"]
    skipped = [(s["file"].rsplit("/", 1)[-1], s["row"], s["field"]) for s in loaded.info["skipped"]]
    assert skipped == [
        ("source_info.jsonl", 2, "<record>"),
        ("response.jsonl", 3, "source_id"),
        ("response.jsonl", 4, "source_id"),
    ]
    assert loaded.info["skipped_rows"] == 3


def test_original_span_out_of_range_names_line(original_dir):
    def edit(kind, lines):
        if kind == "response":
            record = json.loads(lines[1])
            record["labels"][0]["end"] = 10_000
            lines[1] = json.dumps(record)
        return lines

    path = original_dir(edit)
    with pytest.raises(DataError, match="out of range") as caught:
        load_ragtruth(path=path)
    assert (caught.value.file, caught.value.row, caught.value.field) == (
        str(path / "response.jsonl"),
        2,
        "spans",
    )


def test_original_qa_source_without_question(original_dir):
    def edit(kind, lines):
        if kind == "source_info":
            record = json.loads(lines[0])
            del record["source_info"]["question"]
            lines[0] = json.dumps(record)
        return lines

    with pytest.raises(DataError) as caught:
        load_ragtruth(path=original_dir(edit))
    assert (caught.value.row, caught.value.field) == (1, "source_info.question")


def test_original_duplicate_response_id(original_dir):
    def edit(kind, lines):
        if kind == "response":
            lines[3] = lines[3].replace('"id": "104"', '"id": "101"')
        return lines

    with pytest.raises(DataError, match="duplicate") as caught:
        load_ragtruth(path=original_dir(edit))
    assert (caught.value.row, caught.value.field) == (4, "example_id")


def test_original_format_has_no_hub_fallback(tmp_path, monkeypatch):
    monkeypatch.setattr(ragtruth, "load_hub_split", _must_not_be_called)
    with pytest.raises(DataNotFoundError, match="no Hub fallback"):
        load_ragtruth(format="original", data_dir=tmp_path)


# --- the Hub fallback --------------------------------------------------------------------


def test_offline_without_data_fails_at_once_with_instructions(tmp_path, monkeypatch):
    monkeypatch.setenv("HF_HUB_OFFLINE", "1")
    monkeypatch.setenv("HF_DATASETS_OFFLINE", "1")
    monkeypatch.setattr(hub, "hub_reachable", _must_not_be_called)
    monkeypatch.setattr(datasets, "load_dataset", _must_not_be_called)
    with pytest.raises(DataNotFoundError) as caught:  # no probe, no download: at once
        load_ragtruth(data_dir=tmp_path)
    message = str(caught.value)
    assert "RUNNER_DATA_DIR" in message and "ragtruth/test.parquet" in message
    assert "wandb/RAGTruth-processed" in message and "python -c" in message
    assert "HF_HUB_OFFLINE is set" in message


def test_unreachable_hub_fails_without_calling_datasets(tmp_path, monkeypatch):
    monkeypatch.delenv("HF_HUB_OFFLINE", raising=False)
    monkeypatch.delenv("HF_DATASETS_OFFLINE", raising=False)
    monkeypatch.setattr(hub, "hub_reachable", lambda timeout=3.0: False)
    monkeypatch.setattr(datasets, "load_dataset", _must_not_be_called)
    with pytest.raises(DataNotFoundError, match="unreachable"):
        load_ragtruth(split="train", data_dir=tmp_path, hub_id="me/my-ragtruth")


def test_online_loads_from_the_hub(processed_parquet, tmp_path, monkeypatch):
    table = pd.read_parquet(processed_parquet())
    saved = tmp_path / "hub_cache"
    datasets.Dataset.from_pandas(table, preserve_index=False).save_to_disk(saved)
    calls = []

    def fake_load_dataset(hub_id, split):
        calls.append((hub_id, split))
        return datasets.load_from_disk(saved)

    monkeypatch.delenv("HF_HUB_OFFLINE", raising=False)
    monkeypatch.delenv("HF_DATASETS_OFFLINE", raising=False)
    monkeypatch.setattr(hub, "hub_reachable", lambda timeout=3.0: True)
    monkeypatch.setattr(datasets, "load_dataset", fake_load_dataset)
    loaded = load_ragtruth(data_dir=tmp_path / "empty")
    assert calls == [("wandb/RAGTruth-processed", "test")]
    assert loaded.info["origin"] == "hub" and loaded.info["hub_id"] == "wandb/RAGTruth-processed"
    assert loaded.frame["label"].tolist() == [0, 1, 0, 1]
    assert loaded.files and all(f.startswith(str(saved)) for f in loaded.files)


def test_hub_failure_becomes_data_not_found(tmp_path, monkeypatch):
    def broken(hub_id, split):
        raise ConnectionError("reset by peer")

    monkeypatch.delenv("HF_HUB_OFFLINE", raising=False)
    monkeypatch.delenv("HF_DATASETS_OFFLINE", raising=False)
    monkeypatch.setattr(hub, "hub_reachable", lambda timeout=3.0: True)
    monkeypatch.setattr(datasets, "load_dataset", broken)
    with pytest.raises(DataNotFoundError, match="reset by peer"):
        load_ragtruth(data_dir=tmp_path)


# --- the real data -----------------------------------------------------------------------


def test_real_test_split(data_dir):
    loaded = load_ragtruth(split="test", data_dir=data_dir)
    frame = loaded.frame
    assert len(frame) == 2700
    sizes = frame.groupby("group_id").size()
    assert len(sizes) == 450 and set(sizes) == {6}
    assert frame.groupby("group_id")["task"].nunique().max() == 1
    assert frame["example_id"].is_unique
    rates = frame.groupby("task")["label"].mean().round(3).to_dict()
    assert rates == {"QA": 0.178, "Summary": 0.227, "Data2txt": 0.643}
    assert loaded.info["counts_per_task"] == {"Data2txt": 900, "QA": 900, "Summary": 900}
    assert loaded.info["skipped_rows"] == 0
    assert sorted(frame["model"].unique()) == sorted(
        [
            "gpt-4-0613",
            "gpt-3.5-turbo-0613",
            "mistral-7B-instruct",
            "llama-2-7b-chat",
            "llama-2-13b-chat",
            "llama-2-70b-chat",
        ]
    )
    assert loaded.info["files_sha256"][str(data_dir / "ragtruth" / "test.parquet")].startswith(
        "2fc4fb70"
    )


def test_real_train_split(data_dir):
    loaded = load_ragtruth(split="train", data_dir=data_dir)
    assert len(loaded.frame) == 15090
    assert loaded.info["skipped_rows"] == 0
    assert loaded.frame["example_id"].is_unique


def _must_not_be_called(*args, **kwargs):
    raise AssertionError("must not be called")


def test_all_rows_invalid_is_an_error_even_when_skipping(processed_parquet):
    def edit(frame):
        frame["hallucination_labels"] = "[oops"
        return frame

    with pytest.raises(DataError, match=r"no valid rows to load \(4 invalid rows skipped\)"):
        load_ragtruth(path=processed_parquet(edit), skip_invalid=True)


def test_original_numeric_ids_become_strings(original_dir):
    def edit(kind, lines):
        out = []
        for line in lines:
            record = json.loads(line)
            record["source_id"] = int(record["source_id"][1:])
            if kind == "response":
                record["id"] = int(record["id"])
            out.append(json.dumps(record))
        return out

    frame = load_ragtruth(path=original_dir(edit)).frame
    assert frame["example_id"].tolist()[:2] == ["101", "102"]
    assert frame["group_id"].tolist()[:2] == ["QA:1", "QA:1"]


@pytest.mark.slow
def test_the_pooled_splits_are_one_frame_that_keeps_every_row_and_group():
    from runner.data.ragtruth import load_ragtruth_pooled

    data_dir = str(real_data_dir())
    pooled = load_ragtruth_pooled(data_dir=data_dir)
    train = load_ragtruth(split="train", data_dir=data_dir)
    test = load_ragtruth(split="test", data_dir=data_dir)
    assert len(pooled.frame) == len(train.frame) + len(test.frame) == 17790
    assert pooled.frame["group_id"].nunique() == (
        train.frame["group_id"].nunique() + test.frame["group_id"].nunique()
    )
    assert pooled.info["splits"] == ["train", "test"]
    assert pooled.fingerprint not in (train.fingerprint, test.fingerprint)
    with pytest.raises(ConfigError, match="distinct"):
        load_ragtruth_pooled(splits=["test", "test"], data_dir=data_dir)


def test_pooled_splits_that_share_a_row_are_refused_naming_it(tmp_path):
    from runner.data.ragtruth import load_ragtruth_pooled

    rows = pd.read_parquet(real_data_dir() / "ragtruth" / "test.parquet").head(12)
    rows.to_parquet(tmp_path / "test.parquet")
    rows.tail(2).to_parquet(tmp_path / "train.parquet")
    with pytest.raises(DataError, match="in split 'train' and in split 'test'"):
        load_ragtruth_pooled(path=tmp_path)
