"""A small synthetic response-level frame: unfaithful answers invent words."""

import numpy as np
import pandas as pd
import pytest

WORDS = ["river", "bridge", "castle", "harbour", "market", "garden", "tower", "valley"]
INVENTED = ["zeppelin", "quasar", "volcano", "glacier", "comet", "lagoon"]


def make_frame(n_groups: int, seed: int) -> tuple[pd.DataFrame, np.ndarray]:
    rng = np.random.default_rng(seed)
    rows, labels = [], []
    for g in range(n_groups):
        sentences = [" ".join(rng.choice(WORDS, size=4)) + f" {g}" for _ in range(3)]
        context = ". ".join(sentences) + "."
        for k in range(4):
            unfaithful = k % 2
            answer = sentences[k % 3]
            if unfaithful:
                answer += " " + " ".join(rng.choice(INVENTED, size=int(rng.integers(1, 4))))
            rows.append(
                {
                    "question": f"Describe place {g}",
                    "context": context,
                    "answer": answer,
                    "group_id": str(g),
                }
            )
            labels.append(unfaithful)
    return pd.DataFrame(rows), np.asarray(labels)


@pytest.fixture
def train():
    return make_frame(12, seed=1)


@pytest.fixture
def test():
    return make_frame(5, seed=2)


@pytest.fixture(scope="session")
def tiny_encoder(tmp_path_factory) -> str:
    """A tiny random BERT sentence encoder saved to disk (tests/features/conftest.py)."""
    from tests.features.conftest import build_tiny_encoder

    return str(build_tiny_encoder(tmp_path_factory.mktemp("tiny_encoder")))
