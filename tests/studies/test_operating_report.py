"""operating_report on the fixture file: tables, source-shift rows, report.md/html, determinism."""

from __future__ import annotations

import hashlib
import json
import re
from pathlib import Path

import pyarrow.parquet as pq
import pytest
from tests.conftest import run_experiment

from runner.config import register_configs
from runner.errors import DataError
from runner.evaluation.splits import GroupLeakError

ROOT = Path(__file__).resolve().parents[2]
FIXTURE = ROOT / "tests" / "fixtures" / "rag_file" / "rag_example.jsonl"
register_configs()
pytestmark = pytest.mark.slow


def report(artifacts: Path, *overrides: str):
    quick = ("tracking=off", "study.params.timing_rows=20", "study.params.timing_repeats=1")
    return run_experiment(artifacts, "operating_report", *quick, *overrides)


def test_the_report_covers_every_gate_scope_source_and_budget(tmp_path):
    out = report(tmp_path / "a", f"dataset.path={FIXTURE}")
    cells = out.result.cells_frame()
    rows = set(cells.loc[cells["table"] == "operating", "row"])
    assert "cascade" not in set(cells["table"]) and "cascade" not in out.result.runtime
    for scope in ("Combined", "QA", "Summary", "Macro"):
        for gate in ("uncovered", "rouge_l", "ragscope_e"):
            assert f"{scope} / {gate}" in rows
    columns = set(cells.loc[cells["table"] == "operating", "column"])
    assert {"AUROC", "AP", "review precision@5%", "accepted risk@70%"} <= columns
    loso = cells[cells["table"] == "leave_source_out"]
    assert {"docs_search / ragscope_e", "support_bot / ragscope_e"} <= set(loso["row"])
    assert loso["ci_low"].notna().all()
    target = cells[cells["table"] == "target_labels"]
    assert target["row"].str.contains("k=25").any()
    assert set(out.result.runtime["gates"]) == {"uncovered", "rouge_l", "ragscope_e"}

    md = (out.output_dir / "report.md").read_text()
    assert "Leave one source out" in md and "ms/example" in md
    assert "![operating_curves](figures/operating_curves.png)" in md
    html = (out.output_dir / "report.html").read_text()
    assert "data:image/png;base64," in html and "<table>" in html

    again = report(tmp_path / "b", f"dataset.path={FIXTURE}")
    for name in ("cells.csv", "scores.parquet"):
        first = hashlib.sha256((out.output_dir / name).read_bytes()).hexdigest()
        assert first == hashlib.sha256((again.output_dir / name).read_bytes()).hexdigest()
    # The loader's in-memory data set label stays out of the written files.
    assert pq.read_metadata(out.output_dir / "scores.parquet").metadata.get(b"PANDAS_ATTRS") is None


def test_a_split_error_names_the_data_file_and_each_groups_first_row_id(tmp_path):
    # A row-level split puts answers of one context on both sides: the error must name the
    # file (not "<unnamed frame>") and a row id per group, not only the ctx:<sha1> hash.
    with pytest.raises(GroupLeakError) as err:
        report(tmp_path, f"dataset.path={FIXTURE}", "split=kfold", "study.params.time_gates=false")
    message = str(err.value)
    assert f"data set rag_file ({FIXTURE})" in message and "<unnamed frame>" not in message
    ids = {json.loads(line)["id"] for line in FIXTURE.read_text().splitlines()}
    named = re.findall(r"'ctx:[0-9a-f]{16}' \(first row '([^']+)'\)", message)
    assert len(named) == 5 and set(named) <= ids


def test_an_unlabelled_file_is_refused_naming_the_label_field(tmp_path):
    path = tmp_path / "unlabelled.jsonl"
    path.write_text('{"id": "a", "question": "q", "context": "c", "answer": "a"}\n')
    with pytest.raises(DataError, match="needs labelled rows") as err:
        report(tmp_path, f"dataset.path={path}")
    assert err.value.field == "label"


def test_a_source_with_one_context_group_is_marked_and_the_rest_is_reported(tmp_path):
    lines = FIXTURE.read_text().splitlines()
    records = [json.loads(line) for line in lines]
    solo_context = records[0]["context"]
    for r in records:
        if r["context"] == solo_context:
            r["source"] = "solo"  # four answers of one context: one group
    path = tmp_path / "solo.jsonl"
    path.write_text("".join(json.dumps(r) + "\n" for r in records))
    out = report(tmp_path / "a", f"dataset.path={path}", "study.params.time_gates=false")
    cells = out.result.cells_frame()
    marked = "(not computable: one context group)"
    for table in ("leave_source_out", "target_labels"):
        rows = cells[cells["table"] == table]
        solo = rows[rows["row"].str.startswith("solo / ")]
        assert len(solo) and solo["row"].str.endswith(marked).all() and solo["value"].isna().all()
        others = rows[~rows["row"].str.startswith("solo / ")]
        assert others["value"].notna().any()
    assert out.result.extra["data.json"]["not_computable"] == {"solo": "one context group"}
    md = (out.output_dir / "report.md").read_text()
    assert "Source `solo`: leave-source-out and target-label rows not computable" in md
