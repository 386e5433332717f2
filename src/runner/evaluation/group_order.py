"""One order of groups that does not depend on what the groups are called.

Why: a grouped split and a group bootstrap both enumerate the groups before they draw, and
numbering groups by their sorted names makes the draws depend on the names. RAGTruth's two
forms name the same source context differently (the processed parquet by a hash of the
context, the original release by its `source_id`), so the same responses would land in
other folds and other resamples. Ordering each group by its smallest member key (the
example id, which both forms share) gives both forms the same folds and resamples, and
does not depend on row order either.
"""

from __future__ import annotations

import numpy as np
import pandas as pd


def group_codes(groups: object, order_key: object | None = None) -> tuple[np.ndarray, np.ndarray]:
    """Integer code per row and the group names in code order.

    Parameters
    ----------
    groups : array, shape (n,)
        Group of each row.
    order_key : array, shape (n,), optional
        A per-row key (e.g. the example id). Groups are numbered in the order of their
        smallest key (compared as strings); ties, which only occur when keys repeat, fall
        back to the group name. None: groups are numbered by sorted name.

    Returns
    -------
    codes : int64 array, shape (n,)
    names : array of the groups, ``names[codes] == groups``
    """
    arr = np.asarray(groups, dtype=object)
    by_name, names = pd.factorize(arr, sort=True)
    names = np.asarray(names, dtype=object)
    if order_key is None:
        return by_name.astype(np.int64), names
    keys = np.asarray(order_key, dtype=object).astype(str)
    if keys.shape != arr.shape:
        raise ValueError(
            f"order_key must have one entry per row ({arr.shape[0]}), got {keys.shape}"
        )
    smallest = pd.Series(keys).groupby(by_name).min()
    rank = np.lexsort((np.arange(names.shape[0]), smallest.to_numpy(dtype=str)))
    new_code = np.empty_like(rank)
    new_code[rank] = np.arange(rank.shape[0])
    return new_code[by_name].astype(np.int64), names[rank]
