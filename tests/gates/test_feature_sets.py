"""The named feature lists of the RAGScope gates."""

from runner.features import BASE_FEATURE_NAMES, LEXICAL_FEATURE_NAMES
from runner.gates import BASE_FEATURES, COVERAGE_FEATURES, ENHANCED_FEATURES, ZERO_SHOT_FEATURES


def test_base_is_phi():
    assert BASE_FEATURES == BASE_FEATURE_NAMES
    assert len(BASE_FEATURES) == 11


def test_enhanced_adds_rouge_and_token_f1():
    assert ENHANCED_FEATURES == (*BASE_FEATURES, "rouge_l_risk", "token_f1_risk")
    assert set(ENHANCED_FEATURES) == set(LEXICAL_FEATURE_NAMES)


def test_coverage_logit_uses_the_two_token_coverage_features():
    assert COVERAGE_FEATURES == ("coverage", "rare_token_coverage")
    # not coverage alone: that is a monotone copy of the uncovered score, its complement
    assert "uncovered_fraction" not in COVERAGE_FEATURES


def test_zero_shot_features_are_risks():
    assert ZERO_SHOT_FEATURES == ("uncovered_fraction", "rouge_l_risk", "token_f1_risk")
