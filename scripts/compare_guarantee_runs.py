"""The accepted share of two `guarantee_check` runs, paired split by split.

Why: two gates are compared under the same guarantee by running the study once per gate
with the same seed, so both route the same calibration/held-out splits; the difference of
their accepted shares on each split is the paired gain (docs/detector.md, "The detector as a
feature of the gate"). Reads each run folder's ``splits.parquet``.

    python scripts/compare_guarantee_runs.py RUN_A RUN_B [--method gate]

Prints B - A in points: the mean and the 2.5 % and 97.5 % quantiles over splits, for the
in-distribution scenario.
"""

from __future__ import annotations

import argparse
from pathlib import Path

import numpy as np
import pandas as pd

SCENARIO = "in distribution"


def paired_gain(a: pd.DataFrame, b: pd.DataFrame, method: str) -> np.ndarray:
    """B's accepted share minus A's on each in-distribution split, in points."""

    def shares(table: pd.DataFrame) -> pd.Series:
        rows = table[(table["scenario"] == SCENARIO) & (table["method"] == method)]
        if rows.empty:
            raise SystemExit(f"no {SCENARIO!r} rows of method {method!r} in a splits.parquet")
        return rows.set_index("split")["accepted_share"]

    first, second = shares(a), shares(b)
    if sorted(first.index) != sorted(second.index):
        raise SystemExit("the two runs routed different splits: run both with the same seed")
    return ((second - first.reindex(second.index)) * 100).to_numpy()


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("run_a", type=Path)
    parser.add_argument("run_b", type=Path)
    parser.add_argument("--method", default="gate")
    args = parser.parse_args()
    a, b = (pd.read_parquet(run / "splits.parquet") for run in (args.run_a, args.run_b))
    gain = paired_gain(a, b, args.method)
    low, high = np.percentile(gain, [2.5, 97.5])
    print(f"B - A accepted share: {gain.mean():+.2f} points [{low:+.2f}, {high:+.2f}] "
          f"over {len(gain)} splits")  # fmt: skip


if __name__ == "__main__":
    main()
