"""The verifier cascade's rules (`runner.routing.contract.cascade`), and a saved BERT
detector in it.

Which rows reach the verifier, the decision at the verifier threshold, where the threshold
comes from, and the cascade's ranking; then a tiny random BERT token classifier saved with
``save_pretrained`` loads through the LettuceDetect verifier (as a trained detector folder
does) and scores exactly the verify band of real RAGTruth rows.
"""

from __future__ import annotations

import logging
from dataclasses import dataclass

import numpy as np
import pandas as pd
import pytest
from scipy.stats import binomtest
from tests.routing.detector import ragtruth_file, save_tiny_detector

from runner.errors import ConfigError
from runner.results import StudyResult
from runner.routing import RoutingConf
from runner.routing.contract import calibrate_cascade, cascade_shares, decide
from runner.routing.contract.cascade import (
    RoutedCascade,
    cascade_risk,
    final_decisions,
    routed_cascade,
    score_band,
    verifier_threshold,
)
from runner.routing.contract.risk_control import CascadeCalibration, CascadeMasks, cascade_masks
from runner.routing.route.registry import RoutedModel
from runner.routing.route.stream import route_frame
from runner.verifiers import LettuceDetectVerifier


class SpyVerifier:
    """Risk = the answer's length / 100; records every frame it is asked to score."""

    def __init__(self, threshold: float | None = None) -> None:
        if threshold is not None:
            self.threshold = threshold
        self.seen: list[list[str]] = []
        self.loads = 0

    def load(self) -> None:
        self.loads += 1

    def score(self, frame: pd.DataFrame) -> np.ndarray:
        self.seen.append(frame["example_id"].tolist())
        return frame["answer"].str.len().to_numpy(float) / 100


def frame_of(n: int) -> pd.DataFrame:
    return pd.DataFrame(
        {
            "example_id": [f"e{i}" for i in range(n)],
            "question": ["q"] * n,
            "context": ["c"] * n,
            "answer": ["x" * (10 * (i + 1)) for i in range(n)],
        }
    )


def test_only_the_band_reaches_the_verifier_and_its_risk_lands_on_those_rows():
    frame = frame_of(6)
    band = np.array([False, True, False, True, True, False])
    spy = SpyVerifier()
    got = score_band(spy, frame, band)
    assert spy.seen == [["e1", "e3", "e4"]] and spy.loads == 1
    assert got.rows_sent == 3 and got.ms_per_row >= 0.0
    np.testing.assert_array_equal(got.risk[band], [0.2, 0.4, 0.5])
    assert np.isnan(got.risk[~band]).all()


def test_an_empty_band_sends_nothing():
    spy = SpyVerifier()
    got = score_band(spy, frame_of(3), np.zeros(3, dtype=bool))
    assert spy.seen == [] and spy.loads == 0 and got.rows_sent == 0
    assert np.isnan(got.risk).all()


def test_the_verifier_decides_verified_rows_at_its_threshold_and_keeps_the_rest():
    decision = np.array(["accept", "verify", "verify", "verify", "review"], dtype=object)
    risk = np.array([np.nan, 0.49, 0.5, 0.9, np.nan])
    final = final_decisions(decision, risk, 0.5)
    assert final.tolist() == ["accept", "accept", "review", "review", "review"]
    assert decision.tolist()[1] == "verify"  # the gate's decision is not modified
    # a calibrated cascade certifies only the verifier's accepts: the rest stays verify
    calibrated = final_decisions(decision, risk, 0.5, "verify")
    assert calibrated.tolist() == ["accept", "accept", "verify", "verify", "review"]


def test_the_threshold_is_the_setting_else_the_verifiers_own_else_a_config_error():
    assert verifier_threshold(SpyVerifier(threshold=0.3), None, "v") == 0.3
    assert verifier_threshold(SpyVerifier(threshold=0.3), 0.7, "v") == 0.7
    assert verifier_threshold(SpyVerifier(), 0.2, "v") == 0.2
    with pytest.raises(ConfigError, match=r"routing\.verifier_threshold"):
        verifier_threshold(SpyVerifier(), None, "v")
    with pytest.raises(ConfigError, match="a number"):
        verifier_threshold(SpyVerifier(), float("nan"), "v")
    # -inf is a number: a calibrated cascade's "the verifier accepts nothing" (it is sent nothing)
    assert verifier_threshold(SpyVerifier(), float("-inf"), "v") == float("-inf")


class Lookup(SpyVerifier):
    """A verifier whose risk of each row is given (by id); records what it is sent."""

    def __init__(self, risk: dict[str, float]) -> None:
        super().__init__()
        self.risk = risk

    def score(self, frame: pd.DataFrame) -> np.ndarray:
        self.seen.append(frame["example_id"].tolist())
        return frame["example_id"].map(self.risk).to_numpy(float)


class GateModel:
    """The registered gate as `route_frame` reads it: a risk per row (by answer), decided at
    the model's two thresholds."""

    def __init__(self, risk: np.ndarray, review_at: float, accept_at: float) -> None:
        self.risk, self.review_at, self.accept_at = risk, review_at, accept_at

    def predict(self, frame: pd.DataFrame) -> pd.DataFrame:
        risk = self.risk[frame["answer"].astype(int).to_numpy()]
        return pd.DataFrame(
            {"risk": risk, "decision": decide(risk, self.review_at, self.accept_at)}
        )


def cascade_rows(n: int, seed: int, gate_knows: float) -> tuple[np.ndarray, ...]:
    """Labels, gate risk and verifier risk: the gate knows the risk of a `gate_knows` share
    of the rows, the verifier that of the others (it says 0.5 to 1 on the gate's)."""
    rng = np.random.default_rng(seed)
    g = rng.random(n)
    hidden = rng.random(n) >= gate_knows
    z = np.where(hidden, rng.random(n), g)
    y = (rng.random(n) < z).astype(np.int64)
    v = np.where(hidden, z, 0.5 + 0.5 * rng.random(n))
    return y, g, v


@dataclass
class Routed:
    """A cascade calibrated on rows and those rows routed as `route` routes a batch."""

    cal: CascadeCalibration
    masks: CascadeMasks  # where the calibration's own rule sends each routed row
    decisions: pd.DataFrame
    rows_sent: int
    verifier: Lookup
    plan: RoutedCascade
    metadata: dict


def calibrated_route(gate_knows: float, riskiest: float = 1.0) -> Routed:
    """Calibrate a cascade (accepted risk <= 0.3 w.p. 0.9), register it (as fit_gate's
    metadata holds it), route rows with `route_frame`: the calibration rows, or only their
    `riskiest` share by gate risk (traffic unlike them)."""
    y, g, v = cascade_rows(3000, 7, gate_knows)
    cal = calibrate_cascade(y, g, v, float(np.quantile(g, 0.9)), 0.3, 0.1)
    metadata = {"cascade": {**cal.to_dict(), "verifier": "det"}, "training_sources": ["s"]}
    ids = np.array([f"r{i}" for i in range(g.size)])
    rows = np.flatnonzero(g >= np.quantile(g, 1.0 - riskiest))
    frame = pd.DataFrame(
        {"example_id": ids[rows], "question": "q", "context": "c", "answer": rows.astype(str),
         "source": "s"}
    )  # fmt: skip
    spy = Lookup(dict(zip(ids, v, strict=True)))
    plan = routed_cascade({"det": spy}, RoutingConf(verifier="det"), metadata, "models:/m/1")
    model = RoutedModel(GateModel(g, cal.review_at, cal.accept_at), metadata, "m", "1", None, "")
    decisions, _, cost = route_frame(model, frame, "warn", ["s"], plan)
    masks = cascade_masks(g[rows], v[rows], cal.accept_at, cal.review_at, cal.verifier_threshold)
    return Routed(cal, masks, decisions, cost["rows_sent"], spy, plan, metadata)


def test_a_gate_alone_cascade_never_calls_its_verifier_and_realises_the_fitted_shares():
    got = calibrated_route(gate_knows=0.8)
    cal, decisions = got.cal, got.decisions
    assert cal.path == "gate alone" and cal.verifier_threshold == float("-inf")
    assert got.verifier.loads == 0 and got.verifier.seen == [] and got.rows_sent == 0
    assert decisions["det_risk"].isna().all()
    final = decisions["final_decision"].to_numpy()
    np.testing.assert_array_equal(final, decisions["decision"].to_numpy())  # the gate decides
    assert (final == "verify").any()
    assert np.mean(final == "verify") == pytest.approx(cal.verify_share)
    assert np.mean(final == "review") == pytest.approx(cal.review_share)
    assert np.mean(final == "accept") == pytest.approx(cal.accepted_share)
    assert cal.verifier_share == 0.0


def test_a_verifier_path_sends_only_its_band_and_accepts_exactly_the_calibrated_rows():
    got = calibrated_route(gate_knows=0.5)
    cal, decisions = got.cal, got.decisions
    assert cal.path.startswith("verifier after gate")
    band = decisions["decision"].to_numpy() == "verify"
    assert got.verifier.loads == 1 and got.verifier.seen == [decisions.loc[band, "id"].tolist()]
    assert got.rows_sent == band.sum() == got.masks.sent.sum()
    final = decisions["final_decision"].to_numpy()
    for outcome in ("accept", "verify", "review"):
        np.testing.assert_array_equal(final == outcome, getattr(got.masks, outcome))
    # a band row the verifier does not accept stays verify; review is the gate's alone
    assert (final[band] == "verify").any() and not (final[band] == "review").any()
    assert np.mean(final == "accept") == pytest.approx(cal.accepted_share)
    assert np.mean(final == "verify") == pytest.approx(cal.verify_share)
    assert band.mean() == pytest.approx(cal.verifier_share)


@pytest.mark.parametrize("gate_knows", [0.8, 0.5], ids=["gate alone", "verifier path"])
def test_route_sets_its_shares_beside_the_fitted_ones_and_warns_only_beyond_them(
    gate_knows, caplog
):
    like = calibrated_route(gate_knows)  # the calibration rows themselves
    final = like.decisions["final_decision"].to_numpy()
    block = cascade_shares.route_shares(like.metadata, like.plan, final, like.rows_sent)
    assert block["compared"] and not block["flagged"]
    for label, key in cascade_shares.SHARES.items():
        share = block["shares"][label]
        assert share["fitted"] == getattr(like.cal, key)
        assert share["fitted_interval"] == list(like.cal.share_intervals[key])
        assert share["realised"] == pytest.approx(share["fitted"])
        assert not share["gap_beyond_intervals"]
    result = StudyResult()
    with caplog.at_level(logging.WARNING, logger=cascade_shares.log.name):
        cascade_shares.add_shares(result, block)
    # only the runner's own warnings count: another library's background thread (Ray's
    # usage reporter, left by an earlier test) may log at its own level meanwhile
    ours = [r for r in caplog.records if r.name.startswith("runner")]
    assert not ours and result.tags["cascade_shares_flagged"] == "false"
    cells = result.cells_frame().set_index(["row", "column"])
    assert cells.loc[("review", "fitted"), "ci_low"] == like.cal.share_intervals["review_share"][0]

    unlike = calibrated_route(gate_knows, riskiest=0.3)  # its riskiest 30 %: review 1 row in 3
    final = unlike.decisions["final_decision"].to_numpy()
    block = cascade_shares.route_shares(unlike.metadata, unlike.plan, final, unlike.rows_sent)
    assert block["flagged"] and block["shares"]["review"]["gap_beyond_intervals"]
    assert block["shares"]["review"]["realised"] == pytest.approx(np.mean(final == "review"))
    assert "review 0.3" in block["why"] and "vs 0.100 [" in block["why"]
    result = StudyResult()
    with caplog.at_level(logging.WARNING):
        cascade_shares.add_shares(result, block)
    assert result.tags["cascade_shares_flagged"] == "true"
    assert "CASCADE SHARES OFF THE FIT" in caplog.text and block["why"] in caplog.text


def test_a_model_registered_before_the_intervals_is_compared_on_its_stored_shares():
    """An older gate-alone cascade stored the verify band as its verifier share, no
    intervals: the expected shares are rebuilt (nothing sent) on its training rows."""
    old = {
        "cascade": {"accepted_share": 0.29, "verifier_share": 0.61, "verifier_threshold": "-inf"},
        "thresholds": {"review_share": 0.10},
        "training_data": {"rows": 1000},
    }
    fit = cascade_shares.fitted(old)
    assert fit.basis == cascade_shares.REBUILT
    assert fit.shares == pytest.approx(
        {"accepted_share": 0.29, "verify_share": 0.61, "review_share": 0.10, "verifier_share": 0}
    )
    ci = binomtest(100, 1000).proportion_ci(confidence_level=0.95, method="exact")
    assert fit.intervals["review_share"] == pytest.approx((ci.low, ci.high))
    # what issue 44 saw: every band row sent and reviewed; flagged on two shares and more
    block = cascade_shares.compare_shares(
        fit, {"accept": 290, "verify": 0, "review": 710, "sent to verifier": 610}, 1000
    )
    assert block["flagged"]
    off = {k for k, share in block["shares"].items() if share["gap_beyond_intervals"]}
    assert off == {"verify", "review", "sent to verifier"}


def test_a_cascade_model_is_refused_without_its_verifier_or_with_another_one():
    registered = {"cascade": {"verifier": "detector", "verifier_threshold": 0.4,
                              "verifier_class": "LettuceDetectVerifier",
                              "verifier_model": "/m/detector"}}  # fmt: skip
    with pytest.raises(ConfigError) as missing:
        routed_cascade({}, RoutingConf(), registered, "models:/m/3")
    line = str(missing.value)
    assert "\n" not in line and "models:/m/3" in line and "'detector'" in line
    assert "+verifier@verifiers.detector=" in line and "routing.verifier=detector" in line
    assert "verifiers.detector.model=/m/detector" in line
    other = {"other": SpyVerifier(threshold=0.5)}
    with pytest.raises(
        ConfigError, match=r"calibrated with verifier 'detector'.*verifiers\.detector"
    ):
        routed_cascade(other, RoutingConf(verifier="other"), registered, "models:/m/3")
    # a threshold of the user's routes an uncalibrated cascade: accept / review, as documented
    own = routed_cascade(
        other, RoutingConf(verifier="other", verifier_threshold=0.3), registered, "models:/m/3"
    )
    assert not own.calibrated and own.not_accepted == "review" and own.threshold == 0.3
    assert routed_cascade({}, RoutingConf(), {}, "models:/m/3") is None  # no cascade: the gate


def test_the_cascade_ranks_bands_first_and_each_band_by_its_own_scorer():
    bands = np.array(["review", "verify", "accept", "verify", "accept", "review", "verify"])
    gate = np.array([0.9, 0.5, 0.1, 0.6, 0.2, 0.8, 0.55])
    verifier = np.array([np.nan, 0.9, np.nan, 0.1, np.nan, np.nan, 0.1])
    score = cascade_risk(gate, verifier, bands)
    order = [int(i) for i in np.argsort(-score, kind="stable")]
    # review band by gate (0, 5), verify band by verifier (1, then the tie 3/6), accept by gate
    assert order[:3] == [0, 5, 1] and set(order[3:5]) == {3, 6} and order[5:] == [4, 2]
    assert score[3] == score[6]  # a tie within a band stays a tie
    with pytest.raises(ValueError, match="verify row has no score"):
        cascade_risk(gate, np.full(7, np.nan), bands)


@pytest.mark.slow
def test_a_saved_bert_detector_loads_through_the_verifier_and_scores_the_band(tmp_path):
    folder = save_tiny_detector(tmp_path / "detector")
    verifier = LettuceDetectVerifier(model=str(folder), max_length=512)
    assert type(verifier.loaded.model).__name__ == "BertForTokenClassification"
    records = pd.read_json(ragtruth_file(tmp_path / "rows.jsonl", per_task=6), lines=True)
    frame = records.rename(columns={"id": "example_id"}).astype({"example_id": str})
    band = np.arange(len(frame)) % 3 == 1
    got = score_band(verifier, frame, band)
    assert got.rows_sent == int(band.sum())
    alone = verifier.score(frame[band].reset_index(drop=True))
    np.testing.assert_allclose(got.risk[band], alone, rtol=0, atol=1e-6)
    assert ((got.risk[band] > 0) & (got.risk[band] < 1)).all()
    assert np.isnan(got.risk[~band]).all()
