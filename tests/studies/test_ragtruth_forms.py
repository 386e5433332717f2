"""RQ1 gives the same cells whether RAGTruth comes as the processed parquet or the original pair.

The original release is not in the offline data, so the pair is built from real processed
rows by `scripts/ragtruth_to_original.py`. Its groups are named by source id, the
parquet's by a context hash: equal cells mean folds and resamples follow the grouping, not
the names.
"""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import pandas as pd
import pytest
from hydra import compose, initialize_config_dir

from runner.config import register_configs
from runner.pipeline import run

ROOT = Path(__file__).resolve().parents[2]
register_configs()
pytestmark = pytest.mark.slow

GROUPS_PER_TASK = 25  # 150 responses per task: enough groups for 5 folds with both classes


def _subset(data_dir: Path) -> pd.DataFrame:
    frame = pd.read_parquet(data_dir / "ragtruth" / "test.parquet")
    keep = []
    for _, task_rows in frame.groupby("task_type", sort=True):
        contexts = list(dict.fromkeys(task_rows["context"]))[:GROUPS_PER_TASK]
        keep.append(task_rows[task_rows["context"].isin(contexts)])
    return pd.concat(keep).sort_index()


def _rq1(tmp_path: Path, *dataset: str):
    with initialize_config_dir(config_dir=str(ROOT / "conf"), version_base="1.3"):
        cfg = compose(
            "config",
            overrides=[
                "experiment=rq1_cheap_signals",
                "tracking=off",
                "progress=false",
                "bootstrap=fast",
                "study.params.time_gates=false",
                f"paths.artifacts_dir={tmp_path}",
                *dataset,
            ],
        )
    return run(cfg)


def test_original_and_processed_forms_give_identical_rq1_cells(tmp_path, data_dir):
    subset = _subset(data_dir)
    parquet = tmp_path / "subset" / "test.parquet"
    parquet.parent.mkdir()
    subset.to_parquet(parquet)
    original = tmp_path / "original"
    subprocess.run(
        [
            sys.executable,
            str(ROOT / "scripts" / "ragtruth_to_original.py"),
            str(parquet),
            str(original),
        ],
        check=True,
        capture_output=True,
    )

    processed_run = _rq1(tmp_path / "p", "dataset=ragtruth", f"dataset.path={parquet}")
    original_run = _rq1(tmp_path / "o", "dataset=ragtruth_jsonl", f"dataset.path={original}")

    p_scores = processed_run.result.scores.set_index("example_id")
    o_scores = original_run.result.scores.set_index("example_id")
    assert len(p_scores) == len(subset)
    # the two forms name the groups differently (hash vs source id) ...
    assert set(p_scores["group_id"]).isdisjoint(set(o_scores["group_id"]))
    assert (
        p_scores["group_id"].str.split(":").str[0].tolist()
        == o_scores.loc[p_scores.index, "group_id"].str.split(":").str[0].tolist()
    )
    # ... but group the same responses together, into the same folds
    assert (p_scores["fold"] == o_scores.loc[p_scores.index, "fold"]).all()
    pd.testing.assert_frame_equal(
        processed_run.result.cells_frame(), original_run.result.cells_frame(), check_exact=True
    )
