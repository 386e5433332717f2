"""What every loader returns: `LoadedData`, a canonical frame and where it came from.

Loaders differ in where rows come from; they agree on the canonical frames (see
docs/architecture.md, "Canonical frames"): a response-level frame is checked by
`runner.data.response_frame`, a claim-level one by `runner.data.claim_frame`.
"""

from __future__ import annotations

from dataclasses import dataclass, field

import pandas as pd


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
