"""The one out-of-fold loop: every reported learned-gate score comes from a held-out fold.

Why: leakage control is only as good as the loop that applies it. Here, for every fold,
each trainable gate is cloned afresh (`sklearn.base.clone`), fitted on the training rows
alone (so TF-IDF vocabularies, IDF weights and scalers never see test rows) and asked to
score the held-out rows; `assert_no_group_leak` runs on every fold before any fitting.

Gate contract: a scikit-learn estimator with `fit(frame, y) -> self`,
`score(frame) -> np.ndarray` (one finite risk per row, larger = riskier) and a boolean
attribute `needs_fit`. A gate with `needs_fit = False` (a zero-shot signal) is scored once
on the whole frame and its scores are attributed to the folds like the others.

Output rows: for a partition splitter (`splitter.is_partition`, every row tested exactly
once, which is checked) the rows follow the frame's order; otherwise (target adaptation,
where test rows repeat across runs) they follow fold order, then row order within a fold.
"""

from __future__ import annotations

import sys
from collections.abc import Callable, Mapping
from typing import Any, Protocol

import numpy as np
import pandas as pd
from sklearn.base import clone
from tqdm.auto import tqdm

from runner.evaluation.splits import Fold, assert_no_group_leak, dataset_name

RESERVED_COLUMNS = ("example_id", "fold")


class Gate(Protocol):
    """What `out_of_fold` needs from a gate."""

    needs_fit: bool

    def fit(self, frame: pd.DataFrame, y: np.ndarray) -> Gate: ...

    def score(self, frame: pd.DataFrame) -> np.ndarray: ...


def _folds(splitter: Any, frame: pd.DataFrame) -> list[Fold]:
    if hasattr(splitter, "folds"):
        return list(splitter.folds(frame))
    return [
        Fold(i, str(i), np.asarray(tr, dtype=np.int64), np.asarray(te, dtype=np.int64))
        for i, (tr, te) in enumerate(splitter.split(frame))
    ]


def _checked_scores(values: object, n: int, gate: str, where: str) -> np.ndarray:
    arr = np.asarray(values, dtype=np.float64)
    if arr.shape != (n,):
        raise ValueError(f"gate {gate!r} returned shape {arr.shape} for {n} rows ({where})")
    bad = np.flatnonzero(~np.isfinite(arr))
    if bad.size:
        raise ValueError(
            f"gate {gate!r} returned {bad.size} non-finite risk(s) ({where}), first at "
            f"position {int(bad[0])}"
        )
    return arr


def out_of_fold(
    gates: Mapping[str, Gate],
    frame: pd.DataFrame,
    splitter: Any,
    y_col: str = "label",
    *,
    id_col: str = "example_id",
    group_col: str = "group_id",
    progress: bool | None = None,
    on_fit: Callable[[Fold, str, Any], None] | None = None,
) -> pd.DataFrame:
    """Out-of-fold risk scores of every gate.

    Parameters
    ----------
    gates : dict of str -> gate
        Gates by name (see the module docstring for the contract).
    frame : pandas.DataFrame
        Canonical response-level frame (needs `id_col`, `group_col`, `y_col`).
    splitter : splitter
        Anything with `folds(frame)` (see `runner.evaluation.splits`) or `split(frame)`.
    y_col : str
        Label column passed to `fit` as `y`.
    id_col, group_col : str
        Example-id and group columns.
    progress : bool, optional
        Show a tqdm bar; default: only when stderr is a terminal.
    on_fit : callable, optional
        Called as `on_fit(fold, gate_name, fitted_gate)` after each fit (for inspection
        and logging; the fitted clones are not kept otherwise).

    Returns
    -------
    pandas.DataFrame
        Columns `example_id`, `fold` (the fold index) and one risk column per gate.
    """
    if not gates:
        raise ValueError("gates is empty: give at least one gate")
    names = list(gates)
    if not all(isinstance(g, str) for g in names):
        raise ValueError(f"gate names must be strings, got {names!r}")
    clash = [g for g in names if g in RESERVED_COLUMNS]
    if clash:
        raise ValueError(f"gate names {clash} clash with output columns {RESERVED_COLUMNS}")
    for column in (id_col, group_col, y_col):
        if column not in frame.columns:
            raise ValueError(f"data set {dataset_name(frame)}: missing column {column!r}")
    for name, gate in gates.items():
        if not isinstance(getattr(gate, "needs_fit", None), bool):
            raise ValueError(f"gate {name!r} must have a boolean attribute needs_fit")
    y = frame[y_col].to_numpy()
    folds = _folds(splitter, frame)
    if not folds:
        raise ValueError(f"data set {dataset_name(frame)}: the splitter produced no folds")
    for fold in folds:
        assert_no_group_leak(frame, fold.train_idx, fold.test_idx, group_col=group_col)
    if getattr(splitter, "is_partition", False):
        tested = np.bincount(np.concatenate([f.test_idx for f in folds]), minlength=len(frame))
        wrong = np.flatnonzero(tested != 1)
        if wrong.size:
            raise ValueError(
                f"data set {dataset_name(frame)}: partition splitter tested {wrong.size} row(s) "
                f"not exactly once (row {int(wrong[0])}: {int(tested[wrong[0]])} times)"
            )

    fixed = {
        name: _checked_scores(gate.score(frame), len(frame), name, "whole frame")
        for name, gate in gates.items()
        if not gate.needs_fit
    }
    trainable = [name for name, gate in gates.items() if gate.needs_fit]
    show = sys.stderr.isatty() if progress is None else progress
    bar = tqdm(total=len(folds) * len(trainable), disable=not show, desc="out-of-fold fits")
    pieces = []
    try:
        for fold in folds:
            train, test = frame.iloc[fold.train_idx], frame.iloc[fold.test_idx]
            piece = {
                id_col: frame[id_col].to_numpy()[fold.test_idx],
                "fold": np.full(fold.test_idx.size, fold.index, dtype=np.int64),
                "_row": fold.test_idx,
            }
            for name, gate in gates.items():
                if name in fixed:
                    piece[name] = fixed[name][fold.test_idx]
                    continue
                fitted = clone(gate).fit(train, y[fold.train_idx])
                if on_fit is not None:
                    on_fit(fold, name, fitted)
                where = f"fold {fold.name!r}"
                piece[name] = _checked_scores(fitted.score(test), fold.test_idx.size, name, where)
                bar.update(1)
            pieces.append(pd.DataFrame(piece))
    finally:
        bar.close()
    out = pd.concat(pieces, ignore_index=True)
    if getattr(splitter, "is_partition", False):
        out = out.sort_values("_row", kind="stable")
    out = out.drop(columns="_row").reset_index(drop=True)
    return out.rename(columns={id_col: "example_id"})[["example_id", "fold", *names]]


ID_COLUMNS = ["example_id", "group_id", "task", "source", "label"]


def score_gates(
    gates: Mapping[str, Any],
    frame: pd.DataFrame,
    splitter: Any,
    progress: bool = True,
    group_col: str = "group_id",
) -> pd.DataFrame:
    """Per-example risk of every gate: out of fold for gates that fit, direct otherwise.

    `group_col` is the unit no fold may split (checked on every fold); `example_id` makes
    every row its own unit (a row-level CV). Returns the id columns, `fold` and one column
    per gate, in the frame's row order.
    """
    scores = out_of_fold(dict(gates), frame, splitter, progress=progress, group_col=group_col)
    ids = frame[[c for c in ID_COLUMNS if c in frame.columns]].reset_index(drop=True)
    merged = ids.merge(scores, on="example_id", how="left", validate="one_to_one")
    missing = merged[list(gates)].isna().any(axis=1)
    if missing.any():
        raise ValueError(
            f"{int(missing.sum())} rows got no out-of-fold score "
            f"(first: {merged.loc[missing, 'example_id'].iloc[0]})"
        )
    return merged
