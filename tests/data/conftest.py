"""Builders for small frames and files in each loader's input format."""

from __future__ import annotations

import json
from collections.abc import Callable
from pathlib import Path

import pandas as pd
import pytest

FIXTURES = Path(__file__).resolve().parents[1] / "fixtures"


@pytest.fixture
def fixtures_dir() -> Path:
    """tests/fixtures."""
    return FIXTURES


def _canonical_rows() -> list[dict]:
    return [
        {
            "example_id": "e1",
            "group_id": "QA:g1",
            "task": "QA",
            "source": "QA",
            "question": "how big is the reef?",
            "context": "The reef spans 2,300 km.",
            "answer": "It spans 2,300 km.",
            "label": 0,
            "spans": [],
        },
        {
            "example_id": "e2",
            "group_id": "QA:g1",
            "task": "QA",
            "source": "QA",
            "question": "how big is the reef?",
            "context": "The reef spans 2,300 km.",
            "answer": "It spans 5,000 km.",
            "label": 1,
            "spans": [{"start": 9, "end": 17, "text": "5,000 km"}],
        },
        {
            "example_id": "e3",
            "group_id": "Summary:g2",
            "task": "Summary",
            "source": "Summary",
            "question": "",
            "context": "The council voted 7 to 2.",
            "answer": "The council voted.",
            "label": 0,
            "spans": [],
        },
    ]


@pytest.fixture
def canonical_frame() -> Callable[[], pd.DataFrame]:
    """A valid 3-row canonical frame (fresh on every call)."""
    return lambda: pd.DataFrame(_canonical_rows())


def _processed_rows() -> list[dict]:
    rows = []
    for i, (task, context, output, spans) in enumerate(
        [
            ("QA", "passage 1:The reef spans 2,300 km.", "It spans 2,300 km.", []),
            ("QA", "passage 1:The reef spans 2,300 km.", "It spans 5,000 km.", [[9, 17]]),
            ("Summary", "The council voted 7 to 2.\n\noutput:", "The council voted.", []),
            ("Data2txt", "\n{'name': 'Cafe'}\nOverview:", "Cafe is a cafe.", [[0, 4]]),
        ]
    ):
        labels = [
            {"start": s, "end": e, "text": output[s:e], "label_type": "Evident Conflict"}
            for s, e in spans
        ]
        rows.append(
            {
                "id": str(10 + i),
                "query": "how big is the reef?" if task == "QA" else "Summarize:",
                "context": context,
                "output": output,
                "task_type": task,
                "quality": "good",
                "model": "gpt-4-0613",
                "temperature": 0.7,
                "hallucination_labels": json.dumps(labels),
                "input_str": "detection prompt",
            }
        )
    return rows


@pytest.fixture
def processed_parquet(tmp_path: Path) -> Callable[..., Path]:
    """Write a 4-row processed-RAGTruth parquet; ``edit(frame)`` may change it first."""

    def make(edit: Callable[[pd.DataFrame], pd.DataFrame] | None = None) -> Path:
        frame = pd.DataFrame(_processed_rows())
        if edit is not None:
            frame = edit(frame)
        path = tmp_path / "ragtruth" / "test.parquet"
        path.parent.mkdir(parents=True, exist_ok=True)
        frame.to_parquet(path, index=False)
        return path

    return make


@pytest.fixture
def original_dir(tmp_path: Path) -> Callable[..., Path]:
    """Copy the original-format fixture into tmp_path; ``edit(kind, lines)`` may change it.

    ``kind`` is ``"response"`` or ``"source_info"``; ``lines`` the file's text lines.
    """

    def make(edit: Callable[[str, list[str]], list[str]] | None = None) -> Path:
        target = tmp_path / "ragtruth_original"
        target.mkdir(exist_ok=True)
        for kind in ("response", "source_info"):
            lines = (FIXTURES / "ragtruth_original" / f"{kind}.jsonl").read_text().splitlines()
            if edit is not None:
                lines = edit(kind, lines)
            (target / f"{kind}.jsonl").write_text("\n".join(lines) + "\n")
        return target

    return make


def _halubench_rows() -> list[dict]:
    rows = []
    for i, (source, label) in enumerate(
        [("RAGTruth", "PASS"), ("RAGTruth", "FAIL"), ("pubmedQA", "PASS"), ("pubmedQA", "FAIL")]
    ):
        rows.append(
            {
                "Unnamed: 0": 100 + i,
                "id": f"{source}-{i}",
                "passage": f"passage 1:Text of {source} passage {i // 2}.",
                "question": f"question {i}?",
                "answer": f"answer {i}",
                "label": label,
                "source_ds": source,
            }
        )
    return rows


@pytest.fixture
def halubench_csv(tmp_path: Path) -> Callable[..., Path]:
    """Write a 4-row HaluBench CSV (2 sources x PASS/FAIL); ``edit(frame)`` may change it."""

    def make(
        edit: Callable[[pd.DataFrame], pd.DataFrame] | None = None, name: str = "sample.csv"
    ) -> Path:
        frame = pd.DataFrame(_halubench_rows())
        if edit is not None:
            frame = edit(frame)
        path = tmp_path / name
        frame.to_csv(path, index=False)
        return path

    return make
