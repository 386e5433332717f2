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
