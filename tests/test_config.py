"""Every config group composes, is typed, and instantiates; config errors fail before work."""

from __future__ import annotations

from pathlib import Path

import pytest
from hydra import compose, initialize_config_dir
from hydra.errors import ConfigCompositionException
from hydra.utils import instantiate
from omegaconf import OmegaConf
from omegaconf.errors import OmegaConfBaseException

from runner.config import register_configs
from runner.data.base import REQUIRED_COLUMNS
from runner.errors import ConfigError
from runner.pipeline import check_config

CONF = Path(__file__).resolve().parents[1] / "conf"
EXPERIMENTS = sorted(p.stem for p in (CONF / "experiment").glob("*.yaml"))

register_configs()


def composed(*overrides: str):
    with initialize_config_dir(config_dir=str(CONF), version_base="1.3"):
        return compose("config", overrides=list(overrides))


def options(group: str) -> list[str]:
    return sorted(p.stem for p in (CONF / group).glob("*.yaml"))


@pytest.mark.parametrize("experiment", EXPERIMENTS)
def test_every_experiment_composes_and_passes_the_pre_flight_checks(experiment):
    cfg = composed(f"experiment={experiment}")
    assert cfg.experiment == experiment
    check_config(cfg)  # study params typed, every _target_ importable


@pytest.mark.parametrize("gate", options("gate"))
def test_every_gate_config_instantiates_an_estimator_with_the_gate_contract(gate):
    cfg = composed("experiment=rq1_cheap_signals", f"+gate@gates.extra={gate}")
    part = instantiate(cfg.gates.extra, _convert_="all")
    assert hasattr(part, "fit") and hasattr(part, "score") and isinstance(part.needs_fit, bool)


@pytest.mark.parametrize("split", options("split"))
def test_every_split_config_instantiates_a_splitter(split):
    cfg = composed("experiment=rq1_cheap_signals", f"split={split}")
    assert hasattr(instantiate(cfg.split), "folds")


@pytest.mark.parametrize("bootstrap", options("bootstrap"))
def test_every_bootstrap_config_is_typed_settings_whose_seed_follows_the_master_seed(bootstrap):
    from runner.evaluation.config import BootstrapConf

    cfg = composed("experiment=rq1_cheap_signals", f"bootstrap={bootstrap}", "seed=7")
    assert "_target_" not in cfg.bootstrap  # settings, not a part: nothing instantiates it
    settings = OmegaConf.to_object(cfg.bootstrap)
    assert isinstance(settings, BootstrapConf) and settings.n_resamples > 0
    assert settings.seed == 7


@pytest.mark.parametrize("split", ["grouped_kfold", "kfold", "target_adaptation"])
def test_split_seeds_follow_the_master_seed_unless_overridden(split):
    cfg = composed("experiment=rq1_cheap_signals", f"split={split}", "seed=7")
    assert cfg.split.seed == 7
    cfg = composed("experiment=rq1_cheap_signals", f"split={split}", "seed=7", "split.seed=3")
    assert cfg.split.seed == 3


@pytest.mark.parametrize("tracking", options("tracking"))
def test_every_tracking_config_composes(tracking):
    cfg = composed("experiment=rq1_cheap_signals", f"tracking={tracking}")
    assert cfg.tracking.enabled == (tracking != "off")


@pytest.mark.parametrize("dataset", ["ragtruth", "halubench"])
def test_response_datasets_instantiate_into_the_canonical_frame(dataset, data_dir):
    cfg = composed("experiment=rq1_cheap_signals", f"dataset={dataset}", "dataset.limit=20")
    data = instantiate(cfg.dataset, _convert_="all")
    assert len(data.frame) == 20
    assert set(REQUIRED_COLUMNS) <= set(data.frame.columns)


def test_a_wrong_type_fails_at_compose_time_naming_the_key():
    with pytest.raises((ConfigCompositionException, OmegaConfBaseException)) as err:
        composed("experiment=rq2_grouped_cv", "split.n_splits=abc")
    assert "n_splits" in str(err.value) + str(err.value.__cause__)


def test_an_unknown_key_fails_at_compose_time_naming_the_key():
    with pytest.raises((ConfigCompositionException, OmegaConfBaseException)) as err:
        composed("experiment=rq1_cheap_signals", "dataset.pth=/tmp/x")
    assert "pth" in str(err.value) + str(err.value.__cause__)


def test_an_unknown_gate_key_fails_at_compose_time():
    with pytest.raises((ConfigCompositionException, OmegaConfBaseException)) as err:
        composed("experiment=rq1_cheap_signals", "gates.uncovered.featur=x")
    assert "featur" in str(err.value) + str(err.value.__cause__)


def test_unknown_study_params_fail_in_the_pre_flight_check_before_any_data_load():
    cfg = composed(
        "experiment=rq2_grouped_cv",
        "+study.params.n_resampels=5",
        "dataset.path=/does/not/exist.parquet",
    )
    with pytest.raises(ConfigError, match="n_resampels"):
        check_config(cfg)


def test_a_target_that_cannot_be_imported_is_a_config_error():
    cfg = composed("experiment=rq1_cheap_signals")
    OmegaConf.set_struct(cfg, False)
    cfg.gates.uncovered._target_ = "runner.gates.NoSuchGate"
    with pytest.raises(ConfigError, match="NoSuchGate"):
        check_config(cfg)


def test_an_unknown_study_name_lists_the_available_studies():
    cfg = composed("experiment=rq1_cheap_signals", "study.name=rq9")
    with pytest.raises(ConfigError, match="rq1_cheap_signals"):
        check_config(cfg)
