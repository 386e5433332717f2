"""A team's own traffic through a fitted gate: every input row is accounted for.

One gate is fitted on the fixture file (real MLflow on SQLite) and each test routes a file
a team might send: rows the loader skips, exports in other formats, text in other scripts.
"""

from __future__ import annotations

import json
from pathlib import Path

import pandas as pd
import pytest
from tests.conftest import run_experiment as experiment

from runner.config import register_configs

ROOT = Path(__file__).resolve().parents[2]
FIXTURES = ROOT / "tests" / "fixtures" / "rag_file"
FIXTURE = FIXTURES / "rag_example.jsonl"
MODEL = "routing.model_uri=models:/ragscope_e@champion"
register_configs()
pytestmark = pytest.mark.slow


@pytest.fixture(scope="module")
def artifacts(tmp_path_factory) -> Path:
    folder = tmp_path_factory.mktemp("own_data")
    experiment(folder, "fit_gate", f"dataset.path={FIXTURE}")
    return folder


def fixture_rows(n: int) -> list[dict]:
    return [json.loads(line) for line in FIXTURE.read_text().splitlines()[:n]]


def test_skipped_rows_are_listed_as_invalid_and_counted_everywhere(artifacts, tmp_path):
    import mlflow

    rows = fixture_rows(8)
    rows[2]["answer"] = ""
    rows[5]["id"] = rows[4]["id"]  # a duplicate id
    lines = [json.dumps(r) for r in rows] + ["{not json"]
    path = tmp_path / "traffic.jsonl"
    path.write_text("\n".join(lines) + "\n")
    out = experiment(artifacts, "route", f"dataset.path={path}", MODEL, "dataset.skip_invalid=true")
    decisions = pd.read_parquet(out.output_dir / "decisions.parquet")
    skipped = pd.read_parquet(out.output_dir / "skipped.parquet")
    assert len(decisions) == 6 and len(skipped) == 3
    assert skipped["decision"].eq("invalid").all()
    assert skipped["row"].tolist() == ["9", "3", "6"]
    assert skipped["id"].isna().tolist() == [True, False, False]
    assert skipped["id"].tolist()[1:] == [rows[2]["id"], rows[4]["id"]]
    assert skipped["reason"].str.contains("duplicate id").iloc[2]
    summary = json.loads((out.output_dir / "summary.json").read_text())
    assert summary["rows"]["accounting"] == "9 read, 6 routed, 3 skipped"
    assert out.result.titles["rows"] == "Input rows: 9 read, 6 routed, 3 skipped"
    client = mlflow.MlflowClient(tracking_uri=f"sqlite:///{artifacts / 'mlflow.db'}")
    metrics = client.get_run(out.mlflow_run_id).data.metrics
    assert {k: v for k, v in metrics.items() if k.startswith("rows/")} == {
        "rows/input/read": 9.0,
        "rows/input/routed": 6.0,
        "rows/input/skipped": 3.0,
    }


RAGAS = "dataset.columns={question: user_input, context: retrieved_contexts, answer: response}"


@pytest.mark.parametrize(
    ("fixture", "documented"),
    [
        ("ragas_export.jsonl", [RAGAS, "dataset.extra_columns=ignore"]),
        ("qa_export.csv", ["dataset.columns.context=contexts"]),
    ],
)
def test_an_export_without_ids_routes_with_the_documented_mapping(artifacts, fixture, documented):
    path = FIXTURES / fixture
    out = experiment(artifacts, "route", f"dataset.path={path}", MODEL, *documented)
    decisions = pd.read_parquet(out.output_dir / "decisions.parquet")
    assert len(decisions) == 12 and decisions["id"].str.fullmatch(r"content:[0-9a-f]{16}").all()
    summary = json.loads((out.output_dir / "summary.json").read_text())
    assert summary["ids"].startswith("generated: content:<sha1[:16]>")
    again = experiment(artifacts, "route", f"dataset.path={path}", MODEL, *documented)
    assert pd.read_parquet(again.output_dir / "decisions.parquet")["id"].equals(decisions["id"])


# ------------------------------------------------------------------ scripts the gate can see


def test_text_the_lexical_features_cannot_see_goes_to_review_with_the_reason(artifacts, tmp_path):
    rows = fixture_rows(4)
    chinese = "德尔塔滑板车售价四百五十四美元，两天内发货。"
    rows[1].update(context=chinese, answer=chinese)  # a verbatim copy, in Chinese
    rows[2].update(answer="Der Delta-Roller kostet 454 Dollar und wird in 2 Tagen geliefert.")
    path = tmp_path / "scripts.jsonl"
    path.write_text("".join(json.dumps(r, ensure_ascii=False) + "\n" for r in rows))
    out = experiment(artifacts, "route", f"dataset.path={path}", MODEL)
    decisions = pd.read_parquet(out.output_dir / "decisions.parquet").set_index("id")
    assert decisions.at[rows[1]["id"], "decision"] == "review"
    assert decisions.at[rows[1]["id"], "reason"].startswith("unsupported script: 100%")
    assert decisions.at[rows[2]["id"], "reason"] == ""  # German: Latin letters, routed
    assert (decisions["reason"] == "").sum() == 3


# ------------------------------------------------------------------ the served model


@pytest.fixture(scope="module")
def served(artifacts):
    import mlflow

    mlflow.set_tracking_uri(f"sqlite:///{artifacts / 'mlflow.db'}")
    return mlflow.pyfunc.load_model("models:/ragscope_e@champion")


def test_the_served_model_takes_a_list_context_as_the_file_format_does(served):
    row = fixture_rows(1)[0]
    passages = ["The Delta scooter costs 454 dollars.", "It ships within 2 days."]
    listed = served.predict(
        pd.DataFrame({"question": [""], "context": [passages], "answer": [row["answer"]]})
    )
    joined = served.predict(
        pd.DataFrame(
            {"question": [""], "context": ["\n\n".join(passages)], "answer": [row["answer"]]}
        )
    )
    pd.testing.assert_frame_equal(listed, joined)


def test_the_served_model_flags_a_source_it_never_saw(served):
    row = fixture_rows(1)[0]
    request = pd.DataFrame(
        {
            "question": [row["question"]] * 2,
            "context": [row["context"]] * 2,
            "answer": [row["answer"]] * 2,
            "source": [row["source"], "new_team"],
        }
    )
    assert served.predict(request)["unseen_source"].tolist() == [False, True]


def test_a_rejected_request_does_not_echo_its_text(served):
    from mlflow.exceptions import MlflowException

    secret = "patient 4711 was prescribed"
    request = pd.DataFrame({"question": [secret], "context": [secret], "answer": [["x", 3]]})
    with pytest.raises(MlflowException) as err:
        served.predict(request)
    assert secret not in str(err.value) and "x" not in str(err.value).split("answer")[-1]
