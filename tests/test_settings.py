"""runner.settings: the rules by which a part's config schema is derived from its class."""

from __future__ import annotations

import dataclasses
import enum
import os
from collections.abc import Mapping, Sequence
from typing import Any, Optional

import pytest
from omegaconf import OmegaConf
from omegaconf.errors import ConfigKeyError, ValidationError

from runner import settings
from runner.errors import ConfigError
from runner.settings import (
    OPEN_KEYS,
    SEED,
    checked_by,
    config_type,
    derive,
    import_path,
    is_record,
    parameters,
    settings_class,
)


class Kind(enum.StrEnum):
    a = "a"
    b = "b"


class Estimator:
    """A scikit-learn-style class: ``__init__`` only stores."""

    _convert_ = "all"

    def __init__(
        self, features: Sequence[str], c: float = 1.0, seed: int = SEED, kind: Kind | str = "a"
    ):
        self.features, self.c, self.seed, self.kind = features, c, seed, kind


def check(limit: int | None, **_: Any) -> None:
    if limit is not None and limit < 1:
        raise ConfigError(f"dataset.limit={limit}: a positive number of rows, or null")


@checked_by(check)
def load_things(
    path: str | os.PathLike | None = None,
    limit: int | None = None,
    columns: Mapping[str, str] | None = None,
    names: Sequence[str] = ("x", "y"),
    name: str = "things",
) -> None:
    """A loader function."""


@dataclasses.dataclass
class Record:
    level: float = 0.95
    seed: int = SEED


@settings_class()
class Part(Record):
    batch_size: int = 1


HERE = __name__


@pytest.mark.parametrize(
    ("hint", "expected"),
    [
        (int, int),
        (str, str),
        (Kind, Kind),
        (Kind | str, Kind),
        (int | None, Optional[int]),  # noqa: UP045 (OmegaConf's spelling)
        (Sequence[str], list[str]),
        (tuple[int, ...], list[int]),
        (Mapping[str, int], dict[str, int]),
        (str | Sequence[str] | None, Any),
        (str | os.PathLike | None, Any),
        (Estimator, Any),
        (Any, Any),
    ],
)
def test_types_become_what_omegaconf_can_check(hint, expected):
    assert config_type(hint) == expected


def test_a_class_gets_its_init_parameters_with_target_and_convert():
    schema = derive(f"{HERE}.Estimator")
    assert schema.__name__ == f"{HERE}.Estimator"  # the class a user greps for
    specs = {f.name: f for f in dataclasses.fields(schema)}
    assert list(specs) == ["_target_", "_convert_", "features", "c", "seed", "kind"]
    assert specs["_target_"].default == f"{HERE}.Estimator"
    assert specs["_convert_"].default == "all"
    assert specs["features"].default == "???"  # no default: mandatory at compose time
    assert (specs["c"].default, specs["seed"].default) == (1.0, SEED)
    node = OmegaConf.structured(schema)
    with pytest.raises(ConfigKeyError):
        OmegaConf.merge(node, {"cc": 2})
    with pytest.raises(ValidationError):
        OmegaConf.merge(node, {"kind": "z"})  # an enum: refused when composed


def test_a_function_gets_its_parameters_and_its_check_runs_in_post_init():
    schema = derive(f"{HERE}.load_things")
    assert schema.__name__ == f"{HERE}.load_things"
    node = OmegaConf.structured(schema)
    assert node.names == ["x", "y"] and node.name == "things" and node.path is None
    with pytest.raises(ConfigError, match=r"dataset\.limit=0"):
        OmegaConf.to_object(OmegaConf.merge(node, {"limit": 0}))
    assert OmegaConf.to_object(OmegaConf.merge(node, {"limit": 5})).limit == 5


def test_a_mapping_setting_keeps_its_keys_open():
    fields = {f.name: f for f in dataclasses.fields(derive(f"{HERE}.load_things"))}
    assert fields["columns"].metadata.get(OPEN_KEYS) is not True  # optional: not a dict
    fields = {f.name: f for f in dataclasses.fields(derive("runner.data.rag_file.load_rag_file"))}
    assert fields["columns"].metadata[OPEN_KEYS] is True


def test_a_record_is_its_own_schema_and_a_settings_class_is_a_part():
    assert is_record(Record) and not is_record(Part)
    assert derive(f"{HERE}.Record") is Record
    part = {f.name: f.default for f in dataclasses.fields(derive(f"{HERE}.Part"))}
    assert part == {"_target_": f"{HERE}.Part", "level": 0.95, "seed": SEED, "batch_size": 1}


def test_defaults_come_from_the_class_and_are_fresh_copies():
    got = {name: default for name, _, default in parameters(load_things)}
    assert got["names"] == ("x", "y")
    first, second = derive(f"{HERE}.load_things")(), derive(f"{HERE}.load_things")()
    assert first.names == ["x", "y"] and first.names is not second.names


def test_import_path_finds_module_attributes_and_fails_clearly():
    assert import_path("runner.settings.SEED") == SEED
    assert import_path(f"{HERE}.Estimator") is Estimator
    with pytest.raises((ImportError, AttributeError)):
        import_path("runner.no_such_module.Thing")


def test_a_settings_class_refuses_a_misspelt_override():
    with pytest.raises(TypeError, match="no inherited setting 'levle'"):
        settings_class(levle=0.9)(type("Bad", (Record,), {}))


def test_the_seed_constant_is_the_runs_default():
    from runner.config import RunConfig

    assert RunConfig().seed == settings.SEED == 13


@pytest.mark.slow
def test_a_composed_config_pickles_with_plain_pickle_and_is_typed_again_in_a_fresh_process(
    tmp_path,
):
    """Hydra's launchers (submitit, Slurm, Ray) send the composed config and the ConfigStore
    to a job process, which has derived nothing: neither may hold a class that exists only
    in the sending process (cloudpickle 2 would rebuild such a dataclass without its
    fields), and the job types each part's node again from its _target_."""
    import pickle
    import subprocess
    import sys

    from hydra import compose, initialize_config_dir
    from hydra.core.singleton import Singleton

    from runner.config import register_configs
    from runner.paths import PROJECT_ROOT

    register_configs()
    with initialize_config_dir(config_dir=str(PROJECT_ROOT / "conf"), version_base="1.3"):
        cfg = compose("config", overrides=["experiment=rq1_cheap_signals", "split.n_splits=4"])
    import cloudpickle
    from hydra.core.config_store import ConfigStore

    # nothing a process derived is in the config or the store: plain pickle takes both
    pickle.dumps(cfg)
    pickle.dumps(ConfigStore.instance().repo)
    # the launchers send them (and OmegaConf's resolvers) with cloudpickle
    (tmp_path / "job.pkl").write_bytes(cloudpickle.dumps((cfg, Singleton.get_state())))
    probe = (
        "import pickle, sys; from hydra.core.singleton import Singleton; "
        "from omegaconf import OmegaConf; from runner.schema_checks import with_schemas; "
        "cfg, state = pickle.load(open(sys.argv[1], 'rb')); Singleton.set_state(state); "
        "typed = with_schemas(cfg); "
        "print(OmegaConf.get_type(typed.split).__name__, OmegaConf.to_object(typed.split).n_splits)"
    )
    done = subprocess.run(
        [sys.executable, "-c", probe, str(tmp_path / "job.pkl")],
        capture_output=True,
        text=True,
        check=True,
    )
    assert done.stdout.strip() == "runner.evaluation.splits.GroupedKFold 4"
