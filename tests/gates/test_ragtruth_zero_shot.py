"""On the real RAGTruth test split: features are complete and zero-shot gates rank usefully.

A guard against tokeniser or feature regressions that unit examples miss. The floor (AUROC
above 0.7 pooled) is far below what the gates reach; it is not a published number.
"""

import numpy as np
import pytest
from sklearn.metrics import roc_auc_score

from runner.data.ragtruth import load_ragtruth
from runner.features import LEXICAL_FEATURE_NAMES, lexical_features
from runner.gates import FeatureGate

pytestmark = pytest.mark.slow


@pytest.fixture
def ragtruth(data_dir):
    return load_ragtruth("test", data_dir=data_dir).frame


def test_every_row_gets_every_feature(ragtruth):
    features = lexical_features(ragtruth)
    assert features.shape == (2700, len(LEXICAL_FEATURE_NAMES))
    assert np.isfinite(features.to_numpy()).all()


@pytest.mark.parametrize("feature", ["uncovered_fraction", "rouge_l_risk"])
def test_zero_shot_gates_rank_unfaithful_answers_higher(ragtruth, feature):
    risk = FeatureGate(feature).score(ragtruth)
    assert roc_auc_score(ragtruth["label"], risk) > 0.7
    for task in ("QA", "Summary", "Data2txt"):
        rows = (ragtruth["task"] == task).to_numpy()
        assert roc_auc_score(ragtruth["label"][rows], risk[rows]) > 0.6, task
