"""The stacked gate (`gate=ragscope_e_detector`: RAGScope-E + the detector's risk) through the
product path: `fit_gate` fits and registers it with its detector inside, `route` loads it
from the registry and routes with it. The detector is a tiny random BERT token classifier
saved with ``save_pretrained`` and loaded by folder as a trained one is; real RAGTruth rows.
"""

from __future__ import annotations

import mlflow
import numpy as np
import pandas as pd
import pytest
from tests.conftest import run_experiment as experiment
from tests.routing.detector import ragtruth_file, save_tiny_detector

from runner.gates import LogitGate
from runner.verifiers import LettuceDetectVerifier

pytestmark = pytest.mark.slow


def test_fit_gate_registers_the_stacked_gate_and_route_routes_with_it(tmp_path):
    rows = ragtruth_file(tmp_path / "ragtruth.jsonl")
    detector = save_tiny_detector(tmp_path / "detector")
    stacked = [
        "gate@gates.ragscope_e=ragscope_e_detector",
        f"gates.ragscope_e.verifiers.detector.model={detector}",
        "gates.ragscope_e.verifiers.detector.max_length=512",  # BERT's 512 positions
    ]
    experiment(tmp_path, "fit_gate", f"dataset.path={rows}", *stacked)
    mlflow.set_tracking_uri(f"sqlite:///{tmp_path / 'mlflow.db'}")
    model = mlflow.pyfunc.load_model("models:/ragscope_e@champion").unwrap_python_model()
    gate = model.gate
    assert isinstance(gate, LogitGate)
    assert isinstance(gate.verifiers["detector"], LettuceDetectVerifier)
    columns = {name: list(c) for name, _, c in gate.pipeline_.named_steps["columns"].transformers_}
    assert columns["verifiers"] == ["detector_risk"]

    routed = experiment(tmp_path, "route", f"dataset.path={rows}")  # models:/ragscope_e@champion
    decisions = pd.read_parquet(routed.output_dir / "decisions.parquet")
    frame = pd.read_json(rows, lines=True, dtype={"id": str})
    assert decisions["id"].tolist() == frame["id"].tolist()
    expected = gate.score(frame[["question", "context", "answer"]])
    np.testing.assert_array_equal(decisions["risk"].to_numpy(float), expected)
