"""Split and bootstrap configs: each names its class, sets only keys of the schema derived
from it, and instantiates."""

from __future__ import annotations

import dataclasses
from pathlib import Path

import pytest
from hydra import compose, initialize_config_dir
from hydra.core.global_hydra import GlobalHydra
from hydra.errors import ConfigCompositionException
from hydra.utils import instantiate
from omegaconf import OmegaConf

from runner.config import register_configs
from runner.errors import ConfigError
from runner.evaluation.bootstrap import BootstrapResult, group_bootstrap
from runner.evaluation.metrics import auroc_batched
from runner.evaluation.splits import GroupedKFold, KFold, LeaveSourceOut, TargetAdaptation
from runner.schema_checks import with_schemas
from runner.settings import derive

CONF = Path(__file__).resolve().parents[2] / "conf"
FILES = {
    "split/grouped_kfold": GroupedKFold,
    "split/kfold": KFold,
    "split/leave_source_out": LeaveSourceOut,
    "split/target_adaptation": TargetAdaptation,
}


@pytest.fixture
def compose_group():
    register_configs()
    GlobalHydra.instance().clear()
    with initialize_config_dir(config_dir=str(CONF), version_base="1.3"):

        def composed(group, name, *over):
            root = compose(overrides=["+seed=13", f"+{group}={name}", *over])
            OmegaConf.resolve(root)  # `${seed}` points at the root, which the group leaves
            return root[group]

        yield composed
    GlobalHydra.instance().clear()


YAML_CLASS = {
    "split/grouped_kfold.yaml": "runner.evaluation.splits.GroupedKFold",
    "split/kfold.yaml": "runner.evaluation.splits.KFold",
    "split/leave_source_out.yaml": "runner.evaluation.splits.LeaveSourceOut",
    "split/target_adaptation.yaml": "runner.evaluation.splits.TargetAdaptation",
    "bootstrap/default.yaml": "runner.evaluation.config.BootstrapConf",
    "bootstrap/fast.yaml": "default",
}


def test_every_yaml_names_its_class_and_sets_only_its_keys_each_commented():
    on_disk = {
        str(p.relative_to(CONF)) for g in ("split", "bootstrap") for p in (CONF / g).glob("*.yaml")
    }
    assert on_disk == set(YAML_CLASS)
    for rel, name in YAML_CLASS.items():
        path = CONF / rel
        raw = OmegaConf.load(path)
        assert list(raw["defaults"]) == [name, "_self_"], rel
        target = name if "." in name else YAML_CLASS[f"{rel.split('/')[0]}/{name}.yaml"]
        fields = {f.name for f in dataclasses.fields(derive(target))}
        assert set(raw) - {"defaults"} <= fields, rel
        for line in path.read_text().splitlines():
            if line.strip() and not line.lstrip().startswith(("#", "-", "defaults:")):
                assert "#" in line, f"{rel}: uncommented line {line!r}"


@pytest.mark.parametrize(("name", "cls"), FILES.items())
def test_split_configs_instantiate_their_splitter_with_yaml_values(compose_group, name, cls):
    group, file = name.split("/")
    cfg = compose_group(group, file)
    obj = instantiate(cfg)
    assert type(obj) is cls
    raw = OmegaConf.load(CONF / group / f"{file}.yaml")
    for key in raw:
        if key not in {"defaults", "_target_"}:
            got = getattr(obj, key)
            assert (list(got) if isinstance(got, tuple) else got) == cfg[key]
    if "seed" in raw:
        assert OmegaConf.to_container(raw)["seed"] == "${seed}"  # follows the master seed
        assert obj.seed == 13


def test_schema_rejects_a_wrong_type_and_an_unknown_key(compose_group):
    assert compose_group("split", "grouped_kfold", "split.n_splits=3").n_splits == 3
    untyped = compose_group("split", "grouped_kfold", "split.n_splits=abc")  # a part's node
    with pytest.raises(ConfigError, match=r"split\.n_splits: Value 'abc'.*GroupedKFold"):
        with_schemas(OmegaConf.create({"split": untyped}))  # typed as the pre-flight does
    with pytest.raises(ConfigCompositionException, match="nsplits"):
        compose_group("split", "kfold", "split.nsplits=3")


@pytest.mark.parametrize(("file", "n"), [("default", 1000), ("fast", 50)])
def test_bootstrap_configs_are_the_settings_group_bootstrap_takes(compose_group, file, n):
    cfg = compose_group("bootstrap", file)
    settings = OmegaConf.to_object(cfg)
    assert (settings.n_resamples, settings.level, settings.seed) == (n, 0.95, 13)
    res = group_bootstrap(
        [0, 1, 0, 1, 1, 0],
        {"g": [0.1, 0.9, 0.2, 0.8, 0.3, 0.4]},
        [0, 0, 1, 1, 2, 2],
        {"auroc": auroc_batched},
        n_resamples=settings.n_resamples,
        seed=settings.seed,
        level=settings.level,
    )
    assert isinstance(res, BootstrapResult)
    assert (res.n_resamples, res.seed, res.level) == (n, 13, 0.95)
