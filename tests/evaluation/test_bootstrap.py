"""Group bootstrap: groups resampled as units, paired gates, explicit handling of one class."""

from __future__ import annotations

import numpy as np
import pytest
from sklearn.metrics import average_precision_score, roc_auc_score

from runner.evaluation.bootstrap import MACRO, POOLED, group_bootstrap, standard_metrics
from runner.evaluation.metrics import auroc, auroc_batched, average_precision_batched


def _data(make_frame, seed=0):
    f = make_frame(n_groups=40, group_size=3, seed=seed)
    y = f["label"].to_numpy()
    rng = np.random.default_rng(seed)
    scores = {
        "noisy": y + rng.normal(scale=1.0, size=y.size),
        "sharp": y + rng.normal(scale=0.3, size=y.size),
    }
    return f, y, scores


class Recorder:
    """A batched metric that keeps the weight matrices it was given."""

    def __init__(self):
        self.calls = []

    def __call__(self, y, s, w):
        self.calls.append(np.array(w))
        return auroc_batched(y, s, w)


def test_constant_gate_has_degenerate_auroc_interval_at_one_half(make_frame):
    f, y, _ = _data(make_frame)
    res = group_bootstrap(
        y, {"const": np.zeros(y.size)}, f["group_id"], {"auroc": auroc_batched}, n_resamples=200
    )
    est = res.estimate("const", "auroc")
    assert (est.point, est.low, est.high) == (0.5, 0.5, 0.5)
    np.testing.assert_array_equal(res.samples[POOLED, "auroc", "const"], 0.5)


def test_perfect_gate_interval_is_exactly_one_one(make_frame):
    f, y, _ = _data(make_frame)
    res = group_bootstrap(
        y,
        {"oracle": y.astype(float)},
        f["group_id"],
        {"auroc": auroc_batched, "ap": average_precision_batched},
        n_resamples=200,
    )
    for metric in ("auroc", "ap"):
        est = res.estimate("oracle", metric)
        assert (est.point, est.low, est.high) == (1.0, 1.0, 1.0)


def test_point_value_is_the_metric_on_the_original_sample(make_frame):
    f, y, scores = _data(make_frame)
    res = group_bootstrap(y, scores, f["group_id"], standard_metrics(), n_resamples=50)
    assert res.estimate("noisy", "auroc").point == pytest.approx(auroc(y, scores["noisy"]))
    assert res.estimate("sharp", "ap").point == pytest.approx(
        average_precision_score(y, scores["sharp"])
    )


def test_groups_are_resampled_whole_and_each_resample_has_g_groups(make_frame):
    f, y, scores = _data(make_frame)
    rec = Recorder()
    group_bootstrap(y, {"g": scores["noisy"]}, f["group_id"], {"r": rec}, n_resamples=30)
    w = rec.calls[0]  # first call: the resample matrix (the second is the point value)
    assert w.shape == (30, y.size)
    by_group = w.reshape(30, 40, 3)  # rows are grouped in threes, in group order
    assert (by_group == by_group[:, :, :1]).all()  # one multiplicity per group
    np.testing.assert_array_equal(by_group[:, :, 0].sum(axis=1), 40)  # 40 groups drawn


def test_resample_values_equal_sklearn_on_the_duplicated_rows(make_frame):
    f, y, scores = _data(make_frame)
    rec = Recorder()
    res = group_bootstrap(y, {"g": scores["noisy"]}, f["group_id"], {"r": rec}, n_resamples=20)
    w = rec.calls[0].astype(int)
    for b in range(20):
        rows = np.repeat(np.arange(y.size), w[b])
        expected = roc_auc_score(y[rows], scores["noisy"][rows])
        assert res.samples[POOLED, "r", "g"][b] == pytest.approx(expected, abs=1e-12)


def test_paired_delta_uses_the_same_resamples_for_both_gates(make_frame):
    f, y, scores = _data(make_frame)
    res = group_bootstrap(y, scores, f["group_id"], {"auroc": auroc_batched}, n_resamples=300)
    same = res.delta("sharp", "sharp", "auroc")
    assert (same.point, same.low, same.high) == (0.0, 0.0, 0.0)
    d = res.delta("sharp", "noisy", "auroc")
    diff = res.samples[POOLED, "auroc", "sharp"] - res.samples[POOLED, "auroc", "noisy"]
    assert (d.low, d.high) == tuple(np.quantile(diff, [0.025, 0.975]))
    assert d.point == pytest.approx(auroc(y, scores["sharp"]) - auroc(y, scores["noisy"]))
    # Pairing: a gate shifted by a constant ranks identically on every resample.
    shifted = group_bootstrap(
        y,
        {"a": scores["noisy"], "b": scores["noisy"] + 5.0},
        f["group_id"],
        {"auroc": auroc_batched},
        n_resamples=100,
    )
    assert shifted.delta("a", "b", "auroc") == shifted.delta("b", "a", "auroc")
    assert shifted.delta("a", "b", "auroc").high == 0.0


def test_interval_is_the_percentile_interval_at_the_given_level(make_frame):
    f, y, scores = _data(make_frame)
    res = group_bootstrap(
        y, scores, f["group_id"], {"auroc": auroc_batched}, n_resamples=400, level=0.8
    )
    vals = res.samples[POOLED, "auroc", "noisy"]
    est = res.estimate("noisy", "auroc")
    assert (est.low, est.high) == pytest.approx(tuple(np.quantile(vals, [0.1, 0.9])), abs=1e-12)
    assert est.low < est.point < est.high


def test_same_seed_same_result_and_row_order_does_not_matter(make_frame):
    f, y, scores = _data(make_frame)
    groups = f["group_id"].to_numpy()
    a = group_bootstrap(y, scores, groups, standard_metrics(), n_resamples=100, seed=7)
    b = group_bootstrap(y, scores, groups, standard_metrics(), n_resamples=100, seed=7)
    perm = np.random.default_rng(1).permutation(y.size)
    c = group_bootstrap(
        y[perm],
        {k: v[perm] for k, v in scores.items()},
        groups[perm],
        standard_metrics(),
        n_resamples=100,
        seed=7,
    )
    d = group_bootstrap(y, scores, groups, standard_metrics(), n_resamples=100, seed=8)
    for key in a.samples:
        np.testing.assert_array_equal(a.samples[key], b.samples[key])
        np.testing.assert_allclose(a.samples[key], c.samples[key], atol=1e-12)
    assert not np.array_equal(
        a.samples[POOLED, "auroc", "noisy"], d.samples[POOLED, "auroc", "noisy"]
    )


def test_strata_keep_group_counts_and_give_per_stratum_and_macro_scopes(make_frame):
    f, y, scores = _data(make_frame)
    rec = Recorder()
    res = group_bootstrap(
        y,
        {"g": scores["noisy"]},
        f["group_id"],
        {"r": rec},
        n_resamples=50,
        strata=f["task"],
    )
    assert res.scopes == (POOLED, "QA", "Summary", MACRO)
    assert res.n_groups == {POOLED: 40, "QA": 20, "Summary": 20, MACRO: 40}
    w = rec.calls[0].reshape(50, 40, 3)[:, :, 0]
    qa = np.arange(40) % 2 == 0
    np.testing.assert_array_equal(w[:, qa].sum(axis=1), 20)
    np.testing.assert_array_equal(w[:, ~qa].sum(axis=1), 20)
    macro = (res.samples["QA", "r", "g"] + res.samples["Summary", "r", "g"]) / 2
    np.testing.assert_allclose(res.samples[MACRO, "r", "g"], macro)
    qa_rows = f["task"].to_numpy() == "QA"
    assert res.point["QA", "r", "g"] == pytest.approx(auroc(y[qa_rows], scores["noisy"][qa_rows]))


def test_one_class_resamples_are_redrawn_and_counted(make_frame):
    # 4 groups, only one holds positives: P(a resample misses it) = (3/4)^4 ≈ 0.32.
    y = np.array([1, 0, 0, 0, 0, 0, 0, 0])
    groups = np.repeat(["a", "b", "c", "d"], 2)
    s = np.arange(8.0)
    res = group_bootstrap(y, {"g": s}, groups, {"auroc": auroc_batched}, n_resamples=500)
    assert 100 < res.n_redrawn < 250
    assert np.isfinite(res.samples[POOLED, "auroc", "g"]).all()
    assert res.samples[POOLED, "auroc", "g"].shape == (500,)


def test_one_class_scope_raises_naming_it():
    y = np.array([1, 0, 0, 0, 1, 1])
    strata = np.array(["QA", "QA", "QA", "D2T", "D2T", "D2T"])
    with pytest.raises(ValueError, match="scope 'QA'"):
        group_bootstrap(
            np.array([0, 0, 0, 0, 1, 1]),
            {"g": np.arange(6.0)},
            np.arange(6),
            {"auroc": auroc_batched},
            strata=strata,
        )
    res = group_bootstrap(
        y,
        {"g": np.arange(6.0)},
        np.arange(6),
        {"auroc": auroc_batched},
        n_resamples=20,
        strata=strata,
    )
    assert res.n_redrawn > 0


def test_group_spanning_two_strata_raises():
    with pytest.raises(ValueError, match="span several strata"):
        group_bootstrap(
            np.array([0, 1, 0, 1]),
            {"g": np.arange(4.0)},
            np.array(["x", "x", "y", "y"]),
            {"auroc": auroc_batched},
            strata=np.array(["QA", "D2T", "D2T", "D2T"]),
        )


def test_metric_returning_nan_raises_instead_of_reporting_it():
    def broken(y, s, w):
        return np.full(w.shape[0], np.nan)

    with pytest.raises(ValueError, match="non-finite"):
        group_bootstrap(np.array([0, 1, 0, 1]), {"g": np.arange(4.0)}, np.arange(4), {"m": broken})


@pytest.mark.parametrize(
    ("kwargs", "match"),
    [
        ({"scores": {}}, "scores is empty"),
        ({"metrics": {}}, "metrics is empty"),
        ({"n_resamples": 0}, "n_resamples"),
        ({"level": 1.0}, "level"),
        ({"groups": np.array(["a", None, "b", "b"], dtype=object)}, "groups is missing"),
        ({"groups": np.arange(3)}, "4 entries"),
    ],
)
def test_bad_arguments_raise(kwargs, match):
    args = {
        "y": np.array([0, 1, 0, 1]),
        "scores": {"g": np.arange(4.0)},
        "groups": np.arange(4),
        "metrics": {"auroc": auroc_batched},
    }
    args.update(kwargs)
    with pytest.raises(ValueError, match=match):
        group_bootstrap(**args)


def test_frames_list_every_scope_metric_gate_and_pair(make_frame):
    f, y, scores = _data(make_frame)
    res = group_bootstrap(
        y, scores, f["group_id"], standard_metrics(), n_resamples=50, strata=f["task"]
    )
    table = res.to_frame()
    assert len(table) == 4 * 4 * 2
    assert set(table.columns) >= {"scope", "metric", "gate", "value", "ci_low", "ci_high"}
    assert (table["ci_low"] <= table["ci_high"]).all()
    deltas = res.deltas_frame([("sharp", "noisy")])
    assert len(deltas) == 4 * 4
    with pytest.raises(KeyError, match="unknown gate"):
        res.estimate("missing", "auroc")
