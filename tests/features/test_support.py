"""ROUGE-L and token-F1 risk on hand-computed examples, and against rouge_score."""

import pytest
from rouge_score import rouge_scorer

from runner.features import ExampleView, rouge_l_risk, token_f1_risk
from runner.text import STOPWORDS

CONTEXT = "Acme was founded in 1,234 by Jane Smith. It sells anvils.\nProfits were 5.5 million."
ANSWER = "Acme was founded by John Smith in 1234 and sells rockets."


def test_rouge_l_risk_hand_computed():
    # answer content: acme founded john smith 1234 sells rockets (7)
    # context content: acme founded 1234 jane smith sells anvils profits 5 5 million
    # LCS 4 (acme founded smith sells): 1234 and smith come in opposite orders
    x = ExampleView.of("", CONTEXT, ANSWER)
    assert rouge_l_risk(x) == pytest.approx(1 - 4 / 7)


def test_token_f1_risk_hand_computed():
    # common bag: acme founded smith 1234 sells = 5; |a| = 7, |c| = 11; F1 = 10 / 18
    x = ExampleView.of("", CONTEXT, ANSWER)
    assert token_f1_risk(x) == pytest.approx(1 - 10 / 18)


def test_token_f1_clips_repeats_to_the_smaller_count():
    # answer cats x3 dogs, context cats x1 birds: common 1, F1 = 2 / (4 + 2)
    x = ExampleView.of("", "cats birds", "cats cats cats dogs")
    assert token_f1_risk(x) == pytest.approx(1 - 2 / 6)


def test_rouge_l_recall_matches_rouge_score_on_content_tokens():
    # Remove stop words by hand, then score with rouge_score: recall must agree.
    x = ExampleView.of("", CONTEXT, ANSWER)
    scorer = rouge_scorer.RougeScorer(["rougeL"])
    target = " ".join(x.answer.content)
    prediction = " ".join(x.context.content)
    recall = scorer.score(target, prediction)["rougeL"].recall
    assert rouge_l_risk(x) == pytest.approx(1 - recall)
    assert not STOPWORDS & set(target.split())


@pytest.mark.parametrize("answer", ["", "It is what it is."])
def test_answer_without_content_fails_closed(answer):
    x = ExampleView.of("", CONTEXT, answer)
    assert rouge_l_risk(x) == 1.0
    assert token_f1_risk(x) == 1.0


def test_empty_context_is_maximal_risk():
    x = ExampleView.of("", "", ANSWER)
    assert rouge_l_risk(x) == 1.0
    assert token_f1_risk(x) == 1.0


def test_identical_texts_have_zero_rouge_risk():
    x = ExampleView.of("", ANSWER, ANSWER)
    assert rouge_l_risk(x) == 0.0
    assert token_f1_risk(x) == pytest.approx(0.0)
