"""The study contract: a study is the dataclass an experiment configures and Hydra builds.

The pipeline knows a study only through this contract (`runner.studies.contract`): the
registry (the manifest records a study by name; `make tables` finds it again), the fields
that declare the parts it takes, the constructor that checks them before any data, and
`check_named` / `configured`, which turn a part the settings name but the experiment does
not configure into a ConfigError that names the fix.
"""

from __future__ import annotations

import dataclasses
from pathlib import Path
from typing import Any

import pytest
import yaml

from runner.errors import ConfigError
from runner.results import StudyResult
from runner.settings import derive, import_path
from runner.studies import RunContext, Study, available_studies, check_named, configured, load_study

ROOT = Path(__file__).resolve().parents[2]


def test_every_study_module_registers_one_dataclass_study_under_its_module_name():
    names = available_studies()
    assert "rq1_cheap_signals" in names and "contract" not in names
    for name in names:
        cls = load_study(name)
        assert issubclass(cls, Study) and cls.name == name
        assert dataclasses.is_dataclass(cls), name
        assert isinstance(cls.titles, dict)


def _study_entry(path: Path) -> str | None:
    """The study class an experiment names, or the one of the experiment it extends."""
    for entry in yaml.safe_load(path.read_text()).get("defaults") or []:
        if isinstance(entry, dict) and "/study@study" in entry:
            return entry["/study@study"]
        if isinstance(entry, str) and (path.parent / f"{entry}.yaml").exists():
            return _study_entry(path.parent / f"{entry}.yaml")
    return None


def test_every_experiment_names_its_study_class_or_extends_one_that_does():
    for path in sorted((ROOT / "conf" / "experiment").glob("*.yaml")):
        target = _study_entry(path)
        assert target is not None, path.name
        assert issubclass(import_path(target), Study), path.name


def test_a_study_schema_is_its_fields_with_the_class_as_target():
    from runner.studies.rq1_cheap_signals import CheapSignals, Params

    schema = derive("runner.studies.rq1_cheap_signals.CheapSignals")
    names = [f.name for f in dataclasses.fields(schema)]
    assert names == ["_target_", "gates", "split", "bootstrap", "params"]
    built = schema()
    assert built._target_ == "runner.studies.rq1_cheap_signals.CheapSignals"
    assert built.params == Params() and built.gates == "???"  # parts come from the experiment
    assert issubclass(CheapSignals, Study)


def test_an_unknown_study_is_a_config_error_listing_the_known_ones():
    with pytest.raises(ConfigError, match=r"no module runner.studies.nope \(available: .*rq1"):
        load_study("nope")


def test_optional_hooks_default_to_nothing_and_a_name_registers_once():
    @dataclasses.dataclass
    class Probe(Study, name="probe_for_contract_test", titles={"t": "T"}):
        verifiers: dict[str, Any]
        threshold: float = 0.5

        def run(self, data, run):
            return StudyResult()

    try:
        assert load_study("probe_for_contract_test") is Probe
        probe = Probe(verifiers={"nli": "model"})
        assert probe.paper is None and probe.paper_datasets is None
        assert probe.figures(None) == {} and probe.documents(StudyResult(), Path(".")) == {}
        assert list(probe.parts()) == [("verifiers.nli", "model"), ("threshold", 0.5)]
        with pytest.raises(TypeError, match="two studies named 'probe_for_contract_test'"):

            class Other(Study, name="probe_for_contract_test", titles={}):
                def run(self, data, run):
                    return StudyResult()
    finally:
        Study.registry.pop("probe_for_contract_test", None)


def test_a_study_needing_a_group_the_experiment_leaves_empty_says_how_to_add_one():
    assert configured({"g": 1}, "gates") == {"g": 1}
    with pytest.raises(ConfigError, match=r"needs judges.*\+judge@judges\.<name>=<config>"):
        configured({}, "judges")


def test_named_parts_that_are_not_configured_fail_naming_the_setting_and_how_to_add_one():
    gates = {"rouge_l": object()}
    check_named(gates, ["rouge_l"], "routing.gate", "gates")  # configured: no error
    check_named(gates, [], "study.params.gates", "gates")  # nothing named: no error
    with pytest.raises(ConfigError, match=r"'nli' is not a configured verifier.*verifiers\.nli"):
        check_named({}, ["nli"], "routing.verifier", "verifiers")
    with pytest.raises(ConfigError) as err:
        check_named(gates, ["rouge_l", "b", "a"], "study.params.gates", "gates")
    message = str(err.value)
    assert "study.params.gates: ['a', 'b'] are not configured gates" in message
    assert "(configured: ['rouge_l'])" in message and "+gate@gates.a=<config>" in message


def test_the_run_context_names_the_missing_store_when_a_study_needs_one():
    run = RunContext(experiment="route", seed=13)
    with pytest.raises(ConfigError, match="'route' needs a tracking store"):
        _ = run.tracking_uri
