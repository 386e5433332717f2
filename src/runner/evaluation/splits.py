"""Train/test splitters for the RAGScope protocol, with one interface and loud failures.

Why: the protocol's headline claim is leakage control, so every split is made here, checked
here, and fails with a message naming the data set and the counts when it cannot work (too
few groups for the folds, a test fold or a source with one class). No splitter drops rows
or quietly returns fewer folds.

Interface shared by all splitters:

- `split(frame)` yields `(train_idx, test_idx)` pairs of *positional* row indices
  (`frame.iloc`), sorted ascending, as numpy int64 arrays;
- `folds(frame)` yields the same as `Fold(index, name, train_idx, test_idx)`, where
  `name` says what was held out (`"0"`, `"1"`, … for K-fold; the source name for
  leave-source-out; `"<source>|k=<k>|rep=<r>"` for target adaptation);
- `get_n_splits(frame)` is the number of folds; the K-fold splitters also carry
  `n_splits`;
- `is_partition` is True when the test folds cover every row exactly once (the K-fold
  splitters and leave-source-out), so out-of-fold scores are one per row.

The data set named in errors is `frame.attrs["dataset"]`, which every loader sets
(`runner.data.base.LoadedData`); a row or a group is named by its first ``example_id`` too,
because a group id is a hash a user cannot search their file for. A split
that cannot work with the configured settings raises `ConfigError` (a `ValueError`) whose
message names the setting to change (``split.n_splits`` ...); bad data raises `DataError`.
Settings that need no data are checked in the constructor, so `runner.pipeline.check_config`
catches them before any data is loaded.
"""

from __future__ import annotations

import zlib
from collections.abc import Iterator, Sequence
from dataclasses import dataclass

import numpy as np
import pandas as pd
from sklearn.model_selection import KFold as _SkKFold
from sklearn.model_selection import StratifiedGroupKFold, StratifiedKFold

from runner.errors import ConfigError, DataError
from runner.evaluation.group_order import group_codes
from runner.settings import SEED


@dataclass(frozen=True)
class Fold:
    """One train/test split: positional indices plus what was held out."""

    index: int
    name: str
    train_idx: np.ndarray
    test_idx: np.ndarray


@dataclass(frozen=True)
class TargetRecord:
    """One target-adaptation run: k labelled target rows to fit on, the fixed test set.

    `k_used` is below `k` when the source's pool (the 80 % outside its test set) holds
    fewer than k rows; the whole pool is then used.
    """

    source: str
    k: int
    k_used: int
    rep: int
    train_idx: np.ndarray
    test_idx: np.ndarray


def dataset_name(frame: pd.DataFrame) -> str:
    """The data set's name for messages: `frame.attrs["dataset"]`, else "<unnamed frame>"."""
    return str(frame.attrs.get("dataset", "<unnamed frame>"))


def _row_id(frame: pd.DataFrame, row: int) -> str | None:
    """The ``example_id`` at positional `row`, for messages (None without that column)."""
    if "example_id" not in frame.columns:
        return None
    return str(frame["example_id"].iloc[row])


def _first_row_ids(
    frame: pd.DataFrame, group_col: str, groups: Sequence[object]
) -> list[str] | None:
    """The ``example_id`` of each group's first row (frame order), for messages: a group id
    such as ``ctx:<sha1>`` is a hash, the row id is what a user finds in their file. None
    without an ``example_id`` column."""
    if "example_id" not in frame.columns:
        return None
    firsts = frame.drop_duplicates(group_col).set_index(group_col)["example_id"]
    return [str(firsts[g]) for g in groups]


def _require_columns(frame: pd.DataFrame, columns: Sequence[str]) -> None:
    if not isinstance(frame, pd.DataFrame):
        raise DataError(
            f"a splitter needs the data as a pandas DataFrame, got {type(frame).__name__}: "
            "pass the loaded data set's frame (`data.frame`)"
        )
    missing = [c for c in columns if c not in frame.columns]
    if missing:
        raise DataError(
            f"data set {dataset_name(frame)}: missing column(s) {missing}; "
            f"has {list(frame.columns)}",
            field=missing[0],
        )
    if len(frame) == 0:
        raise DataError(f"data set {dataset_name(frame)} has no rows")
    for column in columns:
        missing_rows = np.flatnonzero(frame[column].isna().to_numpy())
        if missing_rows.size:
            raise DataError(
                f"data set {dataset_name(frame)}: {missing_rows.size} missing value(s)",
                row=int(missing_rows[0]),
                field=column,
                ident=_row_id(frame, int(missing_rows[0])),
            )


def _labels(frame: pd.DataFrame, y_col: str) -> np.ndarray:
    values = frame[y_col].to_numpy()
    bad = ~np.isin(values, (0, 1))
    if bad.any():
        row = int(np.flatnonzero(bad)[0])
        raise DataError(
            f"data set {dataset_name(frame)}: labels must be 0/1 (1 = unfaithful), "
            f"got {values[row]!r}",
            row=row,
            field=y_col,
            ident=_row_id(frame, row),
        )
    return values.astype(np.int64)


def _class_counts(y: np.ndarray) -> str:
    return f"{int((y == 1).sum())} positive / {int((y == 0).sum())} negative"


def _check_test_folds(frame: pd.DataFrame, y: np.ndarray, folds: list[Fold]) -> None:
    for fold in folds:
        for side, idx in (("test", fold.test_idx), ("train", fold.train_idx)):
            sub = y[idx]
            if idx.size == 0 or sub.min() == sub.max():
                raise ConfigError(
                    f"data set {dataset_name(frame)}: {side} side of fold {fold.name!r} holds "
                    f"one class ({_class_counts(sub)} among {idx.size} rows); use fewer folds "
                    "(split.n_splits) or another split"
                )


def _checked_folds(
    frame: pd.DataFrame, y: np.ndarray, pairs: Iterator[tuple[np.ndarray, np.ndarray]]
) -> list[Fold]:
    """scikit-learn's (train, test) index pairs as sorted `Fold`s, each side holding both
    classes."""
    folds = [
        Fold(i, str(i), np.sort(tr).astype(np.int64), np.sort(te).astype(np.int64))
        for i, (tr, te) in enumerate(pairs)
    ]
    _check_test_folds(frame, y, folds)
    return folds


class _Splitter:
    """Shared `split` on top of a subclass's `folds`."""

    is_partition: bool = True

    def folds(self, frame: pd.DataFrame) -> Iterator[Fold]:  # pragma: no cover - abstract
        raise NotImplementedError

    @classmethod
    def check_settings(cls, **settings: object) -> None:
        """Refuse settings that cannot work, by the constructor's own checks (the derived
        config schema calls this at the pre-flight check, before any data)."""
        cls(**settings)

    def split(self, frame: pd.DataFrame) -> Iterator[tuple[np.ndarray, np.ndarray]]:
        """Yield `(train_idx, test_idx)` positional index pairs, one per fold."""
        for fold in self.folds(frame):
            yield fold.train_idx, fold.test_idx


def check_n_splits(n_splits: object) -> int:
    """`n_splits` as an int, or `ConfigError` naming ``split.n_splits`` (needs no data)."""
    if isinstance(n_splits, bool) or not isinstance(n_splits, int | np.integer) or n_splits < 2:
        raise ConfigError(
            f"split.n_splits must be an integer ≥ 2 (every fold needs a train and a test "
            f"side), got {n_splits!r}"
        )
    return int(n_splits)


def _fewer_than_splits(what: str, count: int, n_splits: int) -> ConfigError:
    fix = f"set split.n_splits ≤ {count}" if count >= 2 else "use another split"
    return ConfigError(f"{what}, fewer than n_splits={n_splits}; {fix}")


class GroupedKFold(_Splitter):
    """Stratified K-fold over groups: no group crosses a train/test boundary.

    Wraps `sklearn.model_selection.StratifiedGroupKFold` (stratified on `label`, groups
    from `group_id`; shuffled with `random_state=seed` when `shuffle`).

    Parameters
    ----------
    n_splits : int
        Number of folds (≥ 2).
    seed : int
        Shuffling seed.
    shuffle : bool
        Shuffle groups before assigning folds.
    y_col, group_col : str
        Label and group columns.
    order_col : str, optional
        Column that orders the groups before they are shuffled and assigned: each group
        by its smallest value (the example id by default). The folds then depend on which
        rows share a group, not on what the groups are called, so RAGTruth's processed
        parquet (groups named by a context hash) and its original release (named by source
        id) get the same folds. None: groups ordered by sorted name. A frame without the
        column falls back to sorted names.
    """

    def __init__(
        self,
        n_splits: int = 5,
        seed: int = SEED,
        shuffle: bool = True,
        y_col: str = "label",
        group_col: str = "group_id",
        order_col: str | None = "example_id",
    ) -> None:
        self.n_splits = check_n_splits(n_splits)
        self.seed, self.shuffle = int(seed), bool(shuffle)
        self.y_col, self.group_col, self.order_col = y_col, group_col, order_col

    def get_n_splits(self, frame: pd.DataFrame | None = None) -> int:
        """Number of folds."""
        return self.n_splits

    def folds(self, frame: pd.DataFrame) -> Iterator[Fold]:
        """Yield the grouped folds; raise ConfigError when they cannot all hold both classes."""
        _require_columns(frame, [self.y_col, self.group_col])
        y = _labels(frame, self.y_col)
        groups = frame[self.group_col].to_numpy()
        name = dataset_name(frame)
        n_groups = pd.unique(groups).shape[0]
        if n_groups < self.n_splits:
            raise _fewer_than_splits(
                f"data set {name}: {n_groups} groups in {self.group_col!r}",
                n_groups,
                self.n_splits,
            )
        for cls in (1, 0):
            with_cls = pd.unique(groups[y == cls]).shape[0]
            if with_cls < self.n_splits:
                raise _fewer_than_splits(
                    f"data set {name}: only {with_cls} groups contain label={cls} (a test fold "
                    f"would hold one class)",
                    with_cls,
                    self.n_splits,
                )
        splitter = StratifiedGroupKFold(
            n_splits=self.n_splits,
            shuffle=self.shuffle,
            random_state=self.seed if self.shuffle else None,
        )
        order = None
        if self.order_col is not None and self.order_col in frame.columns:
            order = frame[self.order_col].to_numpy()
        codes, _ = group_codes(groups, order)
        yield from _checked_folds(frame, y, splitter.split(np.zeros(len(frame)), y, codes))


class KFold(_Splitter):
    """Row-level K-fold (stratified on `label` by default), for HaluBench in-domain CV.

    Parameters
    ----------
    n_splits : int
        Number of folds (≥ 2).
    seed : int
        Shuffling seed.
    stratified : bool
        Use `StratifiedKFold` on the label (else plain `KFold`).
    shuffle : bool
        Shuffle rows before assigning folds.
    y_col : str
        Label column.
    """

    def __init__(
        self,
        n_splits: int = 5,
        seed: int = SEED,
        stratified: bool = True,
        shuffle: bool = True,
        y_col: str = "label",
    ) -> None:
        self.n_splits = check_n_splits(n_splits)
        self.seed, self.stratified, self.shuffle = int(seed), bool(stratified), bool(shuffle)
        self.y_col = y_col

    def get_n_splits(self, frame: pd.DataFrame | None = None) -> int:
        """Number of folds."""
        return self.n_splits

    def folds(self, frame: pd.DataFrame) -> Iterator[Fold]:
        """Yield the folds; raise ConfigError when some fold would hold one class."""
        _require_columns(frame, [self.y_col])
        y = _labels(frame, self.y_col)
        name = dataset_name(frame)
        if len(frame) < self.n_splits:
            raise _fewer_than_splits(
                f"data set {name}: {len(frame)} rows", len(frame), self.n_splits
            )
        if self.stratified:
            smallest = min(int((y == 1).sum()), int((y == 0).sum()))
            if smallest < self.n_splits:
                raise _fewer_than_splits(
                    f"data set {name}: {_class_counts(y)} rows; the smaller class has "
                    f"{smallest} rows (a test fold would hold one class)",
                    smallest,
                    self.n_splits,
                )
        cls = StratifiedKFold if self.stratified else _SkKFold
        splitter = cls(
            n_splits=self.n_splits,
            shuffle=self.shuffle,
            random_state=self.seed if self.shuffle else None,
        )
        yield from _checked_folds(frame, y, splitter.split(np.zeros(len(frame)), y))


class LeaveSourceOut(_Splitter):
    """Hold out each source in turn (sorted by name): train on the others, test on it.

    Parameters
    ----------
    column : str
        Column naming each row's source.
    y_col : str
        Label column.
    """

    def __init__(self, column: str = "source", y_col: str = "label") -> None:
        self.column, self.y_col = column, y_col

    def _sources(self, frame: pd.DataFrame) -> tuple[np.ndarray, list[str]]:
        _require_columns(frame, [self.column, self.y_col])
        values = frame[self.column].astype(str).to_numpy()
        sources = sorted(set(values))
        if len(sources) < 2:
            raise ConfigError(
                f"data set {dataset_name(frame)}: leave-source-out needs ≥ 2 sources in "
                f"{self.column!r}, found {sources}; use a data set with several sources or "
                "another split"
            )
        return values, sources

    def get_n_splits(self, frame: pd.DataFrame | None = None) -> int:
        """Number of sources in `frame` (required: it depends on the data)."""
        if frame is None:
            raise ConfigError(
                "LeaveSourceOut has one fold per source, so get_n_splits needs the frame; "
                "where a fixed number of folds is expected use split=grouped_kfold or "
                "split=kfold"
            )
        return len(self._sources(frame)[1])

    def folds(self, frame: pd.DataFrame) -> Iterator[Fold]:
        """Yield one fold per source, named by the held-out source."""
        values, sources = self._sources(frame)
        y = _labels(frame, self.y_col)
        for source in sources:
            sub = y[values == source]
            if sub.min() == sub.max():
                raise ConfigError(
                    f"data set {dataset_name(frame)}: source {source!r} holds one class "
                    f"({_class_counts(sub)}); its held-out metrics would be undefined, so "
                    "leave-source-out cannot hold it out"
                )
        folds = [
            Fold(
                i,
                source,
                np.flatnonzero(values != source).astype(np.int64),
                np.flatnonzero(values == source).astype(np.int64),
            )
            for i, source in enumerate(sources)
        ]
        _check_test_folds(frame, y, folds)
        yield from folds


def _allocate(class_sizes: np.ndarray, total: int, *, at_least_one: bool) -> np.ndarray:
    """Split `total` draws across classes in proportion to `class_sizes` (largest remainder).

    Remainder ties go to the class listed first. With `at_least_one`, every non-empty class
    gets ≥ 1 draw when `total` allows (taken from the largest allocation).
    """
    exact = class_sizes * total / class_sizes.sum()
    alloc = np.floor(exact).astype(np.int64)
    remainder = exact - alloc
    for c in np.argsort(-remainder, kind="stable")[: total - alloc.sum()]:
        alloc[c] += 1
    if at_least_one and total >= (class_sizes > 0).sum():
        for c in np.flatnonzero((alloc == 0) & (class_sizes > 0)):
            alloc[np.argmax(alloc)] -= 1
            alloc[c] += 1
    return alloc


def _stratified_sample(
    rng: np.random.Generator, idx: np.ndarray, y: np.ndarray, size: int
) -> np.ndarray:
    """`size` positions from `idx`, class shares as in `y[idx]`, each class ≥ 1 if possible."""
    by_class = [idx[y[idx] == c] for c in (0, 1)]
    alloc = _allocate(np.array([b.size for b in by_class]), size, at_least_one=True)
    picked = [rng.choice(b, size=a, replace=False) for b, a in zip(by_class, alloc, strict=True)]
    return np.sort(np.concatenate(picked)).astype(np.int64)


def _source_key(source: str) -> int:
    return zlib.crc32(source.encode("utf-8"))


def check_target_adaptation(test_fraction: object, ks: object, n_seeds: object) -> None:
    """Raise `ConfigError` unless the target-adaptation settings can work on any data."""
    if isinstance(test_fraction, bool) or not isinstance(test_fraction, int | float):
        raise ConfigError(f"split.test_fraction must be a number in (0, 1), got {test_fraction!r}")
    if not 0.0 < float(test_fraction) < 1.0:
        raise ConfigError(f"split.test_fraction must lie in (0, 1), got {test_fraction!r}")
    ks = list(ks) if isinstance(ks, Sequence) and not isinstance(ks, str) else [ks]
    if not ks or any(
        isinstance(k, bool) or not isinstance(k, int | np.integer) or k < 2 for k in ks
    ):
        raise ConfigError(f"split.ks must be a list of integers ≥ 2, got {ks}")
    if isinstance(n_seeds, bool) or not isinstance(n_seeds, int | np.integer) or n_seeds < 1:
        raise ConfigError(f"split.n_seeds must be a positive integer, got {n_seeds!r}")


class TargetAdaptation(_Splitter):
    """Target-only adaptation: per source a fixed test set and k-row labelled samples.

    For each source: a stratified test set of ⌈test_fraction · n_source⌉ rows, drawn from
    a generator seeded by (`seed`, source name) only, so it never moves with the
    repetition; then for each k in `ks` and each repetition r in 0..n_seeds−1 a
    prevalence-preserving stratified sample of k rows from the remaining pool, seeded by
    (`seed`, source, k, r). Class counts follow the largest-remainder rule, with at least
    one row of each class so that a sample can be fitted. k larger than the pool is capped
    at the pool size (`k_used` in the records, and listed by `caps`).

    Parameters
    ----------
    test_fraction : float
        Share of each source held out as its fixed test set, in (0, 1).
    ks : sequence of int
        Labelled-sample sizes.
    n_seeds : int
        Repetitions per k.
    seed : int
        Base seed.
    column, y_col : str
        Source and label columns.
    group_col : str, optional
        When set, rows sharing a group with the test set are kept out of the pool, so no
        context (e.g. a HaluBench passage) is on both sides; the pool shrinks and k is
        capped (and reported) where needed.
    """

    is_partition = False

    def __init__(
        self,
        test_fraction: float = 0.2,
        ks: Sequence[int] = (25, 50, 100, 200),
        n_seeds: int = 10,
        seed: int = SEED,
        column: str = "source",
        y_col: str = "label",
        group_col: str | None = None,
    ) -> None:
        check_target_adaptation(test_fraction, ks, n_seeds)
        ks = tuple(ks)
        self.test_fraction = float(test_fraction)
        self.ks = tuple(int(k) for k in ks)
        self.n_seeds, self.seed = int(n_seeds), int(seed)
        self.column, self.y_col, self.group_col = column, y_col, group_col

    def _pool(self, frame: pd.DataFrame, rows: np.ndarray, test_idx: np.ndarray) -> np.ndarray:
        """Rows a sample may draw from: the source's rows outside the test set, and, with
        `group_col`, outside every group the test set touches."""
        pool = np.setdiff1d(rows, test_idx)
        if self.group_col is None:
            return pool
        groups = frame[self.group_col].to_numpy()
        return pool[~np.isin(groups[pool], groups[test_idx])]

    def test_sets(self, frame: pd.DataFrame) -> dict[str, np.ndarray]:
        """Source -> positional indices of its fixed stratified test set."""
        _require_columns(frame, [self.column, self.y_col])
        y = _labels(frame, self.y_col)
        values = frame[self.column].astype(str).to_numpy()
        out = {}
        for source in sorted(set(values)):
            rows = np.flatnonzero(values == source)
            sub = y[rows]
            n_test = int(np.ceil(np.round(self.test_fraction * rows.size, 9)))
            if min((sub == 1).sum(), (sub == 0).sum()) < 2 or rows.size - n_test < 2:
                raise ConfigError(
                    f"data set {dataset_name(frame)}: source {source!r} has {rows.size} rows "
                    f"({_class_counts(sub)}); a stratified {self.test_fraction:.0%} test set "
                    "and a labelled pool need ≥ 2 rows of each class; change the split's "
                    "test_fraction (split.test_fraction; rq5_source_shift: "
                    "splits.target.test_fraction) or leave that source out of the data"
                )
            rng = np.random.default_rng([self.seed, _source_key(source)])
            out[source] = _stratified_sample(rng, rows, y, n_test)
            pool = self._pool(frame, rows, out[source])
            if pool.size < 2 or y[pool].min() == y[pool].max():
                raise ConfigError(
                    f"data set {dataset_name(frame)}: source {source!r}: the pool outside its "
                    f"test set holds one class ({_class_counts(y[pool])}); lower the split's "
                    "test_fraction or set its group_col to null (rq5_source_shift: "
                    "splits.target.test_fraction, splits.target.group_col)"
                )
        return out

    def records(self, frame: pd.DataFrame) -> list[TargetRecord]:
        """Every (source, k, repetition) run, in source, k, repetition order."""
        tests = self.test_sets(frame)
        y = _labels(frame, self.y_col)
        values = frame[self.column].astype(str).to_numpy()
        out = []
        for source, test_idx in tests.items():
            pool = self._pool(frame, np.flatnonzero(values == source), test_idx)
            for k in self.ks:
                k_used = min(k, pool.size)
                for rep in range(self.n_seeds):
                    rng = np.random.default_rng([self.seed, _source_key(source), k, rep])
                    train_idx = _stratified_sample(rng, pool, y, k_used)
                    out.append(TargetRecord(source, k, k_used, rep, train_idx, test_idx))
        return out

    def pool_sizes(self, frame: pd.DataFrame) -> dict[str, int]:
        """Source -> rows its samples draw from (a k of this size draws the whole pool)."""
        values = frame[self.column].astype(str).to_numpy()
        return {
            source: int(self._pool(frame, np.flatnonzero(values == source), test_idx).size)
            for source, test_idx in self.test_sets(frame).items()
        }

    def caps(self, frame: pd.DataFrame) -> list[tuple[str, int, int]]:
        """(source, k, k_used) for every k that was capped at the pool size."""
        seen = {(r.source, r.k, r.k_used) for r in self.records(frame) if r.k_used < r.k}
        return sorted(seen)

    def get_n_splits(self, frame: pd.DataFrame | None = None) -> int:
        """Number of runs: sources × len(ks) × n_seeds (needs the frame)."""
        if frame is None:
            raise ConfigError(
                "TargetAdaptation has one run per source, k and seed, so get_n_splits needs "
                "the frame; where a fixed number of folds is expected use "
                "split=grouped_kfold or split=kfold"
            )
        return len(self.test_sets(frame)) * len(self.ks) * self.n_seeds

    def folds(self, frame: pd.DataFrame) -> Iterator[Fold]:
        """Yield one fold per record, named "<source>|k=<k>|rep=<r>"."""
        for i, r in enumerate(self.records(frame)):
            yield Fold(i, f"{r.source}|k={r.k}|rep={r.rep}", r.train_idx, r.test_idx)


class GroupLeakError(ConfigError):
    """A group occurs on both sides of a train/test split: the split does not fit the unit
    the study guards (a row-level split where rows of one context must stay together)."""


def assert_no_group_leak(
    frame: pd.DataFrame,
    train_idx: np.ndarray,
    test_idx: np.ndarray,
    group_col: str = "group_id",
) -> None:
    """Raise `GroupLeakError` naming the group(s) found in both train and test rows.

    Parameters
    ----------
    frame : pandas.DataFrame
        The frame the positional indices refer to.
    train_idx, test_idx : array of int
        Positional row indices of the two sides.
    group_col : str
        Group column.
    """
    _require_columns(frame, [group_col])
    groups = frame[group_col].to_numpy()
    n = len(frame)
    for side, idx in (("train", train_idx), ("test", test_idx)):
        arr = np.asarray(idx)
        if arr.size and (arr.min() < 0 or arr.max() >= n):
            raise ConfigError(
                f"the splitter's {side} indices fall outside the frame's {n} rows: a splitter "
                "must yield positional row indices (frame.iloc); check the split's _target_"
            )
    shared = sorted(set(groups[np.asarray(train_idx)]) & set(groups[np.asarray(test_idx)]))
    if shared:
        named = shared[:5]
        firsts = _first_row_ids(frame, group_col, named) or [None] * len(named)
        shown = ", ".join(
            f"{g!r} (first row {first!r})" if first is not None else repr(g)
            for g, first in zip(named, firsts, strict=True)
        )
        more = f" and {len(shared) - 5} more" if len(shared) > 5 else ""
        raise GroupLeakError(
            f"data set {dataset_name(frame)}: {len(shared)} group(s) of {group_col!r} on both "
            f"train and test sides: {shown}{more}; use a split that keeps each "
            f"{group_col!r} on one side (split=grouped_kfold with split.group_col={group_col})"
        )
