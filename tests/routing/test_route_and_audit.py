"""Routing rules and the audit estimate, without MLflow: unseen sources, audit sample, CI."""

from __future__ import annotations

import math

import numpy as np
import pandas as pd
import pytest
from scipy.stats import beta

from runner.errors import DataError
from runner.routing.audit.interval import estimate
from runner.routing.audit.shift import risk_profile
from runner.routing.model import InputError, check_input
from runner.routing.report.stream_report import shift_check
from runner.routing.route.traffic import audit_sample, handle_unseen, realised


def test_unseen_sources_stop_the_run_under_error_and_only_warn_otherwise(caplog):
    with pytest.raises(
        DataError, match=r"2 rows come from source\(s\) the gate was not fitted on: \{'c': 2\}"
    ):
        handle_unseen({"c": 2}, "error", ["a"], "traffic.jsonl")
    handle_unseen({"c": 2}, "warn", ["a"], "traffic.jsonl")
    assert "UNSEEN SOURCES" in caplog.text


def test_the_audit_sample_is_a_seeded_share_of_accepted_rows_only():
    decisions = np.array(["accept", "verify", "review"] * 30 + ["accept"] * 10, dtype=object)
    mask = audit_sample(decisions, 0.1, seed=13)
    assert mask.sum() == math.ceil(0.1 * 40)
    assert set(decisions[mask]) == {"accept"}
    assert np.array_equal(mask, audit_sample(decisions, 0.1, seed=13))
    assert not np.array_equal(mask, audit_sample(decisions, 0.1, seed=14))
    assert audit_sample(decisions, 0.0, seed=13).sum() == 0


def test_realised_metrics_are_the_hallucinated_share_per_band():
    labels = np.array([1, 1, 0, 0, 1, 0])
    decisions = np.array(["review", "review", "accept", "accept", "verify", "accept"])
    out = realised(labels, decisions)
    assert out["review precision"] == 1.0 and out["accepted risk"] == 0.0
    assert out["verify band hallucinated share"] == 1.0 and out["hallucinated share"] == 0.5


def test_the_audit_interval_is_exact_and_the_verdict_follows_it():
    labels = pd.Series([1] * 3 + [0] * 97)
    est = estimate(labels, target=0.15)
    # Clopper-Pearson from the beta quantiles.
    assert est.ci_low == pytest.approx(beta.ppf(0.025, 3, 98))
    assert est.ci_high == pytest.approx(beta.ppf(0.975, 4, 97))
    assert (est.accepted_risk, est.verdict) == (0.03, "holds")
    assert estimate(pd.Series([1] * 30 + [0] * 70), target=0.15).verdict == "violated"
    assert estimate(pd.Series([1] * 2 + [0] * 8), target=0.15).verdict == "inconclusive"


@pytest.mark.parametrize(
    ("frame", "needle"),
    [
        (pd.DataFrame({"question": ["q"], "context": ["c"]}), "field 'answer' is missing"),
        (pd.DataFrame({"question": ["q"], "context": ["c"], "answer": [""]}), "'answer' of row 0"),
        (
            pd.DataFrame({"question": ["q"], "context": [" "], "answer": ["a"]}),
            "'context' of row 0",
        ),
        (pd.DataFrame({"question": [None], "context": ["c"], "answer": ["a"]}), "'question'"),
    ],
)
def test_a_bad_request_names_the_field(frame, needle):
    with pytest.raises(InputError, match=needle):
        check_input(frame)


class _Shards:
    """Stands in for a work folder: `read` gives shard `index`'s risks."""

    def __init__(self, shards):
        self.shards = shards

    def read(self, index, columns):
        return pd.DataFrame({"risk": self.shards[index]})[columns]


def _totals(shards, unseen=None):
    from types import SimpleNamespace

    rows = sum(len(s) for s in shards)
    return SimpleNamespace(unseen=unseen or {}, rows=rows, batches=len(shards))


def _model(profile):
    from types import SimpleNamespace

    return SimpleNamespace(metadata={} if profile is None else {"calibration_profile": profile})


def test_the_shift_check_reads_risks_shard_by_shard_and_flags_moved_traffic():
    rng = np.random.default_rng(0)
    profile = risk_profile(rng.beta(2, 5, 2000))
    alike = [rng.beta(2, 5, 300) for _ in range(3)]
    block = shift_check(_Shards(alike), _totals(alike), _model(profile))
    assert not block["flagged"] and block["risk_test"]["routed_rows"] == 900
    moved = [rng.beta(5, 2, 100)]
    block = shift_check(_Shards(moved), _totals(moved), _model(profile))
    assert block["flagged"] and block["risk_test"]["flagged"] and "KS p" in block["why"]
    block = shift_check(_Shards(alike), _totals(alike, {"new_team": 9}), _model(profile))
    assert block["flagged"] and block["unseen_source_share"] == pytest.approx(0.01)


def test_a_model_without_a_calibration_profile_has_no_risk_test_and_says_so():
    shards = [np.linspace(0, 1, 50)]
    block = shift_check(_Shards(shards), _totals(shards), _model(None))
    assert block["flagged"] is False
    assert block["risk_test"]["available"] is False and "calibration_profile" in block["why"]
