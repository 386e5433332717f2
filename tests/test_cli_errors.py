"""Hydra's composition errors condensed to one line (the CLI prints it after ``error:``)."""

from __future__ import annotations

from pathlib import Path

import pytest
from hydra import compose, initialize_config_dir
from hydra.errors import CompactHydraException

from runner.cli_errors import one_line
from runner.config import register_configs

CONF = Path(__file__).resolve().parents[1] / "conf"

register_configs()


def compose_error(*overrides: str) -> CompactHydraException:
    with initialize_config_dir(config_dir=str(CONF), version_base="1.3"):
        with pytest.raises(CompactHydraException) as err:
            compose("config", overrides=list(overrides))
    return err.value


def test_a_missing_key_names_the_key_without_the_append_hint():
    text = one_line(compose_error("bootstrap.n_resamplez=5"))
    assert "\n" not in text and "+bootstrap" not in text
    assert text == (
        "Could not override 'bootstrap.n_resamplez'; Key 'n_resamplez' not in 'BootstrapConf'; "
        "full_key: bootstrap.n_resamplez"
    )


def test_a_wrong_type_names_value_and_key():
    text = one_line(compose_error("split.n_splits=abc"))
    assert "\n" not in text
    assert "Value 'abc' of type 'str' could not be converted to Integer" in text
    assert text.endswith("full_key: split.n_splits")


def test_an_unknown_option_lists_the_options_a_user_can_pick():
    text = one_line(compose_error("experiment=nope"))
    assert text.startswith("In 'config': Could not find 'experiment/nope'; Available options")
    assert "rq1_cheap_signals, rq2_grouped_cv" in text and "search path" not in text
    assert "_schema" not in one_line(compose_error("experiment=rq1_cheap_signals", "split=x"))
