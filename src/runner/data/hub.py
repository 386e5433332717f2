"""Reaching the Hugging Face Hub only when it can answer, and failing at once otherwise.

`datasets.load_dataset` on an offline machine retries for many seconds before it gives up
with a message that does not say where the files should go. Loaders call `load_hub_split`,
which looks at the offline flags and probes the endpoint first, so a missing data set costs
the user well under a second and a message that says what to do.
"""

from __future__ import annotations

import hashlib
import logging
import os
import socket
import threading
from typing import NamedTuple
from urllib.parse import urlparse

import pandas as pd

from runner.data.hashing import fingerprint_files
from runner.errors import DataNotFoundError

logger = logging.getLogger(__name__)

OFFLINE_FLAGS = ("HF_HUB_OFFLINE", "HF_DATASETS_OFFLINE")
_TRUE = {"1", "true", "yes", "on"}
_PROBE_TIMEOUT_S = 3.0


def offline_flag() -> str | None:
    """The first offline environment flag that is set to a true value, or None."""
    for name in OFFLINE_FLAGS:
        if os.environ.get(name, "").strip().lower() in _TRUE:
            return name
    return None


def hub_reachable(timeout: float = _PROBE_TIMEOUT_S) -> bool:
    """Whether a TCP connection to the Hub endpoint (``HF_ENDPOINT``) opens within ``timeout``.

    Name resolution has no timeout of its own, so the probe runs in a daemon thread that is
    abandoned when the timeout passes.
    """
    url = urlparse(os.environ.get("HF_ENDPOINT", "https://huggingface.co"))
    host = url.hostname or "huggingface.co"
    port = url.port or (80 if url.scheme == "http" else 443)
    result: list[bool] = []

    def probe() -> None:
        try:
            with socket.create_connection((host, port), timeout=timeout):
                result.append(True)
        except OSError:
            result.append(False)

    thread = threading.Thread(target=probe, daemon=True)
    thread.start()
    thread.join(timeout)
    return bool(result and result[0])


def hub_unavailable_reason() -> str | None:
    """Why the Hub cannot be used now (an offline flag, or no connection), or None."""
    flag = offline_flag()
    if flag:
        return f"{flag} is set"
    if not hub_reachable():
        return "the Hugging Face Hub is unreachable from this machine"
    return None


class HubSplit(NamedTuple):
    """One split read from the Hub."""

    frame: pd.DataFrame
    files: list[str]
    digest: str


def load_hub_split(hub_id: str, split: str, how_to: str) -> HubSplit:
    """One split of a Hub data set as a DataFrame, or an immediate `DataNotFoundError`.

    Parameters
    ----------
    hub_id : str
        Hub data set id, e.g. ``"wandb/RAGTruth-processed"``.
    split : str
        Split name.
    how_to : str
        What the user should do instead (where to put files, how to download them);
        appended to every error.

    Returns
    -------
    HubSplit
        ``frame``: the split's rows in Hub order (index 0..n-1); ``files``: the local cache
        files it was read from; ``digest``: `fingerprint_files` of those files, or, for a
        data set held only in memory, a sha256 of the id, split and ``datasets``' own
        fingerprint.
    """

    reason = hub_unavailable_reason()
    if reason:
        raise DataNotFoundError(f"{hub_id} ({split}) is not on disk and {reason}. {how_to}")
    import datasets  # slow import, only when the Hub is really used

    logger.info("loading %s split %s from the Hugging Face Hub", hub_id, split)
    try:
        dataset = datasets.load_dataset(hub_id, split=split)
    except Exception as exc:  # any failure of the download is a data-not-found for the user
        raise DataNotFoundError(
            f"could not load {hub_id} ({split}) from the Hub: {type(exc).__name__}: {exc}. {how_to}"
        ) from exc
    files = [entry["filename"] for entry in dataset.cache_files]
    if files:
        digest = fingerprint_files(files)
    else:
        key = f"{hub_id}\n{split}\n{dataset._fingerprint}"
        digest = hashlib.sha256(key.encode()).hexdigest()
    return HubSplit(dataset.to_pandas(), files, digest)
