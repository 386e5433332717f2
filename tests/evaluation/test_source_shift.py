"""Source-shift loops: settings scored on the right rows, labels used named, SEs honest."""

from __future__ import annotations

import numpy as np
import pandas as pd
import pytest
from sklearn.base import BaseEstimator
from sklearn.linear_model import LogisticRegression
from tests.evaluation.conftest import make_frame

from runner.errors import ConfigError
from runner.evaluation import source_shift as ss
from runner.evaluation.bootstrap import standard_metrics
from runner.evaluation.config import BootstrapConf
from runner.evaluation.metrics import auroc
from runner.evaluation.splits import LeaveSourceOut, TargetAdaptation, TargetRecord


class LogitGate(BaseEstimator):
    """Logistic regression on x1 (a learned gate)."""

    needs_fit = True

    def fit(self, frame, y):
        self.model_ = LogisticRegression().fit(frame[["x1"]], y)
        return self

    def score(self, frame):
        return self.model_.predict_proba(frame[["x1"]])[:, 1]


class X1Gate(BaseEstimator):
    """Zero-shot: x1 as the risk."""

    needs_fit = False

    def fit(self, frame, y):  # pragma: no cover - never fitted
        return self

    def score(self, frame):
        return frame["x1"].to_numpy()


@pytest.fixture
def frame():
    return make_frame(n_groups=60, n_sources=3)


def test_leave_source_out_scores_each_source_held_out_and_bootstraps_within_it(frame):
    sources = sorted(frame["source"].unique())
    boot = BootstrapConf(n_resamples=50, level=0.9, seed=1)
    out = ss.leave_source_out(LogitGate(), X1Gate(), frame, LeaveSourceOut(), boot, sources)
    assert list(out.scores["example_id"]) == list(frame["example_id"])  # frame row order
    for source in sources:
        sub = frame[frame["source"] == source]
        expected = auroc(sub["label"].to_numpy(), sub["x1"].to_numpy())
        assert out.full[ss.ZERO_SHOT][source][0] == pytest.approx(expected)
        est = out.boot[source].estimate(ss.CROSS_SOURCE, "auroc")
        assert est.point == pytest.approx(out.full[ss.CROSS_SOURCE][source][0])
        assert est.low <= est.point <= est.high


def test_same_test_sets_scores_only_the_fixed_test_rows(frame):
    sampler = TargetAdaptation(ks=[10], n_seeds=2, group_col="group_id")
    tests = sampler.test_sets(frame)
    loso = frame[["example_id", "label"]].assign(zero_shot=frame["x1"], cross_source=-frame["x1"])
    got = ss.same_test_sets(loso, tests)
    for source, idx in tests.items():
        y, s = frame["label"].to_numpy()[idx], frame["x1"].to_numpy()[idx]
        assert got["zero-shot"][source][0] == pytest.approx(auroc(y, s))
        assert got["cross-source"][source][0] == pytest.approx(auroc(y, -s))


def test_target_only_fits_on_the_sample_and_counts_group_overlap(frame):
    sampler = TargetAdaptation(ks=[10, 20], n_seeds=3, group_col="group_id")
    runs, overlap = ss.target_only(LogitGate(), frame, sampler)
    assert len(runs) == 3 * 2 * 3 and overlap == 0  # group-aware pool: no shared group
    assert list(runs.columns) == ["source", "k", "k_used", "rep", "auroc", "ap"]


def test_a_sampler_that_puts_test_rows_in_the_sample_is_a_config_error(frame):
    class LeakySampler:
        def records(self, frame):
            idx = np.arange(10)
            return [TargetRecord("src0", 5, 5, 0, idx[:5], idx)]

    with pytest.raises(ConfigError, match=r"splits\.target"):
        ss.target_only(LogitGate(), frame, LeakySampler())


def test_k_labels_name_caps_and_whole_pools_and_se_is_undefined_for_whole_pools():
    runs = pd.DataFrame(
        {
            "source": ["a", "b"] * 4,
            "k": [25, 25, 25, 25, 200, 200, 200, 200],
            "k_used": [25, 25, 25, 25, 150, 180, 150, 180],
            "rep": [0, 0, 1, 1, 0, 0, 1, 1],
            "auroc": [0.6, 0.7, 0.8, 0.9, 0.7, 0.7, 0.7, 0.7],
            "ap": [0.5] * 8,
        }
    )
    macro, per_source, whole = ss.k_labels(runs, {"a": 150, "b": 180}, ["a", "b"])
    assert macro[25] == "target-only k=25"
    assert macro[200].startswith("target-only k=200 (capped: a 150, b 180")
    assert per_source[("a", 200)] == "k=150 (cap)" and whole == {25: False, 200: True}
    mean, se = ss.macro_over_seeds(runs, 25, "auroc", defined=not whole[25])
    assert mean == pytest.approx(0.75) and se == pytest.approx(
        np.std([0.65, 0.85], ddof=1) / 2**0.5
    )
    assert ss.macro_over_seeds(runs, 200, "auroc", defined=not whole[200])[1] is None


def test_one_engine_fits_several_gates_per_sample_and_can_skip_single_class_samples(frame):
    sampler = TargetAdaptation(ks=[10], n_seeds=2, group_col="group_id")
    samples, refused = ss.samples_by_source(sampler, frame)
    assert refused == {} and {rec.source for _, rec in samples} == {"src0", "src1", "src2"}
    metrics = {"AUROC": auroc}
    runs, _ = ss.fit_target_samples({"a": LogitGate(), "b": LogitGate()}, samples, metrics)
    assert list(runs.columns) == ["source", "k", "k_used", "rep", "gate", "AUROC"]
    assert len(runs) == 2 * len(samples) and list(runs["gate"][:2]) == ["a", "b"]
    # sampled per source, a source's samples are the ones the whole-frame sampler draws
    whole = ss.target_only(LogitGate(), frame, sampler)[0]
    mine = runs[runs["gate"] == "a"].reset_index(drop=True)
    assert mine["AUROC"].to_numpy() == pytest.approx(whole["auroc"].to_numpy())
    # a sample of one class is skipped only when asked
    one_class, rec = frame.assign(label=0), samples[0][1]
    count = {"positives": lambda y, s: float(y.sum())}
    kept, _ = ss.fit_target_samples({"a": X1Gate()}, [(one_class, rec)], count)
    skipped, _ = ss.fit_target_samples(
        {"a": X1Gate()}, [(one_class, rec)], count, skip_single_class=True
    )
    assert kept["positives"].tolist() == [0.0] and skipped.empty


def test_a_source_the_sampler_refuses_or_that_holds_one_group_is_named_not_fatal(frame):
    lonely = frame[frame["source"] == "src2"].assign(group_id="one")
    mixed = pd.concat([frame[frame["source"] != "src2"], lonely.head(6)], ignore_index=True)
    assert ss.one_group_sources(mixed) == ["src2"]
    sampler = TargetAdaptation(ks=[10], n_seeds=1, group_col="group_id")
    samples, refused = ss.samples_by_source(sampler, mixed, skip=["src0"])
    assert {rec.source for _, rec in samples} == {"src1"}
    assert refused == {"src2": "too few rows of each class for a test set and a labelled pool"}


def test_the_within_source_bootstrap_is_the_one_rq5_reports(frame):
    boot = BootstrapConf(n_resamples=50, level=0.95, seed=3)
    sources = ["src0", "src1", "src2"]
    loso = ss.leave_source_out(LogitGate(), X1Gate(), frame, LeaveSourceOut(), boot, sources)
    metrics = {"auroc": standard_metrics()["auroc"]}
    again = ss.bootstrap_by_source(
        loso.scores, (ss.ZERO_SHOT, ss.CROSS_SOURCE), sources, metrics, boot, "example_id"
    )
    for source in sources:
        for setting in (ss.ZERO_SHOT, ss.CROSS_SOURCE):
            want = loso.boot[source].estimate(setting, "auroc")
            got = again[source].estimate(setting, "auroc")
            assert (got.point, got.low, got.high) == (want.point, want.low, want.high)
