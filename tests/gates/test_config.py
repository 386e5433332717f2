"""conf/gate/*.yaml: every file names its class, is typed by the schema derived from it,
and instantiates."""

from pathlib import Path

import pytest
from hydra import compose, initialize_config_dir
from hydra.utils import instantiate
from omegaconf import OmegaConf
from omegaconf.errors import ConfigKeyError, ValidationError
from sklearn.base import clone

from runner.config import register_configs
from runner.errors import ConfigError
from runner.gates import (
    BASE_FEATURES,
    COVERAGE_FEATURES,
    ENHANCED_FEATURES,
    FeatureGate,
    LogitGate,
    TfidfGate,
)
from runner.settings import derive
from runner.verifiers import LettuceDetectVerifier

FeatureGateConf = derive("runner.gates.FeatureGate")
LogitGateConf = derive("runner.gates.LogitGate")
TfidfGateConf = derive("runner.gates.TfidfGate")
register_configs()
GATE_DIR = Path(__file__).resolve().parents[2] / "conf" / "gate"


def cache_dir() -> str:
    """``paths.cache_dir`` as a run resolves it (where sentence vectors are kept)."""
    with initialize_config_dir(config_dir=str(GATE_DIR.parent), version_base="1.3"):
        return compose("config", overrides=["experiment=rq1_cheap_signals"]).paths.cache_dir


EXPECTED = {
    "uncovered": (FeatureGate, {"feature": "uncovered_fraction", "sign": 1.0}),
    "rouge_l": (FeatureGate, {"feature": "rouge_l_risk", "sign": 1.0}),
    "token_f1": (FeatureGate, {"feature": "token_f1_risk", "sign": 1.0}),
    "tfidf": (TfidfGate, {"kind": "answer_context"}),
    "max_sentence_tfidf": (TfidfGate, {"kind": "max_sentence"}),
    "coverage_logit": (LogitGate, {"features": list(COVERAGE_FEATURES), "tfidf": False}),
    "ragscope_c": (LogitGate, {"features": list(BASE_FEATURES), "tfidf": False}),
    "ragscope_e": (LogitGate, {"features": list(ENHANCED_FEATURES), "tfidf": True}),
    "ragscope_e_detector": (LogitGate, {"features": list(ENHANCED_FEATURES), "tfidf": True}),
    "ragscope_e_sim": (
        LogitGate,
        {
            "features": list(ENHANCED_FEATURES),
            "tfidf": True,
            "similarity": True,
            "cache_dir": cache_dir(),
        },
    ),
}
EXPECTED["ragscope_e_sim_detector"] = EXPECTED["ragscope_e_sim"]
STACKED = {"ragscope_e_detector", "ragscope_e_sim_detector"}  # a detector built inside


def typed(name):
    """The gate as a run composes it (its schema, the files it extends, ``${seed}``)."""
    with initialize_config_dir(config_dir=str(GATE_DIR.parent), version_base="1.3"):
        cfg = compose(
            "config", overrides=["experiment=rq1_cheap_signals", f"+gate@gates.extra={name}"]
        )
    return cfg.gates.extra


def test_every_gate_file_is_known():
    assert sorted(p.stem for p in GATE_DIR.glob("*.yaml")) == sorted(EXPECTED)


@pytest.mark.parametrize("name", sorted(EXPECTED))
def test_every_file_names_its_class_or_the_gate_it_extends(name):
    first = OmegaConf.load(GATE_DIR / f"{name}.yaml").defaults[0]
    assert first in EXPECTED or first == f"runner.gates.{EXPECTED[name][0].__name__}"


@pytest.mark.parametrize("name", sorted(EXPECTED))
def test_instantiates_the_right_gate(name):
    cls, params = EXPECTED[name]
    gate = instantiate(typed(name))
    assert type(gate) is cls
    got = gate.get_params()
    for key, value in params.items():
        assert got[key] == value
        if key != "kind":  # kind arrives as a TfidfKind, a str subclass
            assert type(got[key]) is type(value)
    if cls is LogitGate:  # every other setting is the class's own default
        if name in STACKED:  # ... but the detector built inside it
            assert type(got.pop("verifiers")["detector"]) is LettuceDetectVerifier
        defaults = LogitGate(features=[], tfidf=False).get_params()
        defaults["extra_features"] = list(defaults["extra_features"])  # () in the signature
        assert {k: got[k] for k in got if k not in params} == {
            k: defaults[k] for k in got if k not in params
        }
    twin = clone(gate).get_params()
    assert {k: twin[k] for k in got} == got


def test_unknown_key_fails():
    with pytest.raises(ConfigKeyError):
        OmegaConf.merge(OmegaConf.structured(LogitGateConf), {"features": ["coverage"], "Cc": 1})
    with pytest.raises(ConfigKeyError):
        OmegaConf.merge(OmegaConf.structured(FeatureGateConf), {"feature": "x", "signe": 1})


def test_wrong_types_fail():
    with pytest.raises(ValidationError):
        OmegaConf.merge(OmegaConf.structured(LogitGateConf), {"max_iter": "many"})
    with pytest.raises(ValidationError):
        OmegaConf.merge(OmegaConf.structured(LogitGateConf), {"tfidf": "perhaps"})
    with pytest.raises(ValidationError):
        OmegaConf.merge(OmegaConf.structured(TfidfGateConf), {"kind": "cosine"})
    with pytest.raises(ValidationError):
        OmegaConf.merge(OmegaConf.structured(FeatureGateConf), {"sign": "minus"})


def test_required_fields_must_be_set():
    with pytest.raises(Exception, match="Missing mandatory value"):
        instantiate(OmegaConf.structured(LogitGateConf))


@pytest.mark.parametrize(
    ("schema", "settings", "message"),
    [
        (LogitGateConf, {"features": ["nosuch"], "tfidf": False}, "unknown lexical feature"),
        (LogitGateConf, {"features": [], "tfidf": False}, "needs at least one feature"),
        (LogitGateConf, {"features": ["coverage", "coverage"], "tfidf": False}, "repeat"),
        (FeatureGateConf, {"feature": "nosuch"}, "unknown lexical feature"),
        (FeatureGateConf, {"feature": "coverage", "sign": 0.0}, "finite non-zero"),
    ],
)
def test_a_gate_setting_that_cannot_work_is_refused_when_the_config_is_typed(
    schema, settings, message
):
    # The pre-flight check types every schema node (`schema_checks.check_schema_values`)
    # before any data is read: the gate's own check runs there, as a ConfigError.
    node = OmegaConf.merge(OmegaConf.structured(schema), settings)
    with pytest.raises(ConfigError, match=message):
        OmegaConf.to_object(node)


def test_a_gate_whose_settings_work_types_cleanly():
    node = OmegaConf.merge(OmegaConf.structured(LogitGateConf), {"features": ["coverage"],
                                                                   "tfidf": True})  # fmt: skip
    assert OmegaConf.to_object(node).features == ["coverage"]
