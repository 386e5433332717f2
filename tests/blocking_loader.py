"""A data set that never finishes loading: a run to stop at a known point, not by timing.

`load` writes `ready` (the run's folder and MLflow run exist by then: the pipeline opens
both before it loads data) and then waits far longer than any test.
"""

from __future__ import annotations

import time
from pathlib import Path


def load(ready: str) -> None:
    """Say the run is loading, then wait to be stopped."""
    Path(ready).write_text("loading")
    time.sleep(600)
