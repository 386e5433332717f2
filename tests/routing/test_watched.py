"""A contract watched in production, end to end on the fixture file with real MLflow/SQLite.

The audit continues one anytime-valid test per model version across audit runs (state on
the version, metric histories on the runs); a route whose traffic has moved from the
calibration data is flagged (summary, table, run tag).
"""

from __future__ import annotations

import json
from pathlib import Path

import mlflow
import pandas as pd
import pytest
from tests.conftest import run_experiment as experiment

from runner.config import register_configs
from runner.routing.audit import sequential

ROOT = Path(__file__).resolve().parents[2]
FIXTURE = ROOT / "tests" / "fixtures" / "rag_file" / "rag_example.jsonl"
MODEL = "routing.model_uri=models:/ragscope_e@champion"
register_configs()
pytestmark = pytest.mark.slow


def halves() -> tuple[list[dict], list[dict]]:
    """The fixture split in two, alike: every other row of each (source, task, label)."""
    groups: dict[tuple, list[dict]] = {}
    for r in map(json.loads, FIXTURE.read_text().splitlines()):
        groups.setdefault((r["source"], r["task"], str(r["label"])), []).append(r)
    a = [r for key in sorted(groups) for r in groups[key][::2]]
    b = [r for key in sorted(groups) for r in groups[key][1::2]]
    return a, b


@pytest.fixture(scope="module")
def fitted(tmp_path_factory):
    """``ragscope_e`` fitted on the fixture, ``half`` on one half of it."""
    artifacts = tmp_path_factory.mktemp("watched")
    experiment(artifacts, "fit_gate", f"dataset.path={FIXTURE}")
    fit_half = write_rows(artifacts / "half_a.jsonl", halves()[0])
    experiment(artifacts, "fit_gate", f"dataset.path={fit_half}", "routing.model_name=half")
    client = mlflow.MlflowClient(
        tracking_uri=f"sqlite:///{artifacts / 'mlflow.db'}",
        registry_uri=f"sqlite:///{artifacts / 'mlflow.db'}",
    )
    return artifacts, client


def write_rows(path: Path, records: list[dict]) -> Path:
    path.write_text("".join(json.dumps(r) + "\n" for r in records))
    return path


def test_audits_continue_one_running_test_per_model_version(fitted, tmp_path):
    artifacts, client = fitted
    routed = experiment(
        artifacts, "route", f"dataset.path={FIXTURE}", MODEL, "routing.audit_fraction=0.5"
    )
    decisions = pd.read_parquet(routed.output_dir / "decisions.parquet")
    truth = {r["id"]: int(r["label"] in (1, True, "FAIL", "hallucinated"))
             for r in map(json.loads, FIXTURE.read_text().splitlines())}  # fmt: skip
    marked = decisions.loc[decisions["audit"], "id"].tolist()
    assert len(marked) >= 6
    first, second = marked[: len(marked) // 2], marked[len(marked) // 2 :]
    dec = f"dataset.decisions={routed.output_dir / 'decisions.parquet'}"
    target = "routing.max_accepted_risk=0.15"
    runs = []
    for i, ids in enumerate((first, second)):
        labels = write_rows(
            tmp_path / f"audit{i}.jsonl", [{"id": x, "label": truth[x]} for x in ids]
        )
        runs.append(experiment(artifacts, "audit", dec, f"dataset.labels={labels}", target))
    one, two = (r.result.extra["audit.json"]["sequential"] for r in runs)
    assert (one["first_step"], one["rows"]) == (1, len(first))
    assert two["first_step"] == len(first) + 1 and two["rows"] == len(marked)
    assert two["continued_from_run"] == runs[0].mlflow_run_id
    assert one["verdict"] in {"violated", "holds", "watching"} and (one["alpha"], one["delta"]) == (
        0.15,
        0.1,
    )
    # the same numbers as one pass over every label, in audit order
    whole, _ = sequential.update(
        sequential.new_state(0.15, 0.1), [truth[x] for x in first + second]
    )
    stored, by = sequential.restore(client, "ragscope_e", "1")
    assert by == runs[1].mlflow_run_id
    for key in ("rows", "hallucinated", "log_wealth_alarm", "log_wealth_holds", "cs_high"):
        assert stored[key] == whole[key]
    # the path, row by row, in the store
    for run, steps in ((runs[0], range(1, len(first) + 1)),
                       (runs[1], range(len(first) + 1, len(marked) + 1))):  # fmt: skip
        history = client.get_metric_history(run.mlflow_run_id, "series/audit_e_value")
        assert [m.step for m in sorted(history, key=lambda m: m.step)] == list(steps)
        assert client.get_metric_history(run.mlflow_run_id, "series/audit_cs_high")
        data = client.get_run(run.mlflow_run_id).data
        assert data.tags["audit_alarm"] in {"true", "false"}
        assert data.metrics["audit_alarm"] == float(data.tags["audit_alarm"] == "true")
    table = runs[1].result.cells_frame().set_index(["table", "row", "column"])["value"]
    assert table[("audit", "running test (all audits)", "audited rows")] == len(marked)

    # the same labels again do not move the test
    again = experiment(
        artifacts, "audit", dec, f"dataset.labels={tmp_path / 'audit1.jsonl'}", target
    )
    block = again.result.extra["audit.json"]["sequential"]
    assert not block["advanced"] and block["rows"] == len(marked)

    # a record left by a run that did not finish is passed over for the state it continued
    failed = client.create_run(client.get_run(runs[1].mlflow_run_id).info.experiment_id)
    client.set_terminated(failed.info.run_id, status="FAILED")
    bogus = {**stored, "rows": 10**6}
    value = {"state": bogus, "prior": {"state": stored, "run_id": by}, "run_id": failed.info.run_id}
    client.set_model_version_tag("ragscope_e", "1", sequential.STATE_TAG, json.dumps(value))
    assert sequential.restore(client, "ragscope_e", "1") == (stored, by)


def test_a_route_like_the_calibration_data_is_not_flagged(fitted, tmp_path):
    # the other half: rows the gate did not see, drawn as its calibration rows were (the
    # training file itself is no such traffic: the refit gate scores its own rows more
    # confidently than the out-of-fold risks the profile keeps)
    artifacts, client = fitted
    path = write_rows(tmp_path / "half_b.jsonl", halves()[1])
    out = experiment(
        artifacts, "route", f"dataset.path={path}", "routing.model_uri=models:/half@champion"
    )
    block = json.loads((out.output_dir / "summary.json").read_text())["shift"]
    assert block["flagged"] is False, block
    assert block["risk_test"]["available"] and block["unseen_source_share"] == 0.0
    data = client.get_run(out.mlflow_run_id).data
    assert data.tags["shift_flagged"] == "false"
    assert data.metrics["shift_ks_p"] == block["risk_test"]["p_value"]
    assert data.metrics["unseen_source_share"] == 0.0


def test_a_route_of_shifted_traffic_is_flagged(fitted, tmp_path, caplog):
    artifacts, client = fitted
    records = [json.loads(line) for line in FIXTURE.read_text().splitlines()]
    risky = [r for r in records if r["label"] in (1, True, "FAIL", "hallucinated")]
    path = write_rows(tmp_path / "risky.jsonl", risky)
    out = experiment(artifacts, "route", f"dataset.path={path}", MODEL)
    block = json.loads((out.output_dir / "summary.json").read_text())["shift"]
    assert block["flagged"] is True and block["risk_test"]["flagged"], block
    assert block["unseen_source_share"] == 0.0 and "KS p" in block["why"]
    assert client.get_run(out.mlflow_run_id).data.tags["shift_flagged"] == "true"
    assert "TRAFFIC SHIFT" in caplog.text and "calibration data" in caplog.text
    cells = out.result.cells_frame().set_index(["table", "row", "column"])["value"]
    assert cells[("shift", "routed", "flagged")] == 1.0


def test_rows_from_an_unseen_source_flag_the_route(fitted, tmp_path):
    artifacts, _ = fitted
    records = [json.loads(line) for line in FIXTURE.read_text().splitlines()[:10]]
    records[0]["source"] = "new_team"
    out = experiment(
        artifacts, "route", f"dataset.path={write_rows(tmp_path / 't.jsonl', records)}", MODEL
    )
    block = out.result.extra["summary.json"]["shift"]
    assert block["flagged"] and block["unseen_source_share"] == pytest.approx(0.1)
    assert "unseen sources" in block["why"]
