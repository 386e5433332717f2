"""Dataset configs: YAML, schema and loader signature agree, and they instantiate."""

from __future__ import annotations

import dataclasses
import inspect
from pathlib import Path

import pytest
from hydra.utils import instantiate
from omegaconf import OmegaConf
from omegaconf.errors import ValidationError
from tests.conftest import yaml_body_lines

from runner.config import load_part_yaml
from runner.data import LoadedData
from runner.data.config import HaluBenchConf, RagTruthConf
from runner.data.halubench import load_halubench
from runner.data.ragtruth import load_ragtruth

CONF = Path(__file__).resolve().parents[2] / "conf" / "dataset"
CASES = [
    ("ragtruth", RagTruthConf, load_ragtruth),
    ("ragtruth_jsonl", RagTruthConf, load_ragtruth),
    ("halubench", HaluBenchConf, load_halubench),
]


@pytest.mark.parametrize(("name", "schema", "loader"), CASES)
def test_yaml_schema_and_signature_have_the_same_keys(name, schema, loader):
    keys = set(load_part_yaml(CONF / f"{name}.yaml"))
    fields = {f.name for f in dataclasses.fields(schema)}
    params = set(inspect.signature(loader).parameters) | {"_target_"}
    assert keys == fields == params


@pytest.mark.parametrize(("name", "schema", "loader"), CASES)
def test_every_key_is_commented_and_target_names_the_loader(name, schema, loader):
    lines = yaml_body_lines(CONF / f"{name}.yaml")
    assert all(" # " in line for line in lines), [line for line in lines if " # " not in line]
    cfg = OmegaConf.merge(OmegaConf.structured(schema), load_part_yaml(CONF / f"{name}.yaml"))
    assert cfg._target_ == f"{loader.__module__}.{loader.__name__}"
    assert cfg.name == name


@pytest.mark.parametrize(
    ("schema", "loader"), [(RagTruthConf, load_ragtruth), (HaluBenchConf, load_halubench)]
)
def test_schema_defaults_match_loader_defaults(schema, loader):
    params = inspect.signature(loader).parameters
    for f in dataclasses.fields(schema):
        if f.name != "_target_":
            assert f.default == params[f.name].default, f.name


def test_schema_rejects_wrong_types_and_unknown_keys():
    base = OmegaConf.structured(RagTruthConf)
    with pytest.raises(ValidationError):
        OmegaConf.merge(base, {"limit": "abc"})
    with pytest.raises(Exception, match="nosuchkey"):
        OmegaConf.merge(base, {"nosuchkey": 1})


def test_ragtruth_jsonl_config_instantiates_on_the_fixture(fixtures_dir):
    cfg = OmegaConf.merge(
        OmegaConf.structured(RagTruthConf),
        load_part_yaml(CONF / "ragtruth_jsonl.yaml"),
        {"path": str(fixtures_dir / "ragtruth_original")},
    )
    loaded = instantiate(cfg)
    assert isinstance(loaded, LoadedData)
    assert loaded.name == "ragtruth_jsonl" and loaded.info["rows"] == 6


def test_halubench_config_instantiates_with_a_source_list(halubench_csv):
    cfg = OmegaConf.merge(
        OmegaConf.structured(HaluBenchConf),
        load_part_yaml(CONF / "halubench.yaml"),
        {"path": str(halubench_csv()), "sources": ["pubmedQA"]},
    )
    loaded = instantiate(cfg)
    assert loaded.info["counts_per_source"] == {"pubmedQA": 2}
