"""The routing contract end to end on the fixture file, with real MLflow on SQLite.

fit_gate -> registered model @champion -> loaded in a fresh process -> route -> audit, and
the registered model served over HTTP by a real `mlflow models serve` process.
"""

from __future__ import annotations

import json
import os
import signal
import socket
import subprocess
import sys
import time
from pathlib import Path

import numpy as np
import pandas as pd
import pytest
import requests
from hydra import compose, initialize_config_dir
from tests.conftest import run_experiment as experiment

from runner.config import register_configs
from runner.errors import ConfigError, DataError
from runner.pipeline import run
from runner.routing.contract.thresholds import decide

ROOT = Path(__file__).resolve().parents[2]
FIXTURE = ROOT / "tests" / "fixtures" / "rag_file" / "rag_example.jsonl"
register_configs()
pytestmark = pytest.mark.slow


def env_for(artifacts: Path) -> dict[str, str]:
    env = dict(os.environ)
    env["MLFLOW_TRACKING_URI"] = f"sqlite:///{artifacts / 'mlflow.db'}"
    env["MLFLOW_REGISTRY_URI"] = env["MLFLOW_TRACKING_URI"]  # mlflow exports the last one set
    env["PYTHONPATH"] = str(ROOT / "src") + os.pathsep + env.get("PYTHONPATH", "")
    # As in an activated venv: `mlflow models serve` execs the venv's `uvicorn`.
    env["PATH"] = str(Path(sys.executable).parent) + os.pathsep + env.get("PATH", "")
    return env


@pytest.fixture(scope="module")
def fitted(tmp_path_factory):
    artifacts = tmp_path_factory.mktemp("routing")
    outcome = experiment(artifacts, "fit_gate", f"dataset.path={FIXTURE}")
    return artifacts, outcome


def test_fit_gate_registers_the_champion_with_its_contract(fitted):
    _, outcome = fitted
    record = json.loads((outcome.output_dir / "registered_model.json").read_text())
    assert record["uri"] == "models:/ragscope_e@champion"
    assert record["run_id"] == outcome.mlflow_run_id
    import mlflow

    client = mlflow.MlflowClient(
        tracking_uri=record["tracking_uri"], registry_uri=record["tracking_uri"]
    )  # not the process-global registry an earlier test set
    mv = client.get_model_version_by_alias("ragscope_e", "champion")
    assert str(mv.version) == record["version"] and mv.run_id == outcome.mlflow_run_id
    run_info = client.get_run(outcome.mlflow_run_id).info
    assert run_info.status == "FINISHED"
    logged = {a.path for a in client.list_artifacts(outcome.mlflow_run_id)}
    assert {"registered_model.json", "contract.json", "scores.parquet"} <= logged
    meta = outcome.result.model.metadata
    assert meta["training_sources"] == ["docs_search", "support_bot"]
    assert meta["training_data"]["rows"] == 80
    assert meta["training_data"]["fingerprint"] == mv.tags["training_data_fingerprint"]
    assert set(meta["oof_report"]) == {"AUROC", "AP", "review precision@10%", "accepted risk@50%"}


def test_thresholds_reproduce_the_budgets_on_the_training_oof_scores(fitted):
    _, outcome = fitted
    meta = outcome.result.model.metadata
    scores = pd.read_parquet(outcome.output_dir / "scores.parquet")
    risk = scores["ragscope_e"].to_numpy()
    t = meta["thresholds"]
    decisions = decide(risk, t["review_at"], t["accept_at"])
    n = len(risk)
    # ⌈ρn⌉ rows reviewed and ⌈αn⌉ accepted, plus rows tied at the cut-off (counted).
    tied_review = int((risk == t["review_at"]).sum()) - 1
    tied_accept = int((risk == t["accept_at"]).sum()) - 1
    assert 8 <= (decisions == "review").sum() <= 8 + tied_review
    assert 40 <= (decisions == "accept").sum() <= 40 + tied_accept
    assert t["review_share"] == pytest.approx((decisions == "review").mean())
    assert t["accept_share"] == pytest.approx((decisions == "accept").mean())
    assert n == 80


def test_a_risk_controlled_fit_records_the_guarantee_and_the_share_it_gives(tmp_path):
    out = experiment(
        tmp_path,
        "fit_gate",
        f"dataset.path={FIXTURE}",
        "routing.accept_rule=risk_controlled",
        "routing.max_accepted_risk=0.15",
        "routing.delta=0.5",  # 80 rows: a loose delta leaves the guarantee some room
        "routing.model_name=fixture_rc",
    )
    meta = out.result.model.metadata
    accept = meta["risk_control"]["accept"]
    assert (accept["target"], accept["delta"], meta["accepted_risk_target"]) == (0.15, 0.5, 0.15)
    assert accept["feasible"] and 0 < accept["share"] <= 1 - 0.1
    assert accept["empirical"] <= accept["upper_bound"] <= 0.15
    assert meta["risk_control"]["review"] is None and meta["risk_control"]["delta"] == 0.5
    assert meta["thresholds"]["rule"] == "risk_controlled"
    assert meta["thresholds"]["accept_share"] == pytest.approx(accept["share"])
    cells = out.result.cells_frame().set_index(["table", "row", "column"])["value"]
    assert cells[("contract", "OOF", "accept share")] == pytest.approx(accept["share"])


def test_a_target_the_rows_cannot_certify_stops_the_fit_with_the_tightest_one_they_can(tmp_path):
    with pytest.raises(DataError) as err:
        experiment(
            tmp_path,
            "fit_gate",
            f"dataset.path={FIXTURE}",
            "routing.accept_rule=risk_controlled",
            "routing.max_accepted_risk=0.01",
            "routing.model_name=fixture_infeasible",
        )
    message = str(err.value)
    assert "\n" not in message
    assert "routing.max_accepted_risk=0.01 cannot be guaranteed with probability 0.9" in message
    assert "the accept side binds" in message
    assert "as configured the tightest that fits is routing.max_accepted_risk=" in message


def test_the_registered_model_loads_and_scores_in_a_fresh_process(fitted):
    artifacts, outcome = fitted
    rows = pd.read_json(FIXTURE, lines=True).head(5)
    rows["context"] = [c if isinstance(c, str) else "\n\n".join(c) for c in rows["context"]]
    code = (
        "import json, sys, mlflow, pandas as pd\n"
        "m = mlflow.pyfunc.load_model('models:/ragscope_e@champion')\n"
        "frame = pd.DataFrame(json.loads(sys.stdin.read()))\n"
        "print(m.predict(frame).to_json(orient='records', double_precision=15))\n"
    )
    payload = rows[["question", "context", "answer"]].to_json(orient="columns")
    proc = subprocess.run(
        [sys.executable, "-c", code],
        input=payload,
        capture_output=True,
        text=True,
        env=env_for(artifacts),
        timeout=300,
        check=False,
    )
    assert proc.returncode == 0, proc.stderr[-3000:]
    fresh = pd.DataFrame(json.loads(proc.stdout.strip().splitlines()[-1]))
    local = outcome.result.model.python_model.score(rows[["question", "context", "answer"]])
    np.testing.assert_allclose(fresh["risk"], local["risk"], rtol=1e-12, atol=1e-14)
    assert fresh["decision"].tolist() == local["decision"].tolist()


def test_route_then_audit_round_trip(fitted, tmp_path):
    artifacts, _ = fitted
    uri = "routing.model_uri=models:/ragscope_e@champion"
    routed = experiment(
        artifacts, "route", f"dataset.path={FIXTURE}", uri, "routing.audit_fraction=0.25"
    )
    decisions = pd.read_parquet(routed.output_dir / "decisions.parquet")
    assert list(decisions.columns[:4]) == ["id", "risk", "decision", "audit"]
    assert set(decisions["decision"]) <= {"accept", "verify", "review"}
    accepted = decisions["decision"] == "accept"
    assert decisions.loc[decisions["audit"], "decision"].eq("accept").all()
    assert decisions["audit"].sum() == int(np.ceil(0.25 * accepted.sum()))
    summary = json.loads((routed.output_dir / "summary.json").read_text())
    assert sum(summary["counts"].values()) == 80 and summary["unseen_sources"] == {}
    first = (routed.output_dir / "decisions.parquet").read_bytes()
    again = experiment(
        artifacts, "route", f"dataset.path={FIXTURE}", uri, "routing.audit_fraction=0.25"
    )
    assert (again.output_dir / "decisions.parquet").read_bytes() == first  # same seed, same bytes

    truth = {r["id"]: r["label"] for r in map(json.loads, FIXTURE.read_text().splitlines())}
    labels = tmp_path / "audit.jsonl"
    marked = decisions.loc[decisions["audit"], "id"].tolist()
    labels.write_text("".join(json.dumps({"id": i, "label": truth[i]}) + "\n" for i in marked))
    dec = f"dataset.decisions={routed.output_dir / 'decisions.parquet'}"
    audited = experiment(artifacts, "audit", dec, f"dataset.labels={labels}")
    report = audited.result.extra["audit.json"]
    assert report["rows"] == len(marked)
    assert report["ci_low"] <= report["accepted_risk"] <= report["ci_high"]
    assert report["verdict"] in {"holds", "violated", "inconclusive"}
    import mlflow

    client = mlflow.MlflowClient(tracking_uri=f"sqlite:///{artifacts / 'mlflow.db'}")
    mv = client.get_model_version_by_alias("ragscope_e", "champion")
    assert mv.tags["last_audit_run"] == audited.mlflow_run_id
    assert mv.tags["last_route_run"] == again.mlflow_run_id  # the latest route run

    unmarked = decisions.loc[~decisions["audit"] & accepted, "id"].iloc[0]
    labels.write_text(json.dumps({"id": unmarked, "label": 0}) + "\n")
    with pytest.raises(DataError, match="marked for audit") as err:
        experiment(artifacts, "audit", dec, f"dataset.labels={labels}")
    assert err.value.field == "id" and err.value.row == 1


def test_unseen_sources_are_reported_and_handled_by_policy(fitted, tmp_path):
    artifacts, _ = fitted
    records = [json.loads(line) for line in FIXTURE.read_text().splitlines()[:6]]
    for r in records[:2]:
        r["source"] = "new_team"
    path = tmp_path / "traffic.jsonl"
    path.write_text(
        "".join(json.dumps({k: v for k, v in r.items() if k != "label"}) + "\n" for r in records)
    )
    uri = "routing.model_uri=models:/ragscope_e@champion"
    with pytest.raises(DataError, match=r"2 rows come from source\(s\).*new_team"):
        experiment(
            artifacts, "route", f"dataset.path={path}", uri, "routing.on_unseen_source=error"
        )
    out = experiment(
        artifacts, "route", f"dataset.path={path}", uri, "routing.on_unseen_source=review"
    )
    decisions = pd.read_parquet(out.output_dir / "decisions.parquet")
    assert decisions.loc[decisions["unseen_source"], "decision"].eq("review").all()
    assert decisions["unseen_source"].sum() == 2


def test_a_verifier_scores_only_the_verify_band_of_the_cascade(fitted):
    artifacts, _ = fitted
    out = experiment(
        artifacts,
        "route",
        f"dataset.path={FIXTURE}",
        "routing.model_uri=models:/ragscope_e@champion",
        "routing.verifier=lexical",
        "+verifiers.lexical._target_=runner.gates.FeatureGate",
        "+verifiers.lexical.feature=rouge_l_risk",
        "routing.verifier_threshold=0.5",  # a gate has no flag threshold of its own
    )
    decisions = pd.read_parquet(out.output_dir / "decisions.parquet")
    band = decisions["decision"] == "verify"
    assert band.any()
    assert decisions.loc[band, "lexical_risk"].notna().all()
    assert decisions.loc[~band, "lexical_risk"].isna().all()
    cascade = out.result.runtime["cascade"]
    assert cascade["verify_rows"] == int(band.sum())
    share = band.mean()
    expected = (
        out.result.runtime["gate_ms_per_example"] + share * cascade["verifier_ms_per_verified_row"]
    )
    assert cascade["cascade_ms_per_example"] == pytest.approx(expected)


def test_contract_config_errors_fail_before_any_data_is_read(tmp_path):
    missing = tmp_path / "does_not_exist.jsonl"
    for overrides, needle in (
        (
            ["experiment=fit_gate", "routing.review_budget=0.6", "routing.accept_budget=0.5"],
            "exceed 1",
        ),
        (["experiment=fit_gate", "routing.accept_rule=risk_controlled"], "max_accepted_risk"),
        (["experiment=fit_gate", "routing.gate=nope"], "not a configured gate"),
        (["experiment=fit_gate", "tracking=off"], "tracking=off"),
        (["experiment=route", "routing.model_uri=null"], "routing.model_uri"),
        (["experiment=route", "routing.model_uri=ragscope_e"], "models:/"),
        (["experiment=route", "routing.verifier=nli"], "not a configured verifier"),
    ):
        with initialize_config_dir(config_dir=str(ROOT / "conf"), version_base="1.3"):
            cfg = compose(
                "config",
                overrides=[
                    *overrides,
                    f"dataset.path={missing}",
                    f"paths.artifacts_dir={tmp_path}",
                ],
            )
        with pytest.raises(ConfigError, match=needle):
            run(cfg)


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


@pytest.fixture(scope="module")
def served(fitted):
    """The champion served by a real `mlflow models serve` process: its base URL."""
    artifacts, _ = fitted
    port = free_port()
    log = artifacts / "serve.log"
    with open(log, "w") as handle:
        proc = subprocess.Popen(
            [
                sys.executable,
                "-m",
                "mlflow",
                "models",
                "serve",
                "-m",
                "models:/ragscope_e@champion",
                "--env-manager",
                "local",
                "-h",
                "127.0.0.1",
                "-p",
                str(port),
            ],
            env=env_for(artifacts),
            stdout=handle,
            stderr=subprocess.STDOUT,
            start_new_session=True,
        )
    url = f"http://127.0.0.1:{port}"
    try:
        deadline = time.monotonic() + 180
        while True:
            assert proc.poll() is None, log.read_text()
            try:
                if requests.get(f"{url}/ping", timeout=2).status_code == 200:
                    break
            except requests.ConnectionError:
                pass
            assert time.monotonic() < deadline, log.read_text()
            time.sleep(1)
        yield url
    finally:
        stop(proc)


def invoke(url: str, columns: list[str], data: list[list]) -> requests.Response:
    """POST one `dataframe_split` request to the served model."""
    payload = {"dataframe_split": {"columns": columns, "data": data}}
    return requests.post(f"{url}/invocations", json=payload, timeout=60)


def test_mlflow_models_serve_answers_good_and_bad_requests(served):
    answer = invoke(
        served,
        ["question", "context", "answer"],
        [["How much?", "It costs 5 dollars.", "It costs 5 dollars."]],
    )
    assert answer.status_code == 200, answer.text
    row = answer.json()["predictions"][0]
    assert 0.0 <= row["risk"] <= 1.0 and row["decision"] in {"accept", "verify", "review"}

    missing = (["question", "context"], [["How much?", "It costs 5 dollars."]])
    empty = (["question", "context", "answer"], [["How much?", "It costs 5 dollars.", ""]])
    for columns, data in (missing, empty):
        reply = invoke(served, columns, data)
        assert 400 <= reply.status_code < 500, reply.text
        assert "answer" in reply.json()["message"]
        assert "Traceback" not in reply.json()["message"]


def test_the_served_model_takes_a_list_context_and_flags_an_unseen_source(served):
    # As the file format: a list of passages is joined with a blank line, so it scores
    # exactly as the joined string; a source the gate was not fitted on is flagged, as
    # `route` flags it (fitted on docs_search and support_bot).
    passages = ["It costs 5 dollars.", "Shipping is free."]
    columns = ["question", "context", "answer", "source"]
    listed = invoke(
        served,
        columns,
        [
            ["How much?", passages, "It costs 5 dollars.", "new_team"],
            ["How much?", passages, "It costs 5 dollars.", "docs_search"],
        ],
    )
    assert listed.status_code == 200, listed.text
    rows = listed.json()["predictions"]
    assert [r["unseen_source"] for r in rows] == [True, False]
    joined = invoke(
        served, columns, [["How much?", "\n\n".join(passages), "It costs 5 dollars.", "x"]]
    )
    assert joined.status_code == 200, joined.text
    assert rows[0]["risk"] == pytest.approx(joined.json()["predictions"][0]["risk"], abs=1e-12)


def test_a_400_from_the_served_model_does_not_echo_the_request_text(served):
    # A request may hold user data: a 400 names the field, the row and the type, never
    # the values sent.
    secret = "Patient 4711 takes warfarin"
    columns = ["question", "context", "answer"]
    for data, field in (
        ([[secret, secret, ""]], "answer"),  # an empty answer
        ([[secret, [secret, ""], secret]], "context"),  # an empty passage in a list
        ([[secret, [], secret]], "context"),  # an empty list context
        ([[secret, [secret, 7], secret]], "context"),  # a passage that is not a string
    ):
        reply = invoke(served, columns, data)
        assert 400 <= reply.status_code < 500, reply.text
        assert f"field '{field}' of row 0" in reply.json()["message"], reply.text
        assert "4711" not in reply.text and "warfarin" not in reply.text, reply.text


@pytest.mark.xfail(
    strict=True,
    reason="MLflow's own schema enforcement (a missing required column, a type the signature "
    "refuses) fails before the model runs, and its scoring server quotes the request frame "
    "in that 400; only a signature that leaves every check to the model would avoid it",
)
def test_a_schema_400_from_mlflow_does_not_echo_the_request_text(served):
    secret = "Patient 4711 takes warfarin"
    reply = invoke(served, ["question", "context"], [[secret, secret]])  # no answer column
    assert 400 <= reply.status_code < 500, reply.text
    assert "4711" not in reply.text, reply.text


def stop(proc: subprocess.Popen) -> None:
    """Stop the server and its workers (its own process group) by its PID."""
    if proc.poll() is None:
        os.killpg(proc.pid, signal.SIGTERM)
        try:
            proc.wait(timeout=30)
        except subprocess.TimeoutExpired:
            os.killpg(proc.pid, signal.SIGKILL)
            proc.wait()
