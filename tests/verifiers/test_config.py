"""One place per verifier parameter: the class fields; schema, YAML and CLI follow from them."""

from __future__ import annotations

import dataclasses
import inspect

import pytest
from hydra import compose, initialize_config_dir
from omegaconf import OmegaConf
from omegaconf.errors import ValidationError
from sklearn.base import clone

from runner.config import CONF_DIR, compose_verifier, master_seed, register_configs
from runner.errors import ConfigError
from runner.schema_checks import with_schemas
from runner.settings import derive
from runner.verifiers import DebertaNLIVerifier, HHEMVerifier, LettuceDetectVerifier, Verifier
from runner.verifiers.base import inference, settings_class

SCHEMA = {
    cls: derive(f"runner.verifiers.{cls.__name__}")
    for cls in (DebertaNLIVerifier, HHEMVerifier, LettuceDetectVerifier)
}
CONFIG = {
    "deberta_nli": DebertaNLIVerifier,
    "hhem_full": HHEMVerifier,
    "lettucedetect": LettuceDetectVerifier,
}
MODEL_SETTINGS = {
    "model",
    "revision",
    "weights",
    "architecture",
    "tokenizer",
    "tokenizer_corpus",
    "device",
    "seed",
}
"""Settings that change the loaded weights: `with_settings` must never reuse weights across them."""

register_configs()


@pytest.mark.parametrize("cls", list(SCHEMA))
def test_the_schema_is_the_class_fields_plus_target(cls):
    schema = {f.name: f for f in dataclasses.fields(SCHEMA[cls])}
    own = {f.name: f for f in dataclasses.fields(cls)}
    assert list(schema) == ["_target_", *own]
    assert schema["_target_"].default == f"runner.verifiers.{cls.__name__}"
    for name, spec in own.items():
        assert schema[name].default == spec.default, name


@pytest.mark.parametrize("cls", list(SCHEMA))
def test_the_sklearn_contract_holds(cls):
    params = inspect.signature(cls).parameters
    assert all(p.kind is p.KEYWORD_ONLY for p in params.values())  # explicit, no **kwargs
    assert set(params) == {f.name for f in dataclasses.fields(cls)}
    verifier = cls(weights="random", batch_size=3)
    copy = clone(verifier)
    assert copy is not verifier and copy.get_params() == verifier.get_params()
    assert "batch_size=3" in repr(verifier)  # scikit-learn's repr: changed settings only


@pytest.mark.parametrize("cls", list(SCHEMA))
def test_only_inference_settings_can_be_derived(cls):
    settings = cls(weights="random").inference_settings
    assert not settings & MODEL_SETTINGS
    assert {"batch_size", "dtype", "quantize", "max_length", "evidence", "top_k"} <= settings
    assert "foundation" not in settings


def test_a_subclass_overrides_defaults_and_keeps_types_and_flags():
    assert DebertaNLIVerifier(weights="random").batch_size == 2
    assert LettuceDetectVerifier(weights="random").max_length == 4096
    assert HHEMVerifier(weights="random").evidence == "full_context"
    assert Verifier.__dataclass_fields__["batch_size"].default == 1
    with pytest.raises(TypeError, match="batchsize"):

        @settings_class(batchsize=2)
        class Misspelt(Verifier):
            pass

    @settings_class(batch_size=8)
    class Own(Verifier):
        extra: str = inference("x")

    fields = {f.name: f for f in dataclasses.fields(Own)}
    assert fields["batch_size"].default == 8 and fields["batch_size"].metadata == (
        Verifier.__dataclass_fields__["batch_size"].metadata
    )
    assert {"batch_size", "extra"} <= Own(
        model="m", weights="random", architecture="a"
    ).inference_settings


@pytest.mark.parametrize(("name", "cls"), list(CONFIG.items()))
def test_yaml_only_sets_what_the_class_does_not(name, cls):
    """The composed config equals the class defaults, except the architecture spec (composed
    from conf/architecture/) and the seed (follows the master seed)."""
    composed = OmegaConf.to_container(compose_verifier(name))
    defaults = {f.name: f.default for f in dataclasses.fields(cls)}
    assert composed.pop("_target_") == f"runner.verifiers.{cls.__name__}"
    assert composed.pop("architecture")["name"] == defaults.pop("architecture")
    assert composed.pop("seed") == master_seed()
    defaults.pop("seed")
    assert composed == defaults


def test_the_seed_follows_the_master_seed():
    assert compose_verifier("deberta_nli", seed=5).seed == 5
    assert compose_verifier("hhem_top3", ["seed=7"]).seed == 7  # unless overridden
    with initialize_config_dir(config_dir=str(CONF_DIR), version_base="1.3"):
        cfg = compose(
            "config", overrides=["experiment=rq4_verifier_cost", "tracking=off", "seed=21"]
        )
    assert {v.seed for v in cfg.verifiers.values()} == {21}


def test_cli_overrides_reach_the_nested_keys():
    with initialize_config_dir(config_dir=str(CONF_DIR), version_base="1.3"):
        cfg = compose(
            "config",
            overrides=[
                "experiment=claims_verification_lettucedetect",
                "tracking=off",
                "span_detector.verifier.max_length=128",
            ],
        )
        rq4 = compose(
            "config",
            overrides=[
                "experiment=rq4_verifier_cost",
                "tracking=off",
                "verifiers.deberta_nli_top3.batch_size=4",
            ],
        )
    assert cfg.span_detector.verifier.max_length == 128
    assert rq4.verifiers.deberta_nli_top3.batch_size == 4
    with pytest.raises(ValidationError):  # once typed by its class, as the pre-flight does
        with_schemas(rq4).verifiers.deberta_nli_top3.top_k = "three"


def test_validation_names_the_key():
    with pytest.raises(ConfigError, match="batch_size"):
        DebertaNLIVerifier(weights="random", batch_size=0)
    with pytest.raises(ConfigError, match="attention"):
        DebertaNLIVerifier(weights="random", attention="flash")
    with pytest.raises(ConfigError, match="template"):
        HHEMVerifier(weights="random", template="no fields")


def test_a_random_weights_verifier_built_by_a_run_reads_its_architecture_record():
    """The study is built with `_convert_="object"`: a verifier's `architecture` node arrives
    as its `ArchitectureConf` record, which the model loader reads as it reads a mapping."""
    from runner.pipeline import check_config
    from runner.verifiers.architecture import load_architecture
    from runner.verifiers.config import ArchitectureConf

    with initialize_config_dir(config_dir=str(CONF_DIR), version_base="1.3"):
        cfg = compose("config", overrides=["experiment=claims_verification_lettucedetect"])
    verifier = check_config(cfg).span_detector.verifier
    assert isinstance(verifier.architecture, ArchitectureConf)
    spec = load_architecture(verifier.architecture)
    assert spec["name"] == "modernbert_base" and spec["model_type"] == "modernbert"
    assert isinstance(spec["config"], dict) and spec["config"]
