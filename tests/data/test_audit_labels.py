"""Audit labels load only for rows the route run accepted (and marked), naming file, row, field."""

from __future__ import annotations

import json

import pandas as pd
import pytest

from runner.data.audit_labels import load_audit_labels
from runner.errors import DataError


def test_audit_labels_must_belong_to_the_marked_accepted_rows(tmp_path):
    decisions = pd.DataFrame(
        {
            "id": ["a", "b", "c"],
            "risk": [0.1, 0.2, 0.9],
            "decision": ["accept", "accept", "review"],
            "audit": [True, False, False],
            "model": "g/1",
        }
    )
    dec = tmp_path / "decisions.parquet"
    decisions.to_parquet(dec, index=False)
    labels = tmp_path / "audit.jsonl"

    def load(*rows: dict, **kwargs):
        labels.write_text("".join(json.dumps(r) + "\n" for r in rows))
        return load_audit_labels(str(dec), str(labels), **kwargs)

    data = load({"id": "a", "label": "FAIL"})
    assert data.frame["label"].tolist() == [1] and data.info["models"] == ["g/1"]
    with pytest.raises(DataError, match="not marked for audit") as err:
        load({"id": "a", "label": 0}, {"id": "b", "label": 0})
    assert (err.value.row, err.value.field) == (2, "id")
    assert len(load({"id": "a", "label": 0}, {"id": "b", "label": 0}, scope="accepted").frame) == 2
    with pytest.raises(DataError, match="was not accepted"):
        load({"id": "c", "label": 1}, scope="accepted")
    with pytest.raises(DataError, match="not in the decisions"):
        load({"id": "zz", "label": 1})
    with pytest.raises(DataError, match="FAIL/PASS") as err:
        load({"id": "a", "label": "maybe"})
    assert err.value.field == "label"


def test_audit_labels_come_in_the_decisions_order_whatever_the_files_order(tmp_path):
    # the running test feeds rows in this order: fixed by the route run before any label,
    # never the reviewers' order (which may follow the labels)
    ids = [f"r{i}" for i in (7, 2, 9, 4, 1, 8)]
    decisions = pd.DataFrame(
        {"id": ids, "risk": 0.1, "decision": "accept", "audit": True, "model": "g/1"}
    )
    dec = tmp_path / "decisions.parquet"
    decisions.to_parquet(dec, index=False)
    labels = dict(zip(ids, [1, 0, 0, 1, 0, 1], strict=True))
    frames = []
    for name, order in (("sorted", sorted(ids)), ("by_label", sorted(ids, key=labels.get))):
        path = tmp_path / f"{name}.jsonl"
        path.write_text("".join(json.dumps({"id": i, "label": labels[i]}) + "\n" for i in order))
        frames.append(load_audit_labels(str(dec), str(path), scope="accepted").frame)
    for frame in frames:
        assert frame["id"].tolist() == ids
        assert frame["label"].tolist() == [labels[i] for i in ids]
    # the row each label was read from stays with it, for messages
    assert frames[0].set_index("id")["label_row"].to_dict() == {
        i: n for n, i in enumerate(sorted(ids), start=1)
    }


def test_a_cascades_labels_belong_to_its_final_accepts_the_verifiers_included(tmp_path):
    decisions = pd.DataFrame(
        {
            "id": ["a", "b", "c"],
            "risk": [0.1, 0.5, 0.5],
            "decision": ["accept", "verify", "verify"],
            "audit": [True, True, True],
            "model": "g/1",
            "detector_risk": [None, 0.1, 0.9],
            "final_decision": ["accept", "accept", "verify"],
        }
    )
    dec = tmp_path / "decisions.parquet"
    decisions.to_parquet(dec, index=False)
    labels = tmp_path / "audit.jsonl"
    labels.write_text('{"id": "a", "label": 0}\n{"id": "b", "label": 1}\n')
    data = load_audit_labels(str(dec), str(labels))
    assert data.frame["id"].tolist() == ["a", "b"] and data.info["accepted_rows"] == 2
    labels.write_text('{"id": "c", "label": 1}\n')
    with pytest.raises(DataError, match="final_decision 'verify'"):
        load_audit_labels(str(dec), str(labels))
