"""A configuration composed outside a run: every conf/verifier YAML composes (schema,
architecture defaults) and instantiates, and an experiment composes as a run records it."""

import pytest
from hydra.errors import ConfigCompositionException
from tests.verifiers.conftest import tiny_deberta  # noqa: F401  (a fixture this module uses)

from runner.config import CONF_DIR, build_verifier, compose_verifier, experiment_config
from runner.errors import ConfigError
from runner.gates import ClaimGate
from runner.verifiers import DebertaNLIVerifier, HHEMVerifier, LettuceDetectVerifier

EXPECTED = {
    "deberta_nli": (DebertaNLIVerifier, "deberta_v3_small", "top_k_sentences", 512),
    "hhem_full": (HHEMVerifier, "flan_t5_base_encoder", "full_context", 512),
    "hhem_top3": (HHEMVerifier, "flan_t5_base_encoder", "top_k_sentences", 512),
    "lettucedetect": (LettuceDetectVerifier, "modernbert_base", "full_context", 4096),
    # the trained detector's config: the same class; its window comes from detector.json
    "detector": (LettuceDetectVerifier, "modernbert_base", "full_context", 4096),
}


CLAIM_LEVEL = {"claim_gate": ClaimGate}
"""S1's claim gate: no model weights; fitted on labelled claims when it first scores."""


def test_every_verifier_config_is_tested():
    stems = {p.stem for p in (CONF_DIR / "verifier").glob("*.yaml")}
    assert stems == set(EXPECTED) | set(CLAIM_LEVEL)


def test_the_claim_gate_config_builds_an_unfitted_gate_following_the_master_seed():
    gate = build_verifier("claim_gate", seed=21)
    assert type(gate) is ClaimGate and gate.trained_on == "wice:dev"
    assert gate.random_state == 21 and not hasattr(gate, "gate_")  # nothing read yet


@pytest.mark.parametrize("name", sorted(EXPECTED))
def test_config_composes_and_builds(name):
    cls, arch, evidence, max_length = EXPECTED[name]
    verifier = build_verifier(name, ["weights=random"])
    assert type(verifier) is cls
    assert verifier.architecture["name"] == arch
    assert (verifier.evidence, verifier.max_length) == (evidence, max_length)
    assert verifier.needs_fit is False


def test_schema_rejects_bad_types_and_unknown_keys():
    with pytest.raises(ConfigError, match=r"verifier\.batch_size: Value 'abc'"):
        compose_verifier("deberta_nli", ["batch_size=abc"])
    with pytest.raises(ConfigCompositionException):
        compose_verifier("deberta_nli", ["batchsize=2"])


def test_local_model_path_override(tiny_deberta):  # noqa: F811
    verifier = build_verifier("deberta_nli", [f"model={tiny_deberta}"])
    assert verifier.loaded.name == str(tiny_deberta)


def test_an_experiment_composes_as_a_run_records_it_and_an_unknown_one_has_none():
    config = experiment_config("rq1_cheap_signals")
    assert config["experiment"] == "rq1_cheap_signals"
    assert config["study"]["_target_"].endswith("CheapSignals")
    assert config["study"]["gates"] == "${gates}"  # a part is recorded at its own key
    assert "uncovered" in config["gates"]
    assert experiment_config("no_such_experiment") is None


def test_the_cli_scans_the_conf_folders_it_adds_to_the_search_path():
    from runner.config import searchpath_dirs

    argv = ["experiment=rq1_cheap_signals", "hydra.searchpath=[file:///my/conf,pkg://x.conf]"]
    assert searchpath_dirs(argv) == ["/my/conf"]
    assert searchpath_dirs(["+hydra.searchpath=[file://rel/conf]"]) == ["rel/conf"]
