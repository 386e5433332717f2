"""A composed config is checked against its schemas before any data: keys, then values."""

from __future__ import annotations

from pathlib import Path

import pytest
from hydra import compose, initialize_config_dir
from omegaconf import OmegaConf

from runner.config import register_configs
from runner.errors import ConfigError
from runner.pipeline import check_config
from runner.schema_checks import check_known_keys, schema_nodes, with_schemas

CONF = Path(__file__).resolve().parents[1] / "conf"

register_configs()


def composed(*overrides: str):
    with initialize_config_dir(config_dir=str(CONF), version_base="1.3"):
        return compose("config", overrides=["experiment=rq1_cheap_signals", *overrides])


@pytest.mark.parametrize(
    ("override", "message"),
    [
        (
            "+bootstrap.n_resamplez=5",
            "bootstrap.n_resamplez: unknown key (runner.evaluation.config.BootstrapConf has no "
            "'n_resamplez'); "
            "did you mean 'n_resamples'?",
        ),
        ("+split.nsplits=3", "split.nsplits: unknown key"),
        (
            "+dataset.pth=/tmp/x",
            "dataset.pth: unknown key (runner.data.ragtruth.load_ragtruth has no 'pth')",
        ),
        ("+gates.uncovered.sing=-1", "gates.uncovered.sing: unknown key"),
        ("+sed=3", "sed: unknown key (runner.config.RunConfig has no 'sed'); did you mean 'seed'?"),
    ],
)
def test_keys_added_with_plus_are_checked_against_the_schema(override, message):
    cfg = composed(override)
    with pytest.raises(ConfigError) as err:
        check_config(cfg)
    assert str(err.value).startswith(message)


def test_a_parts_node_is_composed_untyped_and_typed_by_its_target_before_any_work():
    cfg = composed()
    assert OmegaConf.get_type(cfg.split) is dict  # nothing of this process in the config
    paths = {path: kind.__name__ for path, _, kind in schema_nodes(with_schemas(cfg))}
    assert paths[""] == "RunConfig"
    assert paths["bootstrap"] == "BootstrapConf"
    assert paths["split"] == "runner.evaluation.splits.GroupedKFold"
    assert paths["gates.uncovered"] == "runner.gates.FeatureGate"  # the path its YAML names
    assert paths["study.params"] == "Params"  # a study's Params is a record: its own class
    check_known_keys(with_schemas(cfg))  # the shipped configs have no stray keys


@pytest.mark.parametrize(
    ("overrides", "message"),
    [
        (["bootstrap.n_resamples=-5"], "bootstrap.n_resamples must be a positive integer, got -5"),
        (["bootstrap.n_resamples=0"], "bootstrap.n_resamples must be a positive integer"),
        (["bootstrap.level=1.5"], "bootstrap.level must lie in (0, 1), got 1.5"),
        (["split.n_splits=1"], "split.n_splits must be an integer ≥ 2"),
        (["split=kfold", "split.n_splits=-3"], "split.n_splits must be an integer ≥ 2"),
        (["split=target_adaptation", "split.ks=[1,50]"], "split.ks must be a list of integers"),
        (["split=target_adaptation", "split.test_fraction=1.0"], "split.test_fraction must lie"),
        (["split=target_adaptation", "split.n_seeds=0"], "split.n_seeds must be a positive"),
        (
            ["dataset.split=nonexistent"],
            "dataset: ragtruth: dataset.split='nonexistent' does not exist; valid splits: "
            "train, test",
        ),
        (
            ["dataset.split=train", "dataset.path=/data/ragtruth/test.parquet"],
            "dataset: ragtruth: dataset.split=train but dataset.path=/data/ragtruth/test.parquet "
            "is the 'test' split; set dataset.split=test",
        ),
        (
            ["dataset=wice", "dataset.split=train"],
            "dataset: wice: dataset.split='train' does not exist; valid splits: dev, test",
        ),
    ],
)
def test_values_that_cannot_work_fail_the_pre_flight_check(overrides, message):
    cfg = composed(*overrides)
    with pytest.raises(ConfigError) as err:
        check_config(cfg)
    assert str(err.value).startswith(message)
    assert "\n" not in str(err.value)


def test_good_values_pass():
    check_config(composed("bootstrap.n_resamples=1", "split.n_splits=2", "dataset.split=train"))
