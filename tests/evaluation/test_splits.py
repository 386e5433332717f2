"""Splitters: grouped folds never leak, impossible splits fail loudly, target tests stay fixed."""

from __future__ import annotations

import json

import numpy as np
import pandas as pd
import pytest

from runner.errors import ConfigError, DataError, RunnerError
from runner.evaluation.splits import (
    GroupedKFold,
    GroupLeakError,
    KFold,
    LeaveSourceOut,
    TargetAdaptation,
    assert_no_group_leak,
)


def _halubench_like(n_per_class: int = 60, sources=("a", "b", "c")) -> pd.DataFrame:
    rows = []
    for source in sources:
        for label in (0, 1):
            for i in range(n_per_class):
                rows.append((f"{source}-{label}-{i}", source, label))
    f = pd.DataFrame(rows, columns=["example_id", "source", "label"])
    f["group_id"] = f["example_id"]
    f.attrs["dataset"] = "halubench-like"
    return f


# --- GroupedKFold -------------------------------------------------------------------------


def test_grouped_kfold_partitions_rows_and_never_splits_a_group(frame):
    splitter = GroupedKFold(n_splits=5, seed=13)
    folds = list(splitter.folds(frame))
    assert len(folds) == splitter.get_n_splits() == 5
    tested = np.concatenate([f.test_idx for f in folds])
    assert sorted(tested) == list(range(len(frame)))
    for f in folds:
        assert np.intersect1d(f.train_idx, f.test_idx).size == 0
        assert f.train_idx.size + f.test_idx.size == len(frame)
        assert_no_group_leak(frame, f.train_idx, f.test_idx)
        assert set(frame["label"].iloc[f.test_idx]) == {0, 1}


def test_grouped_kfold_is_deterministic_and_seeded(frame):
    a = [te.tolist() for _, te in GroupedKFold(seed=13).split(frame)]
    b = [te.tolist() for _, te in GroupedKFold(seed=13).split(frame)]
    c = [te.tolist() for _, te in GroupedKFold(seed=14).split(frame)]
    assert a == b
    assert a != c


def test_grouped_kfold_with_fewer_groups_than_folds_names_the_counts(make_frame):
    small = make_frame(n_groups=4, group_size=3)
    small.attrs["dataset"] = "tiny"
    with pytest.raises(
        ConfigError,
        match=r"tiny: 4 groups in 'group_id', fewer than n_splits=5; set split.n_splits ≤ 4",
    ):
        list(GroupedKFold(n_splits=5).folds(small))


def test_grouped_kfold_with_positives_in_too_few_groups_raises(frame):
    f = frame.copy()
    f["label"] = (f["group_id"].isin(["g000", "g001", "g002"])).astype(int)
    with pytest.raises(ConfigError, match=r"only 3 groups contain label=1.*split\.n_splits ≤ 3"):
        list(GroupedKFold(n_splits=5).folds(f))


@pytest.mark.parametrize(
    ("change", "match"),
    [
        (lambda f: f.drop(columns="group_id"), "missing column"),
        (lambda f: f.assign(label=f["label"] * 2), "labels must be 0/1"),
        (lambda f: f.assign(group_id=f["group_id"].where(f.index != 4, None)), "row 4"),
        (lambda f: f.iloc[:0], "has no rows"),
    ],
)
def test_grouped_kfold_rejects_bad_frames(frame, change, match):
    with pytest.raises(ValueError, match=match):
        list(GroupedKFold().folds(change(frame)))


def test_n_splits_below_two_is_a_config_error_naming_the_setting():
    with pytest.raises(ConfigError, match=r"split\.n_splits must be an integer ≥ 2"):
        GroupedKFold(n_splits=1)
    with pytest.raises(ConfigError, match=r"split\.n_splits"):
        KFold(n_splits=True)


def test_grouped_kfold_on_ragtruth_test_has_450_groups_and_no_leak(data_dir):
    raw = pd.read_parquet(data_dir / "ragtruth" / "test.parquet")
    f = pd.DataFrame(
        {
            "example_id": raw["id"].astype(str),
            "group_id": raw["task_type"] + "\x1f" + raw["context"],
            "label": (raw["hallucination_labels"] != "[]").astype(int),
        }
    )
    f.attrs["dataset"] = "ragtruth/test"
    assert f["group_id"].nunique() == 450
    assert set(f.groupby("group_id").size()) == {6}
    folds = list(GroupedKFold(n_splits=5, seed=13).folds(f))
    assert len(folds) == 5
    assert sorted(np.concatenate([x.test_idx for x in folds])) == list(range(2700))
    for x in folds:
        assert_no_group_leak(f, x.train_idx, x.test_idx)
        assert f["group_id"].iloc[x.test_idx].nunique() == 90
        assert abs(f["label"].iloc[x.test_idx].mean() - f["label"].mean()) < 0.05


# --- KFold --------------------------------------------------------------------------------


def test_stratified_kfold_keeps_the_class_balance_in_every_fold():
    f = _halubench_like(n_per_class=50, sources=("a",))
    folds = list(KFold(n_splits=5, seed=13).folds(f))
    assert len(folds) == 5
    for x in folds:
        assert f["label"].iloc[x.test_idx].sum() == 10
        assert x.test_idx.size == 20
    assert sorted(np.concatenate([x.test_idx for x in folds])) == list(range(100))


def test_stratified_kfold_with_too_few_positives_raises():
    f = pd.DataFrame({"label": [1, 1, 0, 0, 0, 0, 0, 0, 0, 0]})
    f.attrs["dataset"] = "few-positives"
    with pytest.raises(ValueError, match=r"few-positives: 2 positive / 8 negative"):
        list(KFold(n_splits=5).folds(f))


def test_plain_kfold_checks_each_test_fold_for_both_classes():
    f = pd.DataFrame({"label": [1, 1, 0, 0, 0, 0, 0, 0, 0, 0]})
    with pytest.raises(ValueError, match=r"test side of fold '.*' holds one class"):
        list(KFold(n_splits=5, stratified=False, shuffle=False).folds(f))


# --- LeaveSourceOut ------------------------------------------------------------------------


def test_leave_source_out_holds_out_each_source_once_by_name():
    f = _halubench_like(n_per_class=5)
    splitter = LeaveSourceOut()
    folds = list(splitter.folds(f))
    assert [x.name for x in folds] == ["a", "b", "c"]
    assert splitter.get_n_splits(f) == 3
    for x in folds:
        assert set(f["source"].iloc[x.test_idx]) == {x.name}
        assert x.name not in set(f["source"].iloc[x.train_idx])
        assert x.train_idx.size + x.test_idx.size == len(f)


def test_leave_source_out_rejects_a_one_class_source_and_a_single_source():
    f = _halubench_like(n_per_class=5)
    f = f[~((f["source"] == "b") & (f["label"] == 1))]
    with pytest.raises(ValueError, match=r"source 'b' holds one class \(0 positive / 5 negative\)"):
        list(LeaveSourceOut().folds(f))
    with pytest.raises(ValueError, match="needs ≥ 2 sources"):
        list(LeaveSourceOut().folds(_halubench_like(sources=("a",))))
    with pytest.raises(ValueError, match="needs the frame"):
        LeaveSourceOut().get_n_splits()


# --- TargetAdaptation ---------------------------------------------------------------------


def _idx(records, **where):
    return [r for r in records if all(getattr(r, k) == v for k, v in where.items())]


def test_target_test_set_is_a_fixed_stratified_twenty_percent_per_source():
    f = _halubench_like(n_per_class=60)  # 120 rows per source
    ta = TargetAdaptation(ks=(25, 50), n_seeds=3)
    tests = ta.test_sets(f)
    assert list(tests) == ["a", "b", "c"]
    for source, idx in tests.items():
        assert idx.size == 24
        assert set(f["source"].iloc[idx]) == {source}
        assert f["label"].iloc[idx].sum() == 12
    for r in ta.records(f):
        np.testing.assert_array_equal(r.test_idx, tests[r.source])


def test_repetition_seed_moves_samples_but_never_the_test_set():
    f = _halubench_like(n_per_class=60)
    records = TargetAdaptation(ks=(25,), n_seeds=4).records(f)
    a = _idx(records, source="a")
    assert len({tuple(r.train_idx) for r in a}) == 4  # every repetition draws anew
    assert len({tuple(r.test_idx) for r in a}) == 1  # the test set does not move
    # The test set depends on the base seed only: more repetitions or other ks leave it alone.
    other = TargetAdaptation(ks=(50, 100), n_seeds=7).test_sets(f)
    np.testing.assert_array_equal(other["a"], a[0].test_idx)
    moved = TargetAdaptation(ks=(25,), n_seeds=4, seed=99).test_sets(f)
    assert not np.array_equal(moved["a"], a[0].test_idx)


def test_test_set_of_a_source_does_not_depend_on_the_other_sources():
    full = _halubench_like(n_per_class=60)
    only_b = full[full["source"] != "a"].reset_index(drop=True)
    ids_full = full["example_id"].iloc[TargetAdaptation().test_sets(full)["b"]]
    ids_b = only_b["example_id"].iloc[TargetAdaptation().test_sets(only_b)["b"]]
    assert list(ids_full) == list(ids_b)


def test_no_test_row_is_ever_in_a_training_sample_and_samples_preserve_prevalence():
    f = _halubench_like(n_per_class=60)
    f.loc[f.index[:40], "label"] = 0  # source "a": 20 positive / 100 negative
    for r in TargetAdaptation(ks=(25, 50), n_seeds=5).records(f):
        assert np.intersect1d(r.train_idx, r.test_idx).size == 0
        assert set(f["source"].iloc[r.train_idx]) == {r.source}
        assert r.train_idx.size == r.k_used == r.k
        assert np.unique(r.train_idx).size == r.train_idx.size
        pool = f[(f["source"] == r.source)].drop(f.index[r.test_idx])
        expected_pos = r.k * pool["label"].mean()
        assert abs(f["label"].iloc[r.train_idx].sum() - expected_pos) < 1
        assert set(f["label"].iloc[r.train_idx]) == {0, 1}


def test_k_above_the_pool_is_capped_and_reported():
    f = _halubench_like(n_per_class=60)  # pool per source: 120 - 24 = 96
    ta = TargetAdaptation(ks=(50, 200), n_seeds=2)
    records = ta.records(f)
    assert len(records) == 3 * 2 * 2 == ta.get_n_splits(f)
    capped = _idx(records, k=200)
    assert all(r.k_used == 96 and r.train_idx.size == 96 for r in capped)
    assert ta.caps(f) == [("a", 200, 96), ("b", 200, 96), ("c", 200, 96)]


def test_a_group_aware_pool_keeps_every_test_group_out_of_every_sample():
    f = _halubench_like(n_per_class=60)
    f["group_id"] = f["source"] + ":" + (np.arange(len(f)) // 2).astype(str)  # passage pairs
    plain = TargetAdaptation(ks=(25, 200), n_seeds=3)
    aware = TargetAdaptation(ks=(25, 200), n_seeds=3, group_col="group_id")
    groups = f["group_id"].to_numpy()
    shared = sum(
        np.isin(groups[r.test_idx], groups[r.train_idx]).sum()
        for r in plain.records(f)
        if r.k == 200
    )
    assert shared > 0  # row-level sampling lets a passage sit on both sides
    for r in aware.records(f):
        assert not np.isin(groups[r.train_idx], groups[r.test_idx]).any()
    np.testing.assert_array_equal(aware.test_sets(f)["a"], plain.test_sets(f)["a"])
    assert all(k_used < 96 for _, k, k_used in aware.caps(f) if k == 200)


def test_target_folds_are_named_and_not_a_partition():
    f = _halubench_like(n_per_class=20)
    ta = TargetAdaptation(ks=(10,), n_seeds=2)
    assert ta.is_partition is False
    assert [x.name for x in ta.folds(f)][:2] == ["a|k=10|rep=0", "a|k=10|rep=1"]


def test_target_adaptation_samples_are_byte_identical_across_runs():
    f = _halubench_like(n_per_class=30)

    def dump(records):
        return json.dumps([(r.source, r.k, r.rep, r.train_idx.tolist()) for r in records])

    assert dump(TargetAdaptation().records(f)) == dump(TargetAdaptation().records(f))


def test_target_adaptation_rejects_sources_too_small_to_split():
    f = _halubench_like(n_per_class=5)
    f = f[~((f["source"] == "c") & (f["label"] == 1))].iloc[:-4]  # c: 1 negative, no positive
    f = pd.concat([f, pd.DataFrame({"example_id": ["c-1-0"], "source": ["c"], "label": [1]})])
    f.attrs["dataset"] = "halubench-like"
    with pytest.raises(ValueError, match=r"source 'c' has 2 rows \(1 positive / 1 negative\)"):
        TargetAdaptation().test_sets(f.reset_index(drop=True))


@pytest.mark.parametrize(
    ("kwargs", "match"),
    [
        ({"test_fraction": 1.0}, "test_fraction"),
        ({"ks": (1,)}, "ks must be a list of integers"),
        ({"ks": ()}, "ks must be a list of integers"),
        ({"n_seeds": 0}, "n_seeds"),
    ],
)
def test_target_adaptation_rejects_bad_settings(kwargs, match):
    with pytest.raises(ConfigError, match=rf"split\.{match}"):
        TargetAdaptation(**kwargs)


# --- assert_no_group_leak -----------------------------------------------------------------


def test_group_leak_names_the_leaking_groups(frame):
    train = np.flatnonzero(frame["group_id"].isin(["g000", "g001", "g002"]))
    test = np.array([1, 4, 30])  # g000, g001, g010
    with pytest.raises(GroupLeakError, match=r"2 group\(s\) of 'group_id'.*'g000'.*'g001'"):
        assert_no_group_leak(frame, train, test)
    assert_no_group_leak(frame, train, np.array([30, 31]))  # disjoint: no error


def test_group_leak_names_each_group_by_its_first_row_id(frame):
    # A group id is often a hash (ctx:<sha1>); its first row's example_id is what a user can
    # find in their file. Rows 0-2 are g000, rows 3-5 g001.
    train = np.flatnonzero(frame["group_id"].isin(["g000", "g001"]))
    test = np.array([1, 4])
    match = r"'g000' \(first row 'ex0000'\), 'g001' \(first row 'ex0003'\)"
    with pytest.raises(GroupLeakError, match=match):
        assert_no_group_leak(frame, train, test)
    bare = frame.drop(columns="example_id")  # no ids: the groups alone
    with pytest.raises(GroupLeakError, match=r"both train and test sides: 'g000', 'g001';"):
        assert_no_group_leak(bare, train, test)


def test_a_bad_label_names_the_row_by_its_id(frame):
    bad = frame.assign(label=frame["label"].astype(object))
    bad.loc[7, "label"] = "maybe"
    with pytest.raises(DataError, match=r"row 7 \(id 'ex0007'\), field 'label'") as err:
        list(KFold(n_splits=2).folds(bad))
    assert err.value.ident == "ex0007"


def test_group_leak_rejects_indices_outside_the_frame(frame):
    with pytest.raises(ValueError, match="outside the frame"):
        assert_no_group_leak(frame, np.array([0]), np.array([len(frame)]))


# --- every user mistake is a RunnerError with a fix -------------------------------------


def _leak(frame):
    train = np.flatnonzero(frame["group_id"].isin(["g000"]))
    assert_no_group_leak(frame, train, np.array([1]))


@pytest.mark.parametrize(
    ("mistake", "kind", "fix"),
    [
        (lambda f: list(GroupedKFold(n_splits=100).folds(f)), ConfigError, "set split.n_splits"),
        (lambda f: list(KFold(n_splits=10_000).folds(f)), ConfigError, "set split.n_splits"),
        (lambda f: list(GroupedKFold().folds(f.drop(columns="label"))), DataError, "missing"),
        (lambda f: list(GroupedKFold().folds(f.to_dict())), DataError, "data.frame"),
        (
            lambda f: list(LeaveSourceOut().folds(_halubench_like(sources=("a",)))),
            ConfigError,
            "use a data set with several sources",
        ),
        (lambda f: LeaveSourceOut().get_n_splits(), ConfigError, "split=grouped_kfold"),
        (lambda f: TargetAdaptation().get_n_splits(), ConfigError, "split=grouped_kfold"),
        (
            lambda f: TargetAdaptation().test_sets(_halubench_like(n_per_class=1)),
            ConfigError,
            "splits.target.test_fraction",
        ),
        (_leak, ConfigError, "split=grouped_kfold"),
        (
            lambda f: assert_no_group_leak(f, np.array([0]), np.array([len(f)])),
            ConfigError,
            "positional row indices",
        ),
    ],
)
def test_every_splitter_mistake_is_a_runner_error_that_names_the_fix(frame, mistake, kind, fix):
    # `python -m runner` prints a RunnerError as one `error:` line; anything else is a traceback
    with pytest.raises(kind, match=fix) as err:
        mistake(frame)
    assert isinstance(err.value, RunnerError) and isinstance(err.value, ValueError)
