"""The operating report's recommendation, shipped: its printed `fit_gate` command, run as
printed, registers exactly the recommended thresholds.

The report runs as the CLI runs it (the command-line overrides handed to the pipeline, so
the study sees them); the command is read back from ``report.md``'s code block and run
through the same entry point as every fit_gate test.
"""

from __future__ import annotations

import json
import math
import re
import shlex
import zlib
from pathlib import Path

import numpy as np
import pandas as pd
import pytest
from hydra import compose, initialize_config_dir
from sklearn.base import BaseEstimator
from tests.conftest import run_experiment

from runner.config import register_configs
from runner.pipeline import run

ROOT = Path(__file__).resolve().parents[2]
FIXTURE = ROOT / "tests" / "fixtures" / "rag_file" / "rag_example.jsonl"
QUICK = ("tracking=off", "study.params.timing_rows=20", "study.params.timing_repeats=1")
register_configs()
pytestmark = pytest.mark.slow


def report(artifacts: Path, *overrides: str):
    """operating_report as the CLI runs it: the overrides reach the study."""
    given = ["experiment=operating_report", *QUICK, *overrides]
    with initialize_config_dir(config_dir=str(ROOT / "conf"), version_base="1.3"):
        cfg = compose(
            "config",
            overrides=[
                "progress=false",
                "bootstrap=fast",
                f"paths.artifacts_dir={artifacts}",
                *given,
            ],
        )
    return run(cfg, overrides=given)


def shipped(out, artifacts: Path):
    """Run the command of report.md's last code block through the fit_gate entry point."""
    md = (out.output_dir / "report.md").read_text()
    command = re.findall(r"```\n(.*?)\n```", md, re.S)[-1]
    args = shlex.split(command)
    assert args[:4] == ["python", "-m", "runner", "experiment=fit_gate"]
    return run_experiment(artifacts, "fit_gate", *args[4:]), command


def same(registered: float | str, recommended: float | None) -> bool:
    value = float(registered)
    return math.isinf(value) if recommended is None else value == recommended


def test_a_risk_controlled_recommendation_ships_its_thresholds_and_ends_the_report(tmp_path):
    contract = ("routing.accept_rule=risk_controlled", "routing.max_accepted_risk=0.15",
                "routing.delta=0.5")  # fmt: skip
    out = report(tmp_path / "report", f"dataset.path={FIXTURE}", *contract)
    rec = out.result.extra["recommendation.json"]
    first = rec["rows"][0]
    assert (
        rec["kind"] == "gate"
        and rec["feasible"]
        and rec["ship"] in {"uncovered", "rouge_l", "ragscope_e"}
    )
    assert first["accepted_risk_guaranteed"] == 0.15
    assert first["accepted_risk_oof"] <= 0.15 and "accepts the most rows" in rec["why"]
    assert [r["setting"] for r in rec["rows"]][1:3] == [
        "routing.max_accepted_risk=0.1",
        "routing.max_accepted_risk=0.2",
    ]
    # the review side is a budget: one hint, about the review-precision rule
    assert len(rec["hints"]) == 1 and "review precision" in rec["hints"][0].replace("-", " ")
    cells = out.result.cells_frame()
    table = cells[cells["table"] == "recommendation"].set_index(["row", "column"])["value"]
    assert table[(f"{rec['ship']} / recommended", "accept share")] == pytest.approx(
        first["accept_share"]
    )
    assert table[(f"{rec['ship']} / recommended", "review_at")] == pytest.approx(first["review_at"])

    md = (out.output_dir / "report.md").read_text()
    section = md[md.index("## Recommendation") :]
    assert md.rindex("![") < md.index("## Recommendation")  # the last section
    assert f"**Ship `{rec['ship']}`**" in section and "Guaranteed with probability 0.5" in section
    assert "| routing.max_accepted_risk=0.1 |" in section
    html = (out.output_dir / "report.html").read_text()
    assert html.rindex("<img") < html.index("Recommendation</h2>") < html.rindex("<code>")

    fitted, command = shipped(out, tmp_path / "fit")
    assert f"dataset.path={FIXTURE}" in command and "tracking" not in command
    meta = fitted.result.model.metadata
    assert meta["gate"] == rec["ship"]
    assert same(meta["thresholds"]["review_at"], first["review_at"])
    assert same(meta["thresholds"]["accept_at"], first["accept_at"])
    assert meta["thresholds"]["accept_share"] == pytest.approx(first["accept_share"])


def test_with_budgets_there_is_no_guarantee_and_another_gate_ships_with_its_gate_yaml(tmp_path):
    # Without ragscope_e the winner is a gate fit_gate does not configure: the command adds it.
    out = report(tmp_path / "report", f"dataset.path={FIXTURE}", "~gate@gates.ragscope_e",
                 "routing.accept_budget=0.3")  # fmt: skip
    rec = out.result.extra["recommendation.json"]
    first = rec["rows"][0]
    assert rec["ship"] in {"uncovered", "rouge_l"} and rec["controlled"] == {
        "accept": False,
        "review": False,
    }
    assert first["accepted_risk_guaranteed"] is None and first["accepted_risk_ci_high"] is not None
    assert "lowest accepted risk" in rec["why"] or "AP" in rec["why"]
    assert rec["hints"] and f"+gate@gates.{rec['ship']}={rec['ship']}" in rec["command"]
    md = (out.output_dir / "report.md").read_text()
    assert (
        "The accept and review side is a budget: no guarantee (accepted risk 95 % CI upper end"
        in md
    )

    fitted, _ = shipped(out, tmp_path / "fit")
    meta = fitted.result.model.metadata
    assert meta["gate"] == rec["ship"] and meta["accept_budget"] == 0.3
    assert same(meta["thresholds"]["review_at"], first["review_at"])
    assert same(meta["thresholds"]["accept_at"], first["accept_at"])


def test_an_unreachable_target_ships_a_command_that_fits(tmp_path):
    # review precision >= 0.2 certifies every row, leaving the accept side none at any
    # target: the command keeps the asked accepted risk and tightens the review side
    contract = ("routing.accept_rule=risk_controlled", "routing.max_accepted_risk=0.45",
                "routing.review_rule=precision_controlled", "routing.min_review_precision=0.2",
                "routing.delta=0.5")  # fmt: skip
    out = report(tmp_path / "report", f"dataset.path={FIXTURE}", *contract)
    rec = out.result.extra["recommendation.json"]
    first = rec["rows"][0]
    assert not rec["feasible"] and "the review side binds" in rec["infeasible"]
    assert rec["command_at_best_achievable"] and first["feasible"]
    assert rec["best_achievable"]["min_review_precision"] > 0.2

    fitted, command = shipped(out, tmp_path / "fit")
    assert "routing.max_accepted_risk=0.45" in command
    meta = fitted.result.model.metadata
    assert meta["risk_control"]["accept"]["feasible"] and meta["risk_control"]["review"]["feasible"]
    assert same(meta["thresholds"]["review_at"], first["review_at"])
    assert same(meta["thresholds"]["accept_at"], first["accept_at"])


class NoisyGate(BaseEstimator):
    """A weak gate: the label plus a fixed pseudo-random number per row id, so the verify
    band holds both classes (the fixture's own gates separate them too well for a
    verifier to add anything)."""

    needs_fit = False

    def __init__(self, weight: float = 0.3):
        self.weight = weight

    def fit(self, frame: pd.DataFrame, y=None) -> NoisyGate:
        return self

    def score(self, frame: pd.DataFrame) -> np.ndarray:
        noise = [zlib.crc32(str(i).encode()) / 2**32 for i in frame["example_id"]]
        return self.weight * frame["label"].to_numpy(float) + np.array(noise)


class Oracle:
    """A verifier that reads the labels (the frame it is handed carries them): a cascade it
    sits in beats the gate alone, so the recommendation ships the calibrated cascade."""

    def __init__(self, threshold: float = 0.5):
        self.threshold = threshold

    def score(self, frame: pd.DataFrame) -> np.ndarray:
        return 0.1 + 0.8 * frame["label"].to_numpy(float)


def larger_file(path: Path, copies: int) -> Path:
    """The fixture's rows `copies` times (new ids, one source): the cascade's verifier paths
    get a small share of δ, so certifying one needs several hundred accepted rows."""
    records = [json.loads(line) for line in FIXTURE.read_text().splitlines()]
    with path.open("w") as f:
        for k in range(copies):
            for r in records:
                f.write(json.dumps({**r, "id": f"{r['id']}-{k}", "source": "all"}) + "\n")
    return path


def test_a_cascade_recommendation_ships_the_calibrated_cascade(tmp_path):
    rows = larger_file(tmp_path / "rows.jsonl", copies=12)
    verifier = [
        f"+verifiers.oracle._target_={__name__}.Oracle",
        "+verifiers.oracle.threshold=0.5",
        "routing.verifier=oracle",
    ]
    contract = ("routing.accept_rule=risk_controlled", "routing.max_accepted_risk=0.15",
                "routing.delta=0.5")  # fmt: skip
    weak_gate = (
        "~gate@gates.ragscope_e",
        "~gate@gates.rouge_l",
        "~gate@gates.uncovered",
        f"+gates.noisy._target_={__name__}.NoisyGate",
        "routing.gate=noisy",
        "study.params.time_gates=false",
    )
    out = report(tmp_path / "report", f"dataset.path={rows}", *weak_gate, *verifier, *contract)
    rec = out.result.extra["recommendation.json"]
    first = rec["rows"][0]
    assert rec["kind"] == "cascade" and rec["ship"] == "noisy -> oracle" and rec["feasible"]
    assert rec["path"].startswith("verifier after gate") and "the cascade accepts" in rec["why"]
    gate_alone = rec["candidates"]["noisy"]
    assert first["accept_share"] > gate_alone["accept_share"]
    assert first["gate_s_per_1000"] is None  # not timed
    assert first["verifier_s_per_1000"] == pytest.approx(
        first["sent_share"] * out.result.runtime["cascade"]["verifier_ms_per_verified_row"]
    )
    # the final shares route realises: the review rule's rows, the rest of the band in verify
    assert first["review_share"] == pytest.approx(gate_alone["review_share"])
    total = first["accept_share"] + first["verify_share"] + first["review_share"]
    assert total == pytest.approx(1.0)
    md = (out.output_dir / "report.md").read_text()
    assert "verifier accepts below" in md and "sent to the verifier" in md
    assert "left in verify" in md and "| sent to verifier |" in md
    assert f"+verifiers.oracle._target_={__name__}.Oracle" in rec["command"]
    assert f"+gates.noisy._target_={__name__}.NoisyGate" in rec["command"]

    fitted, _ = shipped(out, tmp_path / "fit")
    meta = fitted.result.model.metadata
    assert same(meta["thresholds"]["review_at"], first["review_at"])
    assert same(meta["thresholds"]["accept_at"], first["accept_at"])
    assert meta["cascade"]["verifier_threshold"] == first["verifier_threshold"]
    assert meta["cascade"]["accepted_share"] == pytest.approx(first["accept_share"])
    assert meta["cascade"]["verify_share"] == pytest.approx(first["verify_share"])
    assert meta["cascade"]["verifier_share"] == pytest.approx(first["sent_share"])
