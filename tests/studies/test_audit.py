"""The audit's running test counts each audited row once, keyed by its id, end to end.

Real study, real MLflow/SQLite store: label files reordered, grown and overlapping across
audit runs move the test exactly as one pass over the distinct rows in the order they were
first counted; a label changed after its row was counted stops the run and moves nothing.
"""

from __future__ import annotations

import json
from pathlib import Path

import mlflow
import pandas as pd
import pytest
from tests.conftest import run_experiment as experiment

from runner.errors import DataError
from runner.routing.audit import sequential

ROOT = Path(__file__).resolve().parents[2]
FIXTURE = ROOT / "tests" / "fixtures" / "rag_file" / "rag_example.jsonl"
TARGET = "routing.max_accepted_risk=0.15"
pytestmark = pytest.mark.slow


@pytest.fixture(scope="module")
def store(tmp_path_factory):
    """A store with two gates fitted on the fixture (one per test: the running test is per
    model version), each with a route run that marked every accepted row for audit."""
    artifacts = tmp_path_factory.mktemp("audit_once")
    routed = {}
    for name in ("once", "refused"):
        experiment(artifacts, "fit_gate", f"dataset.path={FIXTURE}", f"routing.model_name={name}")
        run = experiment(
            artifacts,
            "route",
            f"dataset.path={FIXTURE}",
            f"routing.model_uri=models:/{name}@champion",
            "routing.audit_fraction=1.0",
        )
        routed[name] = run.output_dir / "decisions.parquet"
    uri = f"sqlite:///{artifacts / 'mlflow.db'}"
    return artifacts, routed, mlflow.MlflowClient(tracking_uri=uri, registry_uri=uri)


def marked_ids(decisions: Path) -> list[str]:
    """The ids the route run marked, in its (the audit's) order."""
    frame = pd.read_parquet(decisions)
    return frame.loc[frame["audit"], "id"].tolist()


def write_labels(path: Path, labels: dict[str, int], ids: list[str]) -> Path:
    """A labels file of `ids` in the order given (CSV or JSONL by `path`'s suffix)."""
    rows = [{"id": i, "label": labels[i]} for i in ids]
    if path.suffix == ".csv":
        pd.DataFrame(rows).to_csv(path, index=False)
    else:
        path.write_text("".join(json.dumps(r) + "\n" for r in rows))
    return path


def audit(artifacts: Path, decisions: Path, labels: Path):
    return experiment(
        artifacts, "audit", f"dataset.decisions={decisions}", f"dataset.labels={labels}", TARGET
    )


def running_test(run) -> dict:
    return run.result.extra["audit.json"]["sequential"]


def test_reordered_growing_and_overlapping_label_files_count_each_row_once(store, tmp_path):
    artifacts, routed, client = store
    marked = marked_ids(routed["once"])
    assert len(marked) >= 12
    labels = {i: int(k % 3 == 1) for k, i in enumerate(marked)}  # mixed: the order matters
    a, b, c = marked[4:9], marked[:3], marked[9:12]  # A first, though B comes first in audit
    by_label = sorted(a, key=lambda i: (-labels[i], i))  # an order chosen from the labels
    mixed = [c[1], a[3], b[1], c[2], c[0], a[0]]
    files = [  # (file, rows added, rows counted already)
        (write_labels(tmp_path / "week1.jsonl", labels, a[::-1]), 5, 0),
        (write_labels(tmp_path / "week1_again.jsonl", labels, by_label), 0, 5),
        (write_labels(tmp_path / "all.csv", labels, [b[2], *a[::-1], b[0], b[1]]), 3, 5),
        (write_labels(tmp_path / "mixed.jsonl", labels, mixed), 3, 3),
    ]
    runs = [audit(artifacts, routed["once"], path) for path, _, _ in files]

    first_counted = a + b + c  # each run's new rows in the route run's order
    whole, path = sequential.update(
        sequential.new_state(0.15, 0.1), [labels[i] for i in first_counted]
    )
    assert [running_test(run)["rows"] for run in runs] == [5, 5, 8, 11]
    total = 0
    for run, (_, added, already) in zip(runs, files, strict=True):
        block = running_test(run)
        total += added
        assert (block["added"], block["counted_already"]) == (added, already)
        assert block["advanced"] == (added > 0)
        assert block["e_value"] == path[total - 1]["e_value"]
        cells = run.result.cells_frame().set_index(["table", "row", "column"])["value"]
        row = ("audit", "running test (all audits)")
        assert cells[(*row, "added this run")] == added
        assert cells[(*row, "counted already")] == already
        assert cells[(*row, "audited rows")] == total
    stored, by = sequential.restore(client, "once", "1")
    assert by == runs[-1].mlflow_run_id
    assert json.dumps(stored, sort_keys=True) == json.dumps(whole, sort_keys=True)
    history = client.get_metric_history(by, "series/audit_e_value")  # the new rows only
    assert sorted(m.step for m in history) == [9, 10, 11]

    counted = pd.read_parquet(runs[-1].output_dir / sequential.COUNTED_FILE)
    assert counted["id"].tolist() == sorted(first_counted)
    steps = dict(zip(counted["id"], counted["step"], strict=True))
    assert [steps[i] for i in first_counted] == list(range(1, len(first_counted) + 1))
    assert dict(zip(counted["id"], counted["label"], strict=True)) == {
        i: labels[i] for i in first_counted
    }
    # nothing new: the same rows give the same bytes
    again = audit(artifacts, routed["once"], files[1][0])
    assert (running_test(again)["added"], running_test(again)["counted_already"]) == (0, 5)
    assert (again.output_dir / sequential.COUNTED_FILE).read_bytes() == (
        runs[-1].output_dir / sequential.COUNTED_FILE
    ).read_bytes()


def test_a_label_changed_after_its_row_was_counted_is_refused_and_moves_nothing(store, tmp_path):
    artifacts, routed, client = store
    marked = marked_ids(routed["refused"])
    labels = {i: 0 for i in marked}
    audit(artifacts, routed["refused"], write_labels(tmp_path / "w1.jsonl", labels, marked[:4]))
    before = client.get_model_version("refused", "1").tags[sequential.STATE_TAG]
    flipped = {**labels, marked[2]: 1}
    changed = write_labels(tmp_path / "w2.jsonl", flipped, [marked[5], marked[0], marked[2]])
    with pytest.raises(DataError) as err:
        audit(artifacts, routed["refused"], changed)
    message = str(err.value)
    assert len(message.splitlines()) == 1
    assert message.startswith(f"file {changed}, row 3 (id '{marked[2]}'), field 'label': ")
    assert "label 1, but the running test of refused/1 counted this row with label 0" in message
    assert client.get_model_version("refused", "1").tags[sequential.STATE_TAG] == before


def test_a_state_kept_before_ids_were_restarts_the_test_and_says_why(store, tmp_path, caplog):
    artifacts, routed, client = store
    marked = marked_ids(routed["refused"])
    kept = client.create_run("0").info.run_id  # a finished run left a state of version 1
    client.set_terminated(kept, status="FINISHED")
    old = {**sequential.new_state(0.15, 0.1), "version": 1, "rows": 30, "counted": ["ab" * 8]}
    value = json.dumps({"state": old, "prior": None, "run_id": kept})
    client.set_model_version_tag("refused", "1", sequential.STATE_TAG, value)
    labels = write_labels(tmp_path / "w.jsonl", {i: 0 for i in marked}, marked[:3])
    block = running_test(audit(artifacts, routed["refused"], labels))
    assert block["rows"] == 3 and block["continued_from_run"] is None
    assert block["note"].startswith(f"restarted: the version's test (run {kept}) was kept")
    assert "state version 1" in block["note"] and block["note"] in caplog.text
