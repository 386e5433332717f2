"""Shared synthetic frames for the evaluation tests."""

from __future__ import annotations

import numpy as np
import pandas as pd
import pytest


def make_frame(
    n_groups: int = 40, group_size: int = 3, seed: int = 0, n_sources: int = 2
) -> pd.DataFrame:
    """A canonical response-level frame with grouped rows, two numeric features and text.

    Labels are drawn per row with a group-level propensity, so groups differ in
    prevalence (as RAGTruth contexts do) and every group may hold both classes.
    """
    rng = np.random.default_rng(seed)
    n = n_groups * group_size
    group = np.repeat(np.arange(n_groups), group_size)
    propensity = rng.uniform(0.1, 0.9, n_groups)[group]
    label = (rng.uniform(size=n) < propensity).astype(int)
    x1 = rng.normal(size=n) + label
    x2 = rng.normal(loc=3.0, scale=2.0, size=n)
    words = np.array(["alpha", "beta", "gamma", "delta", "omega", "sigma"])
    answers = [" ".join(rng.choice(words, size=4)) for _ in range(n)]
    return pd.DataFrame(
        {
            "example_id": [f"ex{i:04d}" for i in range(n)],
            "group_id": [f"g{g:03d}" for g in group],
            "task": np.where(group % 2 == 0, "QA", "Summary"),
            "source": [f"src{g % n_sources}" for g in group],
            "answer": answers,
            "label": label,
            "x1": x1,
            "x2": x2,
        }
    )


@pytest.fixture(name="make_frame")
def make_frame_fixture():
    """The `make_frame` factory, for tests that need other sizes or seeds."""
    return make_frame


@pytest.fixture
def frame() -> pd.DataFrame:
    """40 groups of 3 rows, two tasks and two sources (each group in one task and source)."""
    return make_frame()
