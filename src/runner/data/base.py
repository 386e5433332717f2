"""What every loader returns (`LoadedData`), and the shape every loader has.

Loaders differ in where rows come from; they agree on the canonical frames (see
docs/architecture.md, "Canonical frames"): a response-level frame is checked by
`runner.data.response_frame`, a claim-level one by `runner.data.claim_frame`.

The shape. A loader's public function is a thin front over five private steps, so the
next data set copies one and changes only what differs:

1. ``_check_settings``: refuse bad settings (a ``ConfigError``) before any file is opened;
2. ``_locate``: find the files (`Located`), or say at once how to get them
   (``DataNotFoundError``);
3. ``_read``: the raw rows, as the file has them;
4. ``_map``: raw rows to the canonical frame, each bad row named by file, row and field
   (``DataError``, or skipped and counted with ``skip_invalid``);
5. ``_record``: the `LoadedData`: ``info`` (`located_info` for the keys every loader
   shares) and a fingerprint of the files, the loader, its version and its settings.

Settings most loaders share, documented once here:

- ``path``: the data file or folder; an explicit path that does not exist is an error
  (never a fallback to the Hub);
- ``data_dir``: root of the offline data sets, default ``$RUNNER_DATA_DIR``;
- ``hub_id``: the Hub data set read when no local file is found, only when online;
- ``limit``: keep the first ``limit`` rows in file order (a positive integer, or None);
- ``skip_invalid``: False, the first bad row raises `DataError`; True, bad rows are
  dropped, counted in ``info["skipped_rows"]``, listed in ``info["skipped"]`` and logged;
- ``name``: the name recorded with the run (the dataset config's ``name``).
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

import pandas as pd

from runner.data.hashing import sha256_file
from runner.data.row_issues import IssueLog


@dataclass(frozen=True)
class Located:
    """Where a loader's rows are: local files, or one Hub split already fetched.

    ``digest`` identifies the bytes read (`fingerprint_files` of local files, the Hub's own
    digest of its cache files); ``where`` names them in messages.
    """

    files: list[str]
    digest: str
    origin: str
    where: str
    hub_id: str | None = None


def located_info(
    summary: dict[str, Any], located: Located, issues: IssueLog, **extra: Any
) -> dict[str, Any]:
    """A loader's ``info``: its ``summary`` of the frame, ``origin``, the loader's ``extra``
    keys, each file's sha256 and the rows skipped (plus ``hub_id`` for the Hub), in that
    order, so two runs of one loader write the same JSON."""
    info = dict(summary)
    info.update(
        origin=located.origin,
        **extra,
        files_sha256={f: sha256_file(f) for f in located.files},
        skipped_rows=issues.skipped_rows(),
        skipped=issues.skipped(),
    )
    if located.origin == "hub":
        info["hub_id"] = located.hub_id
    return info


@dataclass
class LoadedData:
    """A canonical response-level frame and where it came from.

    Attributes
    ----------
    name : str
        Dataset name (as in the dataset config), used in run names and tables.
    frame : DataFrame
        Canonical frame: `REQUIRED_COLUMNS`, optional ``spans``, then extra columns.
    files : list of str
        Files the rows were read from (for the Hub: the local cache files).
    fingerprint : str
        sha256 identifying the frame: the bytes of `files` plus the loader, its version and
        the selection parameters (split, limit, sources, ...). Equal fingerprints mean the
        same rows, so caches can key on it. Per-file sha256 are in ``info["files_sha256"]``.
    info : dict
        JSON-serialisable summary: ``rows``, ``origin`` ("local" or "hub"), counts per task
        and source, positives per task, ``skipped`` rows with reasons, and loader extras.
    """

    name: str
    frame: pd.DataFrame
    files: list[str]
    fingerprint: str
    info: dict = field(default_factory=dict)

    def __post_init__(self) -> None:
        """Label the frame with the data set it came from (`frame.attrs["dataset"]`).

        Why here: splitters and the out-of-fold loop see only the frame, and name the data
        set in every error they raise (`runner.evaluation.splits.dataset_name`); set once
        where every loader builds its result, no frame reaches them as "<unnamed frame>".
        The name is followed by the file when the rows come from one local file. A label
        only: `runner.reporting.outputs.write_parquet` keeps it out of the files a run
        writes.
        """
        if isinstance(self.frame, pd.DataFrame) and "dataset" not in self.frame.attrs:
            one_file = len(self.files) == 1 and self.info.get("origin") == "local"
            label = f"{self.name} ({self.files[0]})" if one_file else self.name
            self.frame.attrs["dataset"] = label
