"""Folds and bootstrap draws depend on which rows share a group, not on the groups' names."""

from __future__ import annotations

import numpy as np
import pytest

from runner.evaluation.bootstrap import group_bootstrap, standard_metrics
from runner.evaluation.group_order import group_codes
from runner.evaluation.splits import GroupedKFold


def _renamed(frame):
    """The same partition under other names whose sorted order differs from the original's."""
    out = frame.copy()
    codes = {g: f"z{999 - i:03d}" for i, g in enumerate(sorted(out["group_id"].unique()))}
    out["group_id"] = out["group_id"].map(codes)
    assert sorted(out["group_id"].unique()) != [codes[g] for g in sorted(codes)]
    return out


def test_groups_are_numbered_by_their_smallest_key():
    codes, names = group_codes(["b", "a", "b", "c"], ["5", "9", "1", "3"])
    assert names.tolist() == ["b", "c", "a"]
    assert codes.tolist() == [0, 2, 0, 1]


def test_without_a_key_groups_are_numbered_by_sorted_name():
    codes, names = group_codes(["b", "a", "b", "c"])
    assert names.tolist() == ["a", "b", "c"]
    assert codes.tolist() == [1, 0, 1, 2]


def test_grouped_folds_do_not_move_when_groups_are_renamed(frame):
    splitter = GroupedKFold(n_splits=5, seed=3)
    before = [f.test_idx.tolist() for f in splitter.folds(frame)]
    after = [f.test_idx.tolist() for f in splitter.folds(_renamed(frame))]
    assert before == after


def test_without_order_col_renaming_groups_moves_the_folds(frame):
    """The control: ordering by name is exactly what made the two RAGTruth forms differ."""
    splitter = GroupedKFold(n_splits=5, seed=3, order_col=None)
    before = [f.test_idx.tolist() for f in splitter.folds(frame)]
    after = [f.test_idx.tolist() for f in splitter.folds(_renamed(frame))]
    assert before != after


def test_grouped_folds_do_not_depend_on_row_order(frame):
    splitter = GroupedKFold(n_splits=5, seed=3)
    perm = np.random.default_rng(0).permutation(len(frame))
    shuffled = frame.iloc[perm].reset_index(drop=True)
    ids = frame["example_id"].to_numpy()
    ids_shuffled = shuffled["example_id"].to_numpy()
    before = [sorted(ids[f.test_idx]) for f in splitter.folds(frame)]
    after = [sorted(ids_shuffled[f.test_idx]) for f in splitter.folds(shuffled)]
    assert before == after


@pytest.mark.parametrize("with_key", [True, False])
def test_bootstrap_draws_follow_the_key_not_the_names(frame, with_key):
    y = frame["label"].to_numpy()
    scores = {"x1": frame["x1"].to_numpy(float)}
    key = frame["example_id"].to_numpy() if with_key else None
    kwargs = {"n_resamples": 60, "seed": 5, "order_key": key}
    a = group_bootstrap(y, scores, frame["group_id"].to_numpy(), standard_metrics(), **kwargs)
    renamed = _renamed(frame)["group_id"].to_numpy()
    b = group_bootstrap(y, scores, renamed, standard_metrics(), **kwargs)
    same = all(np.array_equal(a.samples[k], b.samples[k]) for k in a.samples)
    assert same is with_key


def test_bootstrap_rejects_a_key_of_the_wrong_length(frame):
    y = frame["label"].to_numpy()
    with pytest.raises(ValueError, match="order_key"):
        group_bootstrap(
            y,
            {"x1": frame["x1"].to_numpy(float)},
            frame["group_id"].to_numpy(),
            standard_metrics(),
            n_resamples=5,
            order_key=frame["example_id"].to_numpy()[:-1],
        )
