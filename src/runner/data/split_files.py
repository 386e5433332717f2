"""A split setting checked against the file a data set is read from."""

from __future__ import annotations

from collections.abc import Sequence
from pathlib import Path

from runner.errors import ConfigError


def check_split_file(
    dataset: str, split: object, path: str | Path | None, splits: Sequence[str]
) -> None:
    """Raise `ConfigError` unless `split` is one of `splits` and agrees with `path`'s name.

    Why: the split is recorded with the run (manifest, tables); a ``dataset.path`` to
    ``test.parquet`` with ``dataset.split=train`` would read the test rows and record
    "train". A file named after another split (``<split>.parquet`` / ``.jsonl``) is
    refused, naming both settings; a file named otherwise is the user's word for its split.
    Needs no data: the dataset schemas run it in the config check.
    """
    if not isinstance(split, str) or split not in splits:
        raise ConfigError(
            f"{dataset}: dataset.split={split!r} does not exist; valid splits: {', '.join(splits)}"
        )
    if path is None:
        return
    target = Path(str(path))
    stem = target.name.split(".", 1)[0]
    if target.suffix and stem in splits and stem != split:
        raise ConfigError(
            f"{dataset}: dataset.split={split} but dataset.path={target} is the {stem!r} "
            f"split; set dataset.split={stem}, or point dataset.path at the {split} file"
        )
