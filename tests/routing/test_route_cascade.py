"""`route` with ``routing.verifier``: a saved BERT detector decides the gate's verify band.

Real RAGTruth test rows as a team's file, `fit_gate` registers the gate (MLflow on
SQLite), then `route` runs with and without the detector (a tiny random BERT token
classifier saved with ``save_pretrained``, loaded by folder as a trained one is).
"""

from __future__ import annotations

import json
import logging
import math
import os
import sys
from pathlib import Path

import mlflow
import numpy as np
import pandas as pd
import pytest
from tests.conftest import run
from tests.conftest import run_experiment as experiment
from tests.routing.detector import ragtruth_file, save_tiny_detector

from runner.config import register_configs
from runner.errors import ConfigError
from runner.routing.contract import cascade_shares

ROOT = Path(__file__).resolve().parents[2]
GATE_COLUMNS = ["id", "risk", "decision", "audit", "source", "unseen_source", "model", "reason"]
register_configs()
pytestmark = pytest.mark.slow


@pytest.fixture(scope="module")
def contract(tmp_path_factory):
    """A registered gate, the real rows it routes, and the detector's overrides."""
    root = tmp_path_factory.mktemp("route_cascade")
    rows = ragtruth_file(root / "ragtruth.jsonl")
    detector = save_tiny_detector(root / "detector")
    experiment(root, "fit_gate", f"dataset.path={rows}")
    with_detector = [
        "+verifier@verifiers.detector=lettucedetect",
        f"verifiers.detector.model={detector}",
        "verifiers.detector.max_length=512",  # BERT's 512 positions (the class default is 4096)
        "routing.verifier=detector",
    ]
    return root, rows, with_detector


def route(root: Path, rows: Path, *overrides: str):
    return experiment(
        root, "route", f"dataset.path={rows}", "routing.audit_fraction=0.2", *overrides
    )


def test_the_detector_decides_only_the_verify_band_and_the_gate_decision_stays(contract):
    root, rows, with_detector = contract
    plain = route(root, rows)
    gate_only = pd.read_parquet(plain.output_dir / "decisions.parquet")
    assert list(gate_only.columns) == GATE_COLUMNS  # unset: the gate-only file, as before
    assert "cascade" not in plain.result.runtime
    assert "cascade" not in json.loads((plain.output_dir / "summary.json").read_text())
    assert "final" not in set(plain.result.cells_frame()["table"])

    own = route(root, rows, *with_detector)
    first = pd.read_parquet(own.output_dir / "decisions.parquet")
    band = (first["decision"] == "verify").to_numpy()
    assert 0 < band.sum() < len(first)
    assert first.loc[band, "detector_risk"].notna().all()
    assert first.loc[~band, "detector_risk"].isna().all()
    assert own.result.runtime["cascade"]["threshold_source"] == "the verifier's own"
    assert own.result.runtime["cascade"]["threshold"] == 0.5  # LettuceDetect's flag threshold

    # A threshold inside the band's risks, so both outcomes occur.
    threshold = float(np.median(first.loc[band, "detector_risk"].to_numpy(float)))
    out = route(root, rows, *with_detector, f"routing.verifier_threshold={threshold}")
    decisions = pd.read_parquet(out.output_dir / "decisions.parquet")
    assert list(decisions.columns) == [*GATE_COLUMNS, "detector_risk", "final_decision"]
    kept = [c for c in GATE_COLUMNS if c != "audit"]
    pd.testing.assert_frame_equal(decisions[kept], gate_only[kept])
    risk = decisions["detector_risk"].to_numpy(float, na_value=np.nan)
    np.testing.assert_allclose(risk[band], first.loc[band, "detector_risk"].to_numpy(float))
    expected = np.where(band, np.where(risk >= threshold, "review", "accept"), gate_only.decision)
    assert decisions["final_decision"].tolist() == expected.tolist()
    verified = decisions.loc[band, "final_decision"]
    assert set(verified) == {"accept", "review"}
    # the audit sample is drawn from every finally accepted row, the verifier's too: the
    # audit watches the accepted risk the cascade delivers
    accepted = decisions["final_decision"].eq("accept")
    marked = decisions["audit"].astype(bool)
    assert accepted[marked].all()
    assert (
        marked.sum()
        == math.ceil(0.2 * accepted.sum())
        > math.ceil(0.2 * gate_only["decision"].eq("accept").sum())
    )

    summary = json.loads((out.output_dir / "summary.json").read_text())["cascade"]
    assert summary["rows_sent_to_verifier"] == summary["verify_rows"] == int(band.sum())
    assert summary["threshold"] == threshold
    assert summary["threshold_source"] == "routing.verifier_threshold"
    assert summary["final_counts"] == decisions["final_decision"].value_counts().to_dict()
    assert summary["verifier_ms_per_verified_row"] > 0
    share = band.mean()
    gate_ms = out.result.runtime["gate_ms_per_example"]
    assert summary["cascade_ms_per_example"] == pytest.approx(
        gate_ms + share * summary["verifier_ms_per_verified_row"]
    )

    cells = out.result.cells_frame().set_index(["table", "row", "column"])["value"]
    assert cells[("final", "sent to verifier", "rows")] == band.sum()
    assert cells[("final", "accept (verified)", "rows")] == (verified == "accept").sum()
    labels = {str(r["id"]): r["label"] for r in map(json.loads, rows.read_text().splitlines())}
    y = decisions["id"].map(labels).to_numpy()
    final_review = decisions["final_decision"].eq("review").to_numpy()
    assert cells[("realised", "review precision", "after verifier")] == pytest.approx(
        y[final_review].mean()
    )

    client = mlflow.MlflowClient(tracking_uri=f"sqlite:///{root / 'mlflow.db'}")
    metrics = client.get_run(out.mlflow_run_id).data.metrics
    assert metrics["runtime/cascade/rows_sent_to_verifier"] == band.sum()
    assert metrics["runtime/cascade/verifier_ms_per_verified_row"] > 0
    assert metrics["final/sent to verifier/rows"] == band.sum()


def test_a_misconfigured_verifier_fails_before_any_data_is_read(tmp_path):
    missing = tmp_path / "does_not_exist.jsonl"
    lexical = [
        "+verifiers.lexical._target_=runner.gates.FeatureGate",
        "+verifiers.lexical.feature=rouge_l_risk",
        "routing.verifier=lexical",
    ]
    for overrides, needle in (
        ([*lexical, "routing.verifier_threshold=nan"], "a number"),
        (["routing.verifier=detector"], "not a configured verifier"),
    ):
        with pytest.raises(ConfigError, match=needle):
            experiment(tmp_path, "route", f"dataset.path={missing}", *overrides)


def test_a_verifier_without_a_threshold_fails_before_any_row_is_routed(contract):
    # Its threshold could come from the model (a cascade fit_gate calibrated with it): the
    # check waits for the model, and this one was fitted without a verifier.
    root, rows, _ = contract
    lexical = [
        "+verifiers.lexical._target_=runner.gates.FeatureGate",
        "+verifiers.lexical.feature=rouge_l_risk",
        "routing.verifier=lexical",
    ]
    with pytest.raises(ConfigError, match=r"no flag threshold of its own; set routing\.verifier"):
        route(root, rows, *lexical)
    assert not list((root / "artifacts" / "route" / "runs").glob("*/decisions.parquet"))


def test_the_cascade_in_batches_sends_the_same_rows_and_decides_them_alike(contract):
    """Batches change no final decision: the band is each row's own, the verifier scores
    the same rows; its risks agree to float rounding (padding differs by batch)."""
    root, rows, with_detector = contract
    whole = route(root, rows, *with_detector)
    batched = route(root, rows, *with_detector, "routing.batch_rows=7")
    a = pd.read_parquet(whole.output_dir / "decisions.parquet")
    b = pd.read_parquet(batched.output_dir / "decisions.parquet")
    pd.testing.assert_frame_equal(a.drop(columns="detector_risk"), b.drop(columns="detector_risk"))
    np.testing.assert_allclose(
        a["detector_risk"].to_numpy(float, na_value=np.nan),
        b["detector_risk"].to_numpy(float, na_value=np.nan),
        rtol=1e-5,
    )
    summary = json.loads((batched.output_dir / "summary.json").read_text())
    assert summary["cascade"]["rows_sent_to_verifier"] == int((a["decision"] == "verify").sum())


@pytest.mark.parametrize(
    ("suffix", "batch_rows"), [(".jsonl", 1000), (".jsonl", 7), (".csv", 1000)]
)
def test_a_limit_cuts_rows_before_the_gate_and_the_verifier_see_them(
    contract, tmp_path, monkeypatch, suffix, batch_rows
):
    """``dataset.limit=L``: only the first L rows reach the gate and the verifier, in one
    batch or several (JSONL streams) and when the file is loaded whole (CSV); the cascade
    counts, shares and ms/example are those of the L routed rows."""
    root, rows, with_detector = contract
    whole = pd.read_parquet(route(root, rows, *with_detector).output_dir / "decisions.parquet")
    verify_at = np.flatnonzero(whole["decision"].to_numpy() == "verify")
    assert verify_at.size >= 4  # the file's band leaves verify rows after the cut
    limit = int(verify_at[verify_at.size // 2])  # half the band lies after the limit-th row
    data = rows
    if suffix == ".csv":
        data = tmp_path / "rows.csv"
        pd.read_json(rows, lines=True, dtype=False).to_csv(data, index=False)

    from runner.routing.route import stream

    seen_by_gate: list[int] = []
    route_frame = stream.route_frame

    def counting(model, frame, *args, **kwargs):
        seen_by_gate.append(len(frame))
        return route_frame(model, frame, *args, **kwargs)

    monkeypatch.setattr(stream, "route_frame", counting)
    cut = route(
        root, data, *with_detector, f"dataset.limit={limit}", f"routing.batch_rows={batch_rows}"
    )
    assert sum(seen_by_gate) == limit

    decisions = pd.read_parquet(cut.output_dir / "decisions.parquet")
    assert decisions["id"].astype(str).tolist() == whole["id"].astype(str).head(limit).tolist()
    band = int((decisions["decision"] == "verify").sum())
    assert band == verify_at.size // 2
    summary = json.loads((cut.output_dir / "summary.json").read_text())
    cascade = summary["cascade"]
    assert cascade["rows_sent_to_verifier"] == cascade["verify_rows"] == band
    assert summary["rows"]["routed"] == limit
    gate_ms = cut.result.runtime["gate_ms_per_example"]
    assert cascade["cascade_ms_per_example"] == pytest.approx(
        gate_ms + band / limit * cascade["verifier_ms_per_verified_row"]
    )
    cells = cut.result.cells_frame().set_index(["table", "row", "column"])["value"]
    assert cells[("final", "sent to verifier", "rows")] == band
    assert cells[("final", "sent to verifier", "share")] == pytest.approx(band / limit)
    client = mlflow.MlflowClient(tracking_uri=f"sqlite:///{root / 'mlflow.db'}")
    metrics = client.get_run(cut.mlflow_run_id).data.metrics
    assert metrics["runtime/cascade/rows_sent_to_verifier"] == band
    assert metrics["final/sent to verifier/share"] == pytest.approx(band / limit)


@pytest.fixture(scope="module")
def calibrated(contract):
    """A cascade `fit_gate` calibrated with the detector, registered as cascade_fixture."""
    root, rows, with_detector = contract
    fitted = experiment(
        root,
        "fit_gate",
        f"dataset.path={rows}",
        *with_detector,
        "routing.accept_rule=risk_controlled",
        "routing.max_accepted_risk=0.3",
        "routing.delta=0.5",  # 60 rows: a loose delta leaves the guarantee room
        "routing.model_name=cascade_fixture",
    )
    return fitted, "routing.model_uri=models:/cascade_fixture@champion"


def test_the_fit_registers_the_final_shares_it_expects_with_their_intervals(contract, calibrated):
    _, _, with_detector = contract
    fitted, _ = calibrated
    metadata = fitted.result.model.metadata
    registered = metadata["cascade"]
    assert registered["verifier"] == "detector" and registered["feasible"]
    assert registered["verifier_class"] == "LettuceDetectVerifier"
    assert registered["verifier_model"] == with_detector[1].split("=", 1)[1]
    assert metadata["thresholds"]["accept_at"] == registered["accept_at"]
    assert registered["review_share"] == metadata["thresholds"]["review_share"]
    total = registered["accepted_share"] + registered["verify_share"] + registered["review_share"]
    assert total == pytest.approx(1.0)
    cells = fitted.result.cells_frame().set_index(["table", "row", "column"])
    for label, key in cascade_shares.SHARES.items():
        cell = cells.loc[("cascade", label, "expected share")]
        low, high = registered["share_intervals"][key]
        assert cell["value"] == registered[key] and (cell["ci_low"], cell["ci_high"]) == (low, high)
        assert low <= registered[key] <= high


def test_a_cascade_fitted_with_its_verifier_routes_as_calibrated(contract, calibrated):
    root, rows, with_detector = contract
    fitted, uri = calibrated
    registered = fitted.result.model.metadata["cascade"]
    out = route(root, rows, *with_detector, uri)
    summary = json.loads((out.output_dir / "summary.json").read_text())["cascade"]
    assert summary["threshold_source"] == "the model's calibrated cascade" and summary["calibrated"]
    assert str(summary["threshold"]) == str(registered["verifier_threshold"])
    decisions = pd.read_parquet(out.output_dir / "decisions.parquet")
    band = (decisions["decision"] == "verify").to_numpy()
    threshold = float(registered["verifier_threshold"])
    sent = decisions["detector_risk"].notna().to_numpy()
    np.testing.assert_array_equal(sent, band & np.isfinite(threshold))  # -inf: none sent
    assert summary["rows_sent_to_verifier"] == int(sent.sum())
    risk = decisions["detector_risk"].to_numpy(float, na_value=np.nan)
    with np.errstate(invalid="ignore"):
        accepted = risk < threshold
    expected = np.where(band, np.where(accepted, "accept", "verify"), decisions["decision"])
    assert decisions["final_decision"].tolist() == expected.tolist()  # rejected: still verify

    # the realised shares beside the fitted ones, in the summary, a table and MLflow; the
    # calibration rows themselves are traffic like them: nothing flagged
    shares = summary["shares"]
    assert shares["compared"] and not shares["flagged"]
    final = decisions["final_decision"]
    assert shares["shares"]["review"]["realised"] == pytest.approx(np.mean(final == "review"))
    assert shares["shares"]["sent to verifier"]["realised"] == pytest.approx(sent.mean())
    assert shares["shares"]["verify"]["fitted"] == registered["verify_share"]
    cells = out.result.cells_frame().set_index(["table", "row", "column"])["value"]
    assert cells[("cascade_shares", "verify", "realised")] == pytest.approx(
        np.mean(final == "verify")
    )
    client = mlflow.MlflowClient(tracking_uri=f"sqlite:///{root / 'mlflow.db'}")
    logged = client.get_run(out.mlflow_run_id).data
    assert logged.tags["cascade_shares_flagged"] == "false"
    assert logged.metrics["cascade_shares/accept/fitted"] == registered["accepted_share"]


def test_traffic_unlike_the_calibration_rows_is_flagged_loudly(contract, calibrated, caplog):
    """Traffic of the answers the gate reviews (30 rows, new ids): review is far above the
    fit's share, beyond its interval and the traffic's own."""
    root, rows, with_detector = contract
    _, uri = calibrated
    first = pd.read_parquet(route(root, rows, *with_detector, uri).output_dir / "decisions.parquet")
    reviewed = set(first.loc[first["decision"] == "review", "id"].astype(str))
    records = [json.loads(line) for line in rows.read_text().splitlines()]
    picked = [r for r in records if str(r["id"]) in reviewed]
    assert picked
    traffic = root / "reviewed_only.jsonl"
    traffic.write_text(
        "".join(json.dumps({**picked[i % len(picked)], "id": f"t{i}"}) + "\n" for i in range(30))
    )
    with caplog.at_level(logging.WARNING):
        out = route(root, traffic, *with_detector, uri)
    shares = json.loads((out.output_dir / "summary.json").read_text())["cascade"]["shares"]
    assert shares["flagged"] and shares["shares"]["review"]["gap_beyond_intervals"]
    assert shares["shares"]["review"]["realised"] == 1.0
    assert "CASCADE SHARES OFF THE FIT" in caplog.text and shares["why"] in caplog.text
    client = mlflow.MlflowClient(tracking_uri=f"sqlite:///{root / 'mlflow.db'}")
    assert client.get_run(out.mlflow_run_id).data.tags["cascade_shares_flagged"] == "true"


def test_a_cascade_model_without_its_verifier_or_with_another_is_refused_in_one_line(
    contract, calibrated
):
    root, rows, with_detector = contract
    _, uri = calibrated
    runs = root / "artifacts" / "route" / "runs"
    before = set(runs.glob("*/decisions.parquet"))
    done = run(
        [sys.executable, "-m", "runner", "experiment=route", f"dataset.path={rows}", uri,
         f"paths.artifacts_dir={root}", "progress=false"],
        env={**os.environ, "PYTHONPATH": str(ROOT / "src")},
    )  # fmt: skip
    assert done.returncode == 2, done.stderr[-2000:]
    (line,) = done.stderr.strip().splitlines()
    assert (
        line.startswith("error: models:/cascade_fixture/") and "routing.verifier is unset" in line
    )
    assert "+verifier@verifiers.detector=" in line and "routing.verifier=detector" in line
    other = [*with_detector[:-1], "+verifier@verifiers.other=lettucedetect",
             f"verifiers.other.model={with_detector[1].split('=', 1)[1]}",
             "verifiers.other.max_length=512", "routing.verifier=other"]  # fmt: skip
    with pytest.raises(ConfigError, match="calibrated with verifier 'detector'"):
        route(root, rows, *other, uri)
    assert set(runs.glob("*/decisions.parquet")) == before  # no row was routed
