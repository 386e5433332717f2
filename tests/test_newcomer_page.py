"""docs/architecture.md's newcomer page is followed as written: a gate, a data set, a study
and a verifier.

Every block of the page's first section whose first line names a file (``# mylab/x.py``,
``# conf/gate/x.yaml``) is copied, without that line, into a temporary folder, and every
``# run:`` command is run there as a user would run it (``python -m runner``, the folder as
the working directory, its ``mylab`` package on ``PYTHONPATH``), with only where the outputs
go and tracking off added.
A page that drifts from the code fails here.
"""

from __future__ import annotations

import importlib
import os
import re
import subprocess
import sys
from pathlib import Path

import pandas as pd
import pytest
from tests.conftest import ROOT, real_data_dir
from tests.verifiers.conftest import TINY_ARCH
from tests.verifiers.conftest import _save as save_model

from runner.data import load_ragtruth
from runner.errors import DataError

PAGE = ROOT / "docs" / "architecture.md"
BLOCK = re.compile(r"```(python|yaml|bash)\n(.*?)```", re.S)


def _section() -> str:
    text = PAGE.read_text()
    return text[text.index("## Adding a part") : text.index("## The rooms")]


def _blocks() -> list[tuple[str, str]]:
    return [(kind, body) for kind, body in BLOCK.findall(_section())]


def files() -> dict[str, str]:
    """Each block that names its file on its first line: path -> the rest of the block."""
    out = {}
    for kind, body in _blocks():
        first, _, rest = body.partition("\n")
        if kind != "bash" and first.startswith("# ") and "/" in first:
            out[first[2:].strip()] = rest
    return out


def commands() -> list[str]:
    """Each ``# run:`` command, its continuation lines joined."""
    return [
        body.split("\n", 1)[1].replace("\\\n", " ").strip()
        for kind, body in _blocks()
        if kind == "bash" and body.startswith("# run:")
    ]


def test_the_page_names_a_file_for_every_block_and_a_command_for_every_example():
    assert sorted(files()) == [
        "conf/dataset/qa_logs.yaml",
        "conf/experiment/length_baseline.yaml",
        "conf/gate/digit_share.yaml",
        "conf/verifier/nli_contradiction.yaml",
        "mylab/contradiction.py",
        "mylab/digits.py",
        "mylab/length_baseline.py",
        "mylab/qa_logs.py",
    ]
    assert len(commands()) == 4


@pytest.fixture(scope="module")
def workspace(tmp_path_factory) -> Path:
    """The page's files in a fresh folder, and the CSV its data-set example reads."""
    root = tmp_path_factory.mktemp("newcomer")
    for path, text in files().items():
        (root / path).parent.mkdir(parents=True, exist_ok=True)
        (root / path).write_text(text)
    (root / "mylab" / "__init__.py").write_text("")
    rows = load_ragtruth(split="test", data_dir=real_data_dir()).frame.groupby("task").head(90)
    logs = pd.DataFrame(
        {
            "id": rows["example_id"],
            "topic": rows["task"],
            "question": rows["question"],
            "passage": rows["context"],
            # cut to 40 words: the tiny test tokenizer splits words into many pieces, and a
            # verifier never truncates the answer (its window must hold it)
            "response": rows["answer"].str.split().str[:40].str.join(" "),
            "verdict": rows["label"].map({0: "ok", 1: "hallucinated"}),
        }
    )
    logs.to_csv(root / "qa_logs.csv", index=False)
    # the verifier's model: a tiny DeBERTa-v2 NLI cross-encoder with random weights, saved
    # as a user's local copy of the real one would be
    from transformers import DebertaV2ForSequenceClassification

    save_model(DebertaV2ForSequenceClassification, TINY_ARCH["deberta"], root / "nli-model")
    return root


def _run(command: str, root: Path) -> pd.DataFrame:
    env = {
        **os.environ,
        "PYTHONPATH": os.pathsep.join([str(root), str(ROOT / "src")]),
        "RUNNER_ARTIFACTS_DIR": str(root / "artifacts"),
    }
    line = command.replace("python -m runner", f"{sys.executable} -m runner", 1)
    done = subprocess.run(
        ["bash", "-c", f"{line} tracking=off progress=false"],
        cwd=root, env=env, capture_output=True, text=True, timeout=600,
    )  # fmt: skip
    assert done.returncode == 0, done.stderr[-3000:]
    experiment = re.search(r"experiment=(\S+)", command).group(1)
    return pd.read_csv(root / "artifacts" / experiment / "latest" / "cells.csv")


@pytest.mark.slow
def test_the_new_gate_is_scored_beside_rq1s(workspace):
    cells = _run(commands()[0], workspace)
    mine = cells[cells.column.str.startswith("digit_share/")]
    assert len(mine) > 0 and mine.value.notna().all()


@pytest.mark.slow
def test_a_mistyped_setting_of_the_new_gate_fails_before_any_data(workspace):
    env = {
        **os.environ,
        "PYTHONPATH": os.pathsep.join([str(workspace), str(ROOT / "src")]),
        "RUNNER_ARTIFACTS_DIR": str(workspace / "artifacts"),  # Hydra's run folder goes there
    }
    line = commands()[0].replace("python -m runner", f"{sys.executable} -m runner", 1)
    done = subprocess.run(
        ["bash", "-c", f"{line} gates.digit_share.weight=abc dataset.path=/nowhere tracking=off"],
        cwd=workspace, env=env, capture_output=True, text=True, timeout=300,
    )  # fmt: skip
    assert done.returncode == 2
    assert done.stderr.startswith("error: gates.digit_share.weight: Value 'abc'")


@pytest.mark.slow
def test_rq1_runs_on_the_new_data_set(workspace):
    cells = _run(commands()[1], workspace)
    assert {"QA", "Summary", "Data2txt", "Combined"} <= set(cells.row)  # topic is the task
    assert cells[cells.column == "uncovered/AUROC"].value.notna().any()


@pytest.mark.slow
def test_the_new_study_reports_its_table(workspace):
    cells = _run(commands()[2], workspace)
    assert set(cells.table) == {"length"}
    assert cells[cells.column == "length/AUROC"].value.notna().all()


@pytest.mark.slow
def test_the_new_verifier_decides_the_verify_band_of_the_operating_report(workspace):
    cells = _run(commands()[3], workspace)
    cascade = cells[(cells.table == "cascade") & cells.row.str.endswith(" -> contradiction")]
    assert len(cascade) > 0
    sent = cascade[cascade.column == "share sent to verifier"].value
    assert ((sent > 0) & (sent < 1)).all()  # the band only, not every row


def test_the_new_loader_refuses_a_bad_row_naming_file_line_and_field(tmp_path, monkeypatch):
    (tmp_path / "mylab").mkdir()
    (tmp_path / "mylab" / "__init__.py").write_text("")
    (tmp_path / "mylab" / "qa_logs.py").write_text(files()["mylab/qa_logs.py"])
    monkeypatch.syspath_prepend(str(tmp_path))
    loader = importlib.import_module("mylab.qa_logs")
    good = {"id": "a", "topic": "QA", "question": "q", "passage": "p", "response": "r"}
    csv = tmp_path / "logs.csv"
    pd.DataFrame([{**good, "verdict": "ok"}, {**good, "id": "b", "verdict": "maybe"}]).to_csv(
        csv, index=False
    )
    with pytest.raises(DataError, match=r"logs\.csv.*3.*label"):
        loader.load_qa_logs(str(csv))
    sys.modules.pop("mylab.qa_logs"), sys.modules.pop("mylab")
