"""ClaimGate: S1 of the claim studies as a lexical gate fitted on claims the study never sees."""

from __future__ import annotations

import numpy as np
import pandas as pd
import pytest
from sklearn.metrics import average_precision_score, roc_auc_score
from tests.conftest import real_data_dir, run_experiment

from runner.claims.span_detector import SpanDetector
from runner.errors import ConfigError
from runner.gates import ClaimGate
from runner.gates.claim_gate import WholeClaimScores

S1_ONLY = ("tracking=off", "study.params.limit=null", "~judges.smollm2_reask",
           "~judges.smollm2_prefill")  # fmt: skip


def test_a_claim_risk_is_a_span_that_is_the_whole_claim():
    flagged, kept = WholeClaimScores(0.7, 12), WholeClaimScores(0.2, 5)
    assert flagged.probs.tolist() == [0.7] and flagged.flagged_share(0.5) == 1.0
    assert flagged.spans(0.5) == [(0, 12)] and kept.spans(0.5) == []
    assert kept.flagged_share(0.1) == 1.0 and kept.flagged_share(0.2) == 0.0  # risk > t


@pytest.mark.parametrize(
    ("settings", "message"),
    [
        ({"trained_on": "wice:test"}, r"trained_on='wice:test': one or more of \['wice:dev'"),
        ({"trained_on": "wice:dev+wice:dev"}, r"joined by '\+', each once"),
        ({"ragtruth_sentences": 0}, "ragtruth_sentences must be >= 1"),
        ({"threshold": 1.0}, r"threshold must be in \[0, 1\)"),
        ({"features": ["nosuch"]}, "unknown lexical feature"),
    ],
)
def test_settings_that_cannot_work_are_refused_before_any_data(settings, message):
    with pytest.raises(ConfigError, match=message):
        ClaimGate.check_settings(**{**ClaimGate().get_params(), **settings})


def test_it_fits_on_wice_dev_says_so_and_scores_the_same_twice(monkeypatch):
    monkeypatch.setenv("RUNNER_DATA_DIR", str(real_data_dir()))
    gate = ClaimGate()
    gate.check_sources()
    claims = ["The bridge opened in 1932.", "It has 4 lanes."]
    contexts = ["The bridge opened to traffic in 1932.", "The tower is 120 m tall."]
    first = gate.token_scores(["", ""], contexts, claims)
    again = ClaimGate().token_scores(["", ""], contexts, claims)
    assert [s.risk for s in first] == [s.risk for s in again]
    assert first[0].risk < first[1].risk  # the supported claim is the safer one
    s1 = SpanDetector(gate, threshold=None)
    assert s1.trained_on() == ["wice:dev"]
    assert s1.weights_tag() == "trained (lexical claim gate fitted on wice:dev)"
    with pytest.raises(ConfigError, match="trained on wice:dev, which is the data this run"):
        s1.check_disjoint("claims_verification", "wice", {"split": "dev"})
    s1.check_disjoint("claims_verification", "wice", {"split": "test"})  # never seen: allowed


@pytest.mark.slow  # reads RAGTruth train (~5 s)
def test_it_fits_on_wice_and_ragtruth_sentences_and_names_every_part(monkeypatch):
    monkeypatch.setenv("RUNNER_DATA_DIR", str(real_data_dir()))
    parts = "wice:dev+wice:dev_oracle+wice:non_supported_tokens/train+ragtruth:train"
    gate = ClaimGate(trained_on=parts, ragtruth_sentences=400)
    gate.check_sources()
    rows, y = gate.training_rows()
    assert len(rows) == 349 + 1043 + 374 + 400 == len(y)
    assert set(np.unique(y)) == {0, 1}
    risk = [s.risk for s in gate.token_scores([""], ["The bridge opened in 1932."],
                                              ["The bridge opened in 1932."])]  # fmt: skip
    assert 0.0 < risk[0] < 1.0
    s1 = SpanDetector(gate, threshold=None)
    # the dev oracle chunks are WiCE dev: the card names the data read, each part once
    assert s1.trained_on() == ["ragtruth:train", "wice:dev", "wice:non_supported_tokens/train"]
    with pytest.raises(ConfigError, match="trained on wice:dev, which is the data this run"):
        s1.check_disjoint("claims_verification", "wice", {"split": "dev"})
    s1.check_disjoint("claims_verification", "wice", {"split": "test"})
    s1.check_disjoint("hri_predicted", "factbench", {})  # Factcheck-Bench: never read


def test_ragtruth_sentences_are_labelled_by_overlap_with_a_gold_span(monkeypatch):
    from runner.data import ragtruth_sentences as module

    class Loaded:
        frame = pd.DataFrame(
            {
                "question": ["q"],
                "context": ["ctx"],
                "answer": ["Paris is big. It has 9 moons! Fine"],
                "spans": [[{"start": 20, "end": 22}]],  # "9 " inside sentence 2
            }
        )

    monkeypatch.setattr(module, "load_ragtruth", lambda **_: Loaded())
    rows, y = module.ragtruth_sentence_claims(10, seed=0)
    assert rows["answer"].tolist() == ["Paris is big", "It has 9 moons", "Fine"]
    assert y.tolist() == [0, 1, 0]


@pytest.mark.slow  # the claim study over the 358 real WiCE test claims (~10 s)
def test_the_default_claim_study_s1_has_skill_on_wice_test_and_recomputes_from_its_scores(tmp_path):
    outcome = run_experiment(tmp_path, "claims_verification", *S1_ONLY,
                             f"dataset.data_dir={real_data_dir()}")  # fmt: skip
    scores = pd.read_parquet(outcome.output_dir / "scores.parquet")
    scores = scores[~scores["meta_claim"]]
    assert len(scores) == 358
    y, risk = scores["positive"].to_numpy(int), scores["s1_max_prob"].to_numpy(float)
    cells = pd.read_csv(outcome.output_dir / "cells.csv")
    auroc = cells[(cells["table"] == "s1_auroc") & (cells["column"] == "AUROC (max token prob)")]
    ap = cells[(cells["table"] == "s1_auroc") & (cells["column"] == "AP (max token prob)")]
    assert np.isclose(auroc["value"].iloc[0], roc_auc_score(y, risk))
    assert np.isclose(ap["value"].iloc[0], average_precision_score(y, risk))
    assert roc_auc_score(y, risk) >= 0.70  # issue 31's S1 goal on the 358 WiCE test claims
