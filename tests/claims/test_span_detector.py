"""S1: claim labels from the share of claim tokens the span detector marks unsupported."""

from __future__ import annotations

import numpy as np
import pytest
from tests.claims.judges.conftest import tiny_models

from runner.claims.span_detector import DEFAULT_SWEEP, SpanDetector
from runner.errors import ConfigError
from runner.verifiers import TokenScores


class FixedScores:
    """A token scorer with given probabilities per claim (the verifier's interface)."""

    weights = "random"
    model = "fixed"

    def __init__(self, probs):
        self.probs = [np.asarray(p, dtype=np.float64) for p in probs]
        self.calls = []

    def token_scores(self, questions, contexts, answers):
        self.calls.append((list(questions), list(contexts), list(answers)))
        start = sum(len(c[2]) for c in self.calls[:-1])
        out = []
        for k in range(len(answers)):
            p = self.probs[start + k]
            out.append(TokenScores([(i, i + 1) for i in range(len(p))], p))
        return out


PROBS = [
    [0.0, 0.1, 0.2, 0.25],  # nothing above 0.3: green
    [0.9, 0.1, 0.1, 0.1],  # 1 of 4 marked: yellow
    [0.9, 0.8, 0.1, 0.1],  # 2 of 4 marked = 0.5 = red_share: red
    [0.31, 0.95, 0.99, 0.5],  # all marked: red
]


def detector(probs=PROBS, **kw):
    return SpanDetector(FixedScores(probs), **kw)


def test_the_label_follows_the_share_of_marked_claim_tokens():
    d = detector()
    scores = d.score(["q"] * 4, ["c1", "c2", "c3", "c4"], [["p"]] * 4)
    assert scores.shares[0.3].tolist() == [0.0, 0.25, 0.5, 1.0]
    assert d.labels(scores.shares[0.3]).tolist() == ["green", "yellow", "red", "red"]
    assert scores.max_prob.tolist() == [0.25, 0.9, 0.9, 0.99]
    assert scores.spans[1] == [(0, 1)] and scores.spans[0] == []


def test_a_claim_is_flagged_at_a_threshold_exactly_when_its_max_prob_exceeds_it():
    d = detector()
    scores = d.score(["q"] * 4, ["a", "b", "c", "d"], [["p"]] * 4)
    for t in d.sweep:
        assert ((scores.shares[t] > 0) == (scores.max_prob > t)).all()


class TrainedScores(FixedScores):
    """A trained verifier: its card carries the threshold chosen on its validation claims."""

    weights = "pretrained"

    def example_threshold(self):
        return 0.85


def test_a_null_threshold_takes_the_trained_verifiers_own_threshold():
    d = SpanDetector(TrainedScores(PROBS), threshold=None)
    scores = d.score(["q"] * 4, ["a", "b", "c", "d"], [["p"]] * 4)
    assert d.threshold == 0.85 and 0.85 in d.sweep and d.sweep == tuple(sorted(d.sweep))
    assert d.labels(scores.shares[0.85]).tolist() == ["green", "yellow", "yellow", "red"]
    with pytest.raises(ConfigError, match="threshold null needs a trained verifier"):
        detector(threshold=None).score(["q"], ["a"], [["p"]])


def test_trained_on_comes_from_the_verifiers_card_and_a_clash_is_refused():
    class Carded(TrainedScores):
        def _trained_card(self):
            return {"trained_on": ["wice:dev", "factcheck_bench:stance"]}

    d = SpanDetector(Carded(PROBS))
    assert d.trained_on() == ["wice:dev", "factcheck_bench:stance"]
    d.check_disjoint("claims_verification", "wice", {"split": "test"})  # WiCE test: allowed
    with pytest.raises(ConfigError, match=r"^hri_predicted: S1 weights fixed were trained on "):
        d.check_disjoint("hri_predicted", "factbench", {})
    assert detector().trained_on() is None  # no card: nothing to check


def test_the_sweep_always_contains_the_threshold_and_is_sorted():
    d = detector(threshold=0.33, sweep=[0.9, 0.001])
    assert d.sweep == (0.001, 0.33, 0.9)
    assert detector().sweep == tuple(sorted(DEFAULT_SWEEP))


def test_passages_are_joined_into_the_context_and_claims_batched():
    scorer = FixedScores(PROBS)
    d = SpanDetector(scorer, batch_size=3)
    d.score(["q1", "q2", "q3", "q4"], ["c1", "c2", "c3", "c4"], [["a", "b"], ["c"], ["d"], ["e"]])
    assert [len(call[2]) for call in scorer.calls] == [3, 1]
    assert scorer.calls[0][1][0] == "a\n\nb" and scorer.calls[0][2][0] == "c1"


def test_red_share_moves_the_yellow_red_boundary():
    d = detector(red_share=1.0)
    assert d.labels(np.array([0.0, 0.5, 1.0])).tolist() == ["green", "yellow", "red"]


@pytest.mark.parametrize(
    ("kwargs", "message"),
    [
        ({"threshold": 1.0}, "threshold"),
        ({"red_share": 0.0}, "red_share"),
        ({"sweep": [1.5]}, "sweep"),
        ({"batch_size": 0}, "batch_size"),
    ],
)
def test_bad_settings_fail(kwargs, message):
    with pytest.raises(ConfigError, match=message):
        detector(**kwargs)
    with pytest.raises(ConfigError, match="token_scores"):
        SpanDetector(object())


def test_the_weights_tag_says_random_or_trained():
    assert detector().weights_tag() == "random weights (fixed)"
    trained = FixedScores(PROBS)
    trained.weights = "pretrained"
    trained.model = "/models/lettucedetect"
    assert SpanDetector(trained).weights_tag() == "trained (/models/lettucedetect)"


def test_the_real_lettucedetect_verifier_scores_claims(tmp_path):
    texts = [
        "The Eiffel Tower is in Paris.",
        "Paris is the capital of France.",
        "The tower opened in 1889.",
    ] * 4
    verifier = tiny_models().tiny_lettucedetect(tmp_path, texts)
    d = SpanDetector(verifier)
    args = (
        ["", "Where?"],
        ["The tower is in Paris.", "It opened in 1889."],
        [["The Eiffel Tower is in Paris."], ["The tower opened in 1889.", "Paris."]],
    )
    scores = d.score(*args)
    again = d.score(*args)
    assert np.array_equal(scores.max_prob, again.max_prob)
    for t in d.sweep:
        assert ((0 <= scores.shares[t]) & (scores.shares[t] <= 1)).all()
    assert set(d.labels(scores.shares[0.3])) <= {"green", "yellow", "red"}
    assert d.weights_tag() == "random weights (random:tiny_modernbert)"
    assert d.describe()["weights"].startswith("random weights")
