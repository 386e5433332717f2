"""operating_report with ``routing.verifier``: gate alone, detector alone and the cascade.

Real RAGTruth test rows as a team's labelled file; the detector is a tiny random BERT token
classifier saved with ``save_pretrained`` and loaded by folder through the LettuceDetect
verifier. The cascade's numbers are checked against its parts recomputed from
``scores.parquet``: the gate's bands at the contract's budgets, the detector's ranking
inside the verify band, and the metric functions of `runner.evaluation`.
"""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pandas as pd
import pytest
from tests.conftest import run_experiment
from tests.routing.detector import ragtruth_file, save_tiny_detector

from runner.config import register_configs
from runner.errors import ConfigError
from runner.evaluation.metrics import average_precision
from runner.evaluation.operating import accepted_risk, review_precision
from runner.routing.contract.thresholds import budget_thresholds, decide

ROOT = Path(__file__).resolve().parents[2]
CASCADE = "ragscope_e -> detector"
register_configs()
pytestmark = pytest.mark.slow


def report(artifacts: Path, *overrides: str):
    quick = ("tracking=off", "study.params.timing_rows=20", "study.params.timing_repeats=1")
    return run_experiment(artifacts, "operating_report", *quick, *overrides)


def detector_overrides(folder: Path) -> list[str]:
    return [
        "+verifier@verifiers.detector=lettucedetect",
        f"verifiers.detector.model={folder}",
        "verifiers.detector.max_length=512",  # BERT's 512 positions (the class default is 4096)
    ]


def test_the_cascade_is_reported_beside_the_gate_and_the_detector_from_its_parts(tmp_path):
    rows = ragtruth_file(tmp_path / "ragtruth.jsonl")
    detector = save_tiny_detector(tmp_path / "detector")
    out = report(
        tmp_path / "art",
        f"dataset.path={rows}",
        *detector_overrides(detector),
        "routing.verifier=detector",
    )
    scores = pd.read_parquet(out.output_dir / "scores.parquet")
    y = scores["label"].to_numpy()
    gate, alone, cascade = (scores[c].to_numpy(float) for c in ("ragscope_e", "detector", CASCADE))
    cut = budget_thresholds(gate, 0.10, 0.50)  # the contract's budgets (conf/routing)
    bands = decide(gate, cut.review_at, cut.accept_at)
    band = bands == "verify"
    assert 0 < band.sum() < len(bands)
    # Bands never interleave; inside the verify band the detector ranks (same scores alone).
    assert cascade[bands == "review"].min() > cascade[band].max()
    assert cascade[band].min() > cascade[bands == "accept"].max()
    assert np.array_equal(np.argsort(cascade[band]), np.argsort(alone[band]))
    assert ((alone > 0) & (alone < 1)).all()

    cells = out.result.cells_frame()
    table = cells[cells["table"] == "cascade"].set_index(["row", "column"])["value"]
    assert list(dict.fromkeys(cells.loc[cells["table"] == "cascade", "row"])) == [
        "ragscope_e",
        "detector",
        CASCADE,
    ]
    for name, s in (("ragscope_e", gate), ("detector", alone), (CASCADE, cascade)):
        assert table[(name, "AP")] == pytest.approx(average_precision(y, s))
        for rho in (0.05, 0.10, 0.20):
            column = f"review precision@{100 * rho:g}%"
            assert table[(name, column)] == pytest.approx(review_precision(y, s, rho))
        assert table[(name, "accepted risk@50%")] == pytest.approx(accepted_risk(y, s, 0.5))
    operating = set(cells.loc[cells["table"] == "operating", "row"])
    assert {f"{scope} / {CASCADE}" for scope in ("Combined", "QA", "Summary", "Macro")} <= operating

    runtime = out.result.runtime
    share = band.mean()
    assert runtime["cascade"]["share_sent_to_verifier"] == pytest.approx(share)
    assert table[(CASCADE, "share sent to verifier")] == pytest.approx(share)
    gate_ms = runtime["gates"]["ragscope_e"]["median_ms_per_example"]
    assert table[("ragscope_e", "ms/example")] == pytest.approx(gate_ms)
    assert table[(CASCADE, "ms/example")] == pytest.approx(
        gate_ms + share * runtime["cascade"]["verifier_ms_per_verified_row"]
    )
    assert table[("detector", "ms/example")] == pytest.approx(
        runtime["cascade"]["verifier_alone_ms_per_example"]
    )
    # At the detector's own flag threshold: route's decisions on the same rows.
    reviewed = np.where(band, alone >= 0.5, bands == "review")
    at = "@ verifier threshold 0.5"
    assert table[(CASCADE, f"review share {at}")] == pytest.approx(reviewed.mean())
    assert table[(CASCADE, f"review precision {at}")] == pytest.approx(y[reviewed].mean())

    md = (out.output_dir / "report.md").read_text()
    assert "**Cascade: gate on every row, verifier on its verify band" in md
    assert f"| {CASCADE} |" in md and "Cascade `ragscope_e -> detector`" in md


def test_a_verifier_the_report_cannot_use_fails_before_any_data_is_read(tmp_path):
    missing = f"dataset.path={tmp_path / 'does_not_exist.jsonl'}"
    folder = save_tiny_detector(tmp_path / "detector")
    for overrides, needle in (
        (detector_overrides(folder), r"routing\.verifier is unset"),
        (["routing.verifier=detector"], "not a configured verifier"),
        (
            [*detector_overrides(folder), "routing.verifier=detector", "routing.gate=nope"],
            "not a configured gate",
        ),
    ):
        with pytest.raises(ConfigError, match=needle):
            report(tmp_path, missing, *overrides)
