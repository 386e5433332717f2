"""A sentence-recipe folder scores through the detector's verifier path with its own recipe.

The folder (a tiny random BERT sequence classifier with a ``detector.json`` that says
``recipe: sentence``) is given to `LettuceDetectVerifier` and to the pyfunc `DetectorModel`
exactly like a token folder; they must load a sequence classifier and score each answer
sentence with its evidence, as training did.
"""

from __future__ import annotations

from types import SimpleNamespace

import numpy as np
import pandas as pd
import pytest
from tests.routing.detector import save_tiny_sentence_detector

from runner.verifiers.detector_inputs import InputRule
from runner.verifiers.lettuce_detect import LettuceDetectVerifier
from runner.verifiers.sentence_pairs import build_pairs

RULE = InputRule(max_length=128)
FRAME = pd.DataFrame(
    {
        "example_id": ["a", "b"],
        "question": ["Where is Paris?", ""],
        "context": [
            "Paris is the capital of France. It lies on the Seine. " * 12,
            "The shop opens at nine. It closes at five on weekdays.",
        ],
        "answer": [
            "Paris is in France. It lies on the Loire! Its mayor is new.",
            "The shop opens at nine.",
        ],
    }
)


@pytest.fixture(scope="module")
def folder(tmp_path_factory):
    card = {"recipe": "sentence", "aggregate": "noisy_or", "input_rule": RULE.to_dict(),
            "threshold": 0.4}  # fmt: skip
    return save_tiny_sentence_detector(tmp_path_factory.mktemp("sentence"), seed=7, card=card)


def _pair_probs(folder, frame: pd.DataFrame = FRAME) -> tuple[np.ndarray, object]:
    """P(unsupported) of each (evidence, sentence) input of `frame`, one input at a time."""
    import torch
    from transformers import AutoModelForSequenceClassification, AutoTokenizer

    tokenizer = AutoTokenizer.from_pretrained(str(folder))
    model = AutoModelForSequenceClassification.from_pretrained(str(folder)).eval()
    pairs = build_pairs(tokenizer, RULE, frame.question, frame.context, frame.answer,
                        frame.example_id)  # fmt: skip
    probs = []
    with torch.no_grad():
        for ids, types in zip(pairs.encoded.input_ids, pairs.encoded.token_type_ids, strict=True):
            logits = model(input_ids=torch.tensor([ids]), token_type_ids=torch.tensor([types]))
            probs.append(float(torch.softmax(logits.logits, -1)[0, 1]))
    return np.array(probs), pairs


def test_the_risk_is_the_cards_aggregate_of_its_sentences(folder):
    verifier = LettuceDetectVerifier(model=str(folder), batch_size=4, evidence="full_context")
    risk = verifier.score(FRAME)
    probs, pairs = _pair_probs(folder)
    assert pairs.example_of.tolist() == [0, 0, 0, 1]
    expected = [1 - np.prod(1 - probs[:3]), probs[3]]
    np.testing.assert_allclose(risk, expected, atol=1e-5)
    logit = verifier.risk_logit(FRAME)
    np.testing.assert_allclose(1 / (1 + np.exp(-logit)), risk, atol=1e-6)
    assert verifier.example_threshold() == 0.4
    assert verifier.runtime_info()["input_stats"]["n_pairs"] == 4


def test_every_token_of_a_sentence_carries_that_sentences_probability(folder):
    verifier = LettuceDetectVerifier(model=str(folder), batch_size=4, evidence="full_context")
    scores = verifier.token_scores(FRAME.question, FRAME.context, FRAME.answer)
    probs, pairs = _pair_probs(folder)
    answer = FRAME.answer[0]
    for (start, end), p in zip(pairs.spans[:3], probs[:3], strict=True):
        inside = [q for (s, _), q in zip(scores[0].offsets, scores[0].probs, strict=True)
                  if start <= s < end]  # fmt: skip
        assert inside and np.allclose(inside, p, atol=1e-5), answer[start:end]
    assert len(scores[0].offsets) == sum(1 for _ in scores[0].probs)


def test_the_pyfunc_scores_a_sentence_folder_like_the_verifier(folder):
    from runner.verifiers.detector_model import ARTIFACT, DetectorModel

    model = DetectorModel()
    model.load_context(SimpleNamespace(artifacts={ARTIFACT: str(folder)}))
    out = model.predict(None, FRAME[["question", "context", "answer"]])
    probs, _ = _pair_probs(folder)
    np.testing.assert_allclose(out["risk"], [1 - np.prod(1 - probs[:3]), probs[3]], atol=1e-5)


def test_a_sentence_folder_is_a_claim_verifier_for_s1(folder):
    """S1 of the claim study: a one-sentence claim's score is that sentence's probability."""
    from runner.claims.span_detector import SpanDetector

    verifier = LettuceDetectVerifier(model=str(folder), batch_size=4, evidence="full_context")
    detector = SpanDetector(verifier)
    claims = ["Paris is in France.", "The shop closes at five."]
    passages = [[FRAME.context[0]], [FRAME.context[1]]]
    scores = detector.score(["", ""], claims, passages)
    frame = pd.DataFrame(
        {"example_id": ["c0", "c1"], "question": ["", ""],
         "context": ["\n\n".join(p) for p in passages], "answer": claims}
    )  # fmt: skip
    probs, pairs = _pair_probs(folder, frame)
    assert pairs.example_of.tolist() == [0, 1]  # one sentence per claim
    np.testing.assert_allclose(scores.max_prob, probs, atol=1e-5)


def test_sentence_logits_are_each_sentences_log_odds_with_its_answer_span(folder):
    verifier = LettuceDetectVerifier(model=str(folder), batch_size=4, evidence="full_context")
    units = verifier.sentence_logits(FRAME)
    probs, _ = _pair_probs(folder)
    assert units["row"].tolist() == [0, 0, 0, 1]
    assert units["example_id"].tolist() == ["a", "a", "a", "b"]
    spans = zip(units["row"], units["start"], units["end"], strict=True)
    answers = [FRAME["answer"][r][s:e] for r, s, e in spans]
    assert answers == ["Paris is in France.", "It lies on the Loire!", "Its mayor is new.",
                       "The shop opens at nine."]  # fmt: skip
    np.testing.assert_allclose(1 / (1 + np.exp(-units["logit"])), probs, atol=1e-5)
