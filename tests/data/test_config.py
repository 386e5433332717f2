"""Dataset configs: each YAML names its loader, whose signature is the schema, and they
instantiate."""

from __future__ import annotations

import dataclasses
import inspect
from pathlib import Path

import pytest
from hydra.utils import instantiate
from omegaconf import OmegaConf
from omegaconf.errors import ValidationError
from tests.conftest import load_part_yaml

from runner.data import LoadedData
from runner.settings import derive, import_path

CONF = Path(__file__).resolve().parents[2] / "conf" / "dataset"
FILES = sorted(p.stem for p in CONF.glob("*.yaml"))
STREAMS = {"rag_stream": "rag_file"}


def loader_of(name: str) -> str:
    """The loader a dataset YAML names, following a YAML it extends."""
    first = OmegaConf.load(CONF / f"{name}.yaml").defaults[0]
    return first if "." in first else loader_of(first)


@pytest.mark.parametrize("name", FILES)
def test_every_yaml_names_a_loader_and_sets_only_its_parameters(name):
    loader = import_path(loader_of(name))
    assert callable(loader) and loader.__name__.startswith(("load_", "open_"))
    schema = derive(loader_of(name))
    params = set(inspect.signature(loader).parameters)
    assert {f.name for f in dataclasses.fields(schema)} == params | {"_target_"}
    assert set(load_part_yaml(CONF / f"{name}.yaml")) <= params


@pytest.mark.parametrize("name", FILES)
def test_the_derived_defaults_are_the_loaders_and_the_name_is_the_files(name):
    loader = import_path(loader_of(name))
    cfg = OmegaConf.merge(
        OmegaConf.structured(derive(loader_of(name))), load_part_yaml(CONF / f"{name}.yaml")
    )
    assert cfg._target_ == f"{loader.__module__}.{loader.__name__}"
    # a YAML that shares a loader renames its data set; `rag_stream` reads rag_file's in batches
    assert cfg.name == STREAMS.get(name, name)


def test_schema_rejects_wrong_types_and_unknown_keys():
    base = OmegaConf.structured(derive("runner.data.ragtruth.load_ragtruth"))
    with pytest.raises(ValidationError):
        OmegaConf.merge(base, {"limit": "abc"})
    with pytest.raises(Exception, match="nosuchkey"):
        OmegaConf.merge(base, {"nosuchkey": 1})


def test_a_split_the_release_lacks_is_refused_by_the_schema():
    base = OmegaConf.structured(derive("runner.data.ragtruth.load_ragtruth"))
    with pytest.raises(Exception, match="split"):
        OmegaConf.to_object(OmegaConf.merge(base, {"split": "dev"}))


def test_ragtruth_jsonl_config_instantiates_on_the_fixture(fixtures_dir):
    cfg = OmegaConf.merge(
        OmegaConf.structured(derive("runner.data.ragtruth.load_ragtruth")),
        load_part_yaml(CONF / "ragtruth_jsonl.yaml"),
        {"path": str(fixtures_dir / "ragtruth_original")},
    )
    loaded = instantiate(cfg)
    assert isinstance(loaded, LoadedData)
    assert loaded.name == "ragtruth_jsonl" and loaded.info["rows"] == 6


def test_halubench_config_instantiates_with_a_source_list(halubench_csv):
    cfg = OmegaConf.merge(
        OmegaConf.structured(derive("runner.data.halubench.load_halubench")),
        load_part_yaml(CONF / "halubench.yaml"),
        {"path": str(halubench_csv()), "sources": ["pubmedQA"]},
    )
    loaded = instantiate(cfg)
    assert loaded.info["counts_per_source"] == {"pubmedQA": 2}
