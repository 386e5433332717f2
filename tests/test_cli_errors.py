"""Hydra's composition errors condensed to one line (the CLI prints it after ``error:``)."""

from __future__ import annotations

import os
from pathlib import Path

import pytest
from hydra import compose, initialize_config_dir
from hydra.errors import CompactHydraException

from runner import cli_errors
from runner.cli_errors import one_line, run_reporting_config_errors, top_level_hint
from runner.config import register_configs

CONF = Path(__file__).resolve().parents[1] / "conf"

register_configs()


def compose_error(*overrides: str) -> CompactHydraException:
    with initialize_config_dir(config_dir=str(CONF), version_base="1.3"):
        with pytest.raises(CompactHydraException) as err:
            compose("config", overrides=list(overrides))
    return err.value


def test_a_missing_key_names_the_key_its_class_and_the_valid_keys_without_the_append_hint():
    text = one_line(compose_error("bootstrap.n_resamplez=5"))
    assert "\n" not in text and "+bootstrap" not in text
    assert text == (
        "bootstrap.n_resamplez: unknown key (runner.evaluation.config.BootstrapConf has no "
        "'n_resamplez'); did you mean 'n_resamples'? valid keys: n_resamples, level, seed"
    )


def test_a_wrong_type_names_value_and_key():
    text = one_line(compose_error("bootstrap.n_resamples=abc"))  # a record: typed when composed
    assert "\n" not in text
    assert "Value 'abc' of type 'str' could not be converted to Integer" in text
    assert text.endswith("full_key: bootstrap.n_resamples")


def test_an_unknown_option_lists_the_options_a_user_can_pick():
    text = one_line(compose_error("experiment=nope"))
    assert text.startswith("In 'config': Could not find 'experiment/nope'; Available options")
    assert "rq1_cheap_signals, rq2_grouped_cv" in text and "search path" not in text
    assert "_schema" not in one_line(compose_error("experiment=rq1_cheap_signals", "split=x"))


def test_an_unknown_top_level_key_near_a_group_of_named_parts_says_how_parts_are_named():
    text = one_line(compose_error("experiment=rq1_cheap_signals", "gate.nonexistent=1"))
    assert "Key 'gate' not in 'RunConfig'" in text
    assert "did you mean gates.<name>.<key>?" in text and "runner.config.RunConfig" in text


def test_an_unknown_top_level_key_gets_the_closest_valid_key():
    assert "did you mean 'seed'?" in top_level_hint("seeed")
    hint = top_level_hint("zzz")
    assert "did you mean" not in hint and "valid: experiment, seed, progress, study" in hint


def test_a_part_key_error_names_the_class_a_user_can_grep_for():
    # a part's node is composed untyped: the class its _target_ names says which keys it takes
    text = one_line(compose_error("experiment=rq1_cheap_signals", "gates.uncovered.nonexistent=1"))
    assert text == (
        "gates.uncovered.nonexistent: unknown key (runner.gates.FeatureGate has no "
        "'nonexistent'); valid keys: feature, sign"
    )
    text = one_line(compose_error("experiment=rq1_cheap_signals", "dataset.pth=x"))
    assert "(runner.data.ragtruth.load_ragtruth has no 'pth'); did you mean 'path'?" in text
    text = one_line(compose_error("experiment=rq1_cheap_signals", "study.params.nope=1"))
    assert "study.params.nope: unknown key (runner.studies.rq1_cheap_signals.Params" in text


# ------------------------------------------------------------- the CLI's reporting of them


def failing_with(exc: BaseException):
    def main():
        raise exc

    return main


def test_a_composition_error_becomes_one_error_line_and_exit_2(capsys, monkeypatch):
    monkeypatch.delenv("HYDRA_FULL_ERROR", raising=False)
    error = compose_error("bootstrap.n_resamplez=5")
    with pytest.raises(SystemExit) as done:
        run_reporting_config_errors(failing_with(error))
    assert done.value.code == 2
    (line,) = capsys.readouterr().err.strip().splitlines()
    assert line == f"error: {one_line(error)}"
    assert "HYDRA_FULL_ERROR" not in os.environ  # set only for the call


def test_any_other_error_keeps_its_traceback(monkeypatch):
    monkeypatch.delenv("HYDRA_FULL_ERROR", raising=False)
    with pytest.raises(ZeroDivisionError):
        run_reporting_config_errors(failing_with(ZeroDivisionError("a bug")))


def test_a_user_who_asks_for_hydras_full_error_gets_the_exception_itself(monkeypatch):
    monkeypatch.setenv("HYDRA_FULL_ERROR", "1")
    error = compose_error("bootstrap.n_resamplez=5")
    with pytest.raises(CompactHydraException) as raised:
        run_reporting_config_errors(failing_with(error))
    assert raised.value is error


def test_nothing_of_hydra_is_patched():
    source = Path(cli_errors.__file__).read_text()
    assert "_internal" not in source
    import hydra._internal.utils as hydra_utils  # the reporter Hydra's main calls

    assert not hasattr(hydra_utils.run_and_report, "wrapped")
