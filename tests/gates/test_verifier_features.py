"""A verifier's risk as a gate feature (`LogitGate(verifiers=...)`, the stacked gate): one
column per verifier beside the lexical features, each distinct row scored once for a gate
and all its clones, joined columns used as they are, and the gate pickled with its verifier."""

import pickle

import numpy as np
import pandas as pd
import pytest
from sklearn.base import clone

from runner.evaluation import GroupedKFold, score_gates
from runner.gates import ENHANCED_FEATURES, LogitGate


class InventedWords:
    """A stand-in verifier: risk = the share of answer words absent from the context; it
    records every row it is asked to score."""

    def __init__(self):
        self.scored: list[str] = []

    def score(self, frame: pd.DataFrame) -> np.ndarray:
        self.scored += frame["example_id"].tolist()
        risks = []
        for context, answer in zip(frame["context"], frame["answer"], strict=True):
            words = answer.replace(".", " ").split()
            risks.append(sum(w not in context for w in words) / max(len(words), 1))
        return np.asarray(risks)


def with_ids(frame: pd.DataFrame) -> pd.DataFrame:
    return frame.assign(example_id=[f"r{i}" for i in range(len(frame))])


def test_the_verifier_risk_is_one_more_column_of_the_regression(train, test):
    (frame, y), (held_out, _) = train, test
    frame, held_out = with_ids(frame), with_ids(held_out)
    gate = LogitGate(list(ENHANCED_FEATURES), tfidf=True, verifiers={"words": InventedWords()})
    risk = gate.fit(frame, y).score(held_out)
    columns = gate.pipeline_.named_steps["columns"]
    assert [name for name, _, _ in columns.transformers_][:3] == ["lexical", "verifiers", "tfidf"]
    assert list(columns.transformers_[1][2]) == ["words_risk"]
    model = gate.pipeline_.named_steps["model"]
    assert model.coef_.shape == (1, len(ENHANCED_FEATURES) + 1 + 2)
    joined = held_out.assign(words_risk=InventedWords().score(held_out))
    assert gate.score(joined).tobytes() == risk.tobytes()  # a joined column = the scored one


def test_each_row_is_scored_once_across_the_out_of_fold_clones(train):
    frame, y = train
    frame = with_ids(frame).assign(label=y)
    words = InventedWords()
    gate = LogitGate(list(ENHANCED_FEATURES), tfidf=False, verifiers={"words": words})
    oof = score_gates({"stacked": gate}, frame, GroupedKFold(n_splits=3, seed=0), progress=False)
    assert sorted(words.scored) == sorted(frame["example_id"])  # 3 fits, 3 scorings, once each
    twin = clone(gate)
    assert twin.verifiers["words"] is words  # shared, never copied
    alone = LogitGate(list(ENHANCED_FEATURES), tfidf=False, verifiers={"words": InventedWords()})
    again = score_gates({"stacked": alone}, frame, GroupedKFold(n_splits=3, seed=0), progress=False)
    assert oof["stacked"].tolist() == again["stacked"].tolist()


def test_a_repeated_row_is_scored_once_and_gets_the_same_risk(train):
    frame, y = train
    frame = with_ids(frame)
    words = InventedWords()
    gate = LogitGate([], tfidf=False, verifiers={"words": words}).fit(frame, y)
    doubled = with_ids(pd.concat([frame.head(4), frame.head(4)]))
    risk = gate.score(doubled)
    assert risk[:4].tolist() == risk[4:].tolist()
    assert len(words.scored) == len(frame)  # the four rows were kept from fit


def test_a_gate_on_the_verifier_alone_ranks_as_the_verifier(train):
    frame, y = train
    frame = with_ids(frame)
    gate = LogitGate([], tfidf=False, verifiers={"words": InventedWords()}).fit(frame, y)
    expected = InventedWords().score(frame)
    order = np.argsort(gate.score(frame), kind="stable")
    assert np.all(np.diff(expected[order]) >= 0)


def test_settings_that_cannot_work_are_refused(train):
    frame, y = train
    frame = with_ids(frame)
    clash = LogitGate([], tfidf=True, extra_features=["words_risk"],
                      verifiers={"words": InventedWords()})  # fmt: skip
    with pytest.raises(ValueError, match="both an extra feature and a verifier's risk column"):
        clash.fit(frame.assign(words_risk=0.5), y)
    with pytest.raises(ValueError, match="verifier 'words' has no score"):
        LogitGate([], tfidf=True, verifiers={"words": "models:/x/1"}).fit(frame, y)
    with pytest.raises(ValueError, match="must map names to verifiers"):
        LogitGate([], tfidf=True, verifiers=["words"]).fit(frame, y)


def test_a_pickled_gate_carries_its_verifier_and_no_kept_risks(train, test):
    (frame, y), (held_out, _) = train, test
    frame, held_out = with_ids(frame), with_ids(held_out)
    gate = LogitGate(list(ENHANCED_FEATURES), tfidf=True, verifiers={"words": InventedWords()})
    gate.fit(frame, y)
    copy = pickle.loads(pickle.dumps(gate))
    assert "_risks" not in copy.__dict__
    assert copy.score(held_out).tobytes() == gate.score(held_out).tobytes()
    scored = copy.verifiers["words"].scored  # fit's rows (pickled with it), then the new ones
    assert scored[len(frame) :] == held_out["example_id"].tolist()


class WithLogOdds(InventedWords):
    """A verifier that also gives its risk on the log-odds scale."""

    def risk_logit(self, frame: pd.DataFrame) -> np.ndarray:
        p = np.clip(self.score(frame), 0.01, 0.99)
        return np.log(p / (1 - p))


def test_the_feature_is_the_verifiers_log_odds_where_it_has_them(train):
    frame, y = train
    frame = with_ids(frame)
    gate = LogitGate([], tfidf=False, verifiers={"words": WithLogOdds()}).fit(frame, y)
    scaled = gate.pipeline_[:-1].transform(gate._with_columns(frame, []))[:, 0]
    expected = WithLogOdds().risk_logit(frame)
    np.testing.assert_allclose(scaled, (expected - expected.mean()) / expected.std())


def test_another_verifier_under_the_same_name_is_scored_afresh(train):
    frame, y = train
    frame = with_ids(frame)
    gate = LogitGate([], tfidf=False, verifiers={"words": InventedWords()}).fit(frame, y)
    twin = clone(gate).set_params(verifiers={"words": WithLogOdds()})
    twin.fit(frame, y)
    assert len(twin.verifiers["words"].scored) == len(frame)  # nothing kept from the other
