"""On-disk cache of computed feature frames, keyed by what they were computed from.

Lexical features need no fitting, so a study computes them once per data set and reuses
them across folds, gates and runs. The key is a SHA-256 fingerprint of the feature code's
version, the requested feature names and every (question, context, answer) text in row
order: change any of them and the key changes, so a stale cache cannot be read. Files are
written atomically (temporary file, then rename), so an interrupted run leaves no partial
file behind; a file that exists under a key but cannot be read back as expected is an error,
not a silent recompute.
"""

from __future__ import annotations

import hashlib
import os
import tempfile
from collections.abc import Iterable, Sequence
from pathlib import Path

import pandas as pd


def fingerprint(version: str, names: Sequence[str], rows: Iterable[tuple[str, ...]]) -> str:
    """SHA-256 hex digest identifying a feature computation.

    Parameters
    ----------
    version : str
        Version of the feature code.
    names : sequence of str
        Feature names, in output order.
    rows : iterable of tuple of str
        The input texts of each row, in row order.

    Returns
    -------
    str
        64 hex characters. Every text is length-prefixed, so no two different inputs
        concatenate to the same byte stream.
    """
    digest = hashlib.sha256()

    def feed(text: str) -> None:
        data = text.encode("utf-8", "surrogatepass")
        digest.update(len(data).to_bytes(8, "little"))
        digest.update(data)

    feed(version)
    feed("\x1f".join(names))
    for row in rows:
        digest.update(b"\x1e")
        for text in row:
            feed(text)
    return digest.hexdigest()


def cache_path(cache_dir: str | os.PathLike[str], key: str) -> Path:
    """Where the frame for fingerprint `key` lives under `cache_dir`."""
    return Path(cache_dir) / f"lexical-{key}.parquet"


def load(path: Path, names: Sequence[str], n_rows: int) -> pd.DataFrame | None:
    """Read a cached frame, or None when there is none.

    Parameters
    ----------
    path : Path
        From `cache_path`.
    names : sequence of str
        The columns the frame must hold, in order.
    n_rows : int
        The number of rows it must hold.

    Returns
    -------
    DataFrame or None
        With a fresh RangeIndex (the caller sets its own index).

    Raises
    ------
    ValueError
        When the file exists but is unreadable or has other columns or rows.
    """
    if not path.exists():
        return None
    try:
        frame = pd.read_parquet(path)
    except Exception as error:  # any reader failure means the file is not ours
        raise ValueError(f"feature cache {path}: unreadable ({error}); delete it") from error
    if list(frame.columns) != list(names) or len(frame) != n_rows:
        raise ValueError(
            f"feature cache {path}: holds columns {list(frame.columns)} x {len(frame)} rows, "
            f"expected {list(names)} x {n_rows}; delete it"
        )
    return frame.reset_index(drop=True)


def save(path: Path, frame: pd.DataFrame) -> None:
    """Write `frame` (index dropped) to `path` atomically, creating its directory.

    The frame's pandas ``attrs`` (a loader's data set label, carried into derived frames)
    are left out: the cache is keyed by content, so a label from one data set must not come
    back attached to another's features.
    """
    path.parent.mkdir(parents=True, exist_ok=True)
    handle, temporary = tempfile.mkstemp(dir=path.parent, prefix=f".{path.name}.", suffix=".tmp")
    os.close(handle)
    bare = frame.reset_index(drop=True)
    bare.attrs = {}
    try:
        bare.to_parquet(temporary, index=False)
        os.replace(temporary, path)
    except BaseException:
        Path(temporary).unlink(missing_ok=True)
        raise
