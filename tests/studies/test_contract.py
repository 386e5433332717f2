"""The study contract: every shipped study is a registered `Study`, found by its name.

The pipeline knows a study only through this contract (`runner.studies.contract`): the
registry, the typed `Params`, the optional hooks with their defaults, and `Inputs.require`,
which turns a missing config group into a ConfigError that names the fix.
"""

from __future__ import annotations

import dataclasses
from pathlib import Path

import pytest

from runner.errors import ConfigError
from runner.results import StudyResult
from runner.studies import Inputs, Study, available_studies, load_study

ROOT = Path(__file__).resolve().parents[2]


def test_every_study_module_registers_one_study_under_its_module_name():
    names = available_studies()
    assert "rq1_cheap_signals" in names and "contract" not in names
    for name in names:
        study = load_study(name)
        assert isinstance(study, Study) and study.name == name
        assert dataclasses.is_dataclass(study.Params)
        assert isinstance(study.titles, dict)


def test_every_experiment_names_a_registered_study():
    import yaml

    for path in sorted((ROOT / "conf" / "experiment").glob("*.yaml")):
        study = (yaml.safe_load(path.read_text()).get("study") or {}).get("name")
        if study is not None:  # an experiment extending another inherits its study
            assert study in available_studies(), path.name


def test_an_unknown_study_is_a_config_error_listing_the_known_ones():
    with pytest.raises(ConfigError, match=r"no module runner.studies.nope \(available: .*rq1"):
        load_study("nope")


@dataclasses.dataclass
class _Params:
    n: int = 1


def test_optional_hooks_default_to_nothing_and_a_name_registers_once():
    class Probe(Study, name="probe_for_contract_test", params=_Params, titles={"t": "T"}):
        def run(self, inputs, params):
            return StudyResult()

    try:
        probe = load_study("probe_for_contract_test")
        assert probe.paper is None and probe.paper_datasets is None
        assert probe.check(Inputs(experiment="x", seed=1), _Params()) is None
        assert probe.figures(None) == {} and probe.documents(StudyResult(), Path(".")) == {}
        assert probe.registered_model(Inputs(experiment="x", seed=1), _Params()) is None
        with pytest.raises(TypeError, match="two studies named 'probe_for_contract_test'"):

            class Other(Study, name="probe_for_contract_test", params=_Params, titles={}):
                def run(self, inputs, params):
                    return StudyResult()
    finally:
        Study.registry.pop("probe_for_contract_test", None)


def test_require_names_the_missing_group_and_the_experiment_file():
    inputs = Inputs(experiment="my_exp", seed=13, gates={"g": object()})
    assert list(inputs.require("gates")) == ["g"]
    with pytest.raises(ConfigError, match=r"configures no split.*conf/experiment/my_exp.yaml"):
        inputs.require("split")
    with pytest.raises(ConfigError, match="configures no judges"):
        inputs.require("judges")  # an empty dict is as missing as None


def test_with_data_keeps_every_built_part():
    inputs = Inputs(experiment="x", seed=5, gates={"g": 1}, hri="cfg")
    loaded = inputs.with_data("data")
    assert loaded.data == "data" and loaded.gates == {"g": 1} and loaded.hri == "cfg"
    assert inputs.data is None  # frozen: the original is unchanged


def test_named_parts_that_are_not_configured_fail_naming_the_setting_and_how_to_add_one():
    inputs = Inputs(experiment="demo", seed=0, gates={"rouge_l": object()}, verifiers={})
    inputs.require_parts("gates", ["rouge_l"], "routing.gate")  # configured: no error
    inputs.require_parts("gates", [], "study.params.gates")  # nothing named: no error
    with pytest.raises(ConfigError, match=r"'nli' is not a configured verifier.*verifiers\.nli"):
        inputs.require_parts("verifiers", ["nli"], "routing.verifier")
    with pytest.raises(ConfigError) as err:
        inputs.require_parts("gates", ["rouge_l", "b", "a"], "study.params.gates")
    message = str(err.value)
    assert "study.params.gates: ['a', 'b'] are not configured gates" in message
    assert "(configured: ['rouge_l'])" in message and "conf/experiment/demo.yaml" in message
