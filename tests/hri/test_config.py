"""The HRI constants come from conf/hri/*.yaml and are checked before any scoring."""

from __future__ import annotations

import copy
from pathlib import Path

import pytest
import yaml
from hydra import compose, initialize_config_dir
from hydra.core.global_hydra import GlobalHydra
from omegaconf import OmegaConf

from runner.config import register_configs
from runner.errors import ConfigError
from runner.hri.config import HRIConfig, load_hri_config, validate_weights

CONF = Path(__file__).resolve().parents[2] / "conf"


def default_dict() -> dict:
    """conf/hri/default.yaml without its Hydra defaults list."""
    doc = yaml.safe_load((CONF / "hri" / "default.yaml").read_text())
    doc.pop("defaults")
    return doc


def test_default_config_loads_with_weights_summing_to_one():
    config = load_hri_config(default_dict())
    assert config.dimensions == ["F", "C", "U", "O", "S", "P", "H"]
    assert sum(config.weights.values()) == pytest.approx(1.0, abs=1e-12)
    assert config.weights_origin == "config"
    assert [b.action for b in config.bands] == ["release", "caution", "review", "block"]
    # A label's allowed dimensions default to its dimensions.
    assert config.labels["UNSUPPORTED"].allowed_dimensions == ["U"]
    assert config.labels["CONTRADICTED"].allowed_dimensions == ["F", "C"]


def test_every_constant_is_read_from_the_config_not_the_code():
    doc = default_dict()
    doc["labels"]["UNSUPPORTED"]["contribution"] = 0.4
    doc["weights"] = {"F": 0.3, "C": 0.1, "U": 0.2, "O": 0.1, "S": 0.1, "P": 0.1, "H": 0.1}
    doc["floors"][0]["floor"] = 0.9
    doc["bands"][0]["upper"] = 10
    doc["feedback"]["decay_lambda"] = 0.5
    config = load_hri_config(doc)
    assert config.labels["UNSUPPORTED"].contribution == 0.4
    assert config.weights["F"] == 0.3
    assert config.floors[0].floor == 0.9
    assert config.bands[0].upper == 10
    assert config.feedback.decay_lambda == 0.5


@pytest.mark.parametrize(
    ("weights", "message"),
    [
        ({"F": -0.1, "C": 0.3, "U": 0.2, "O": 0.2, "S": 0.2, "P": 0.1, "H": 0.1}, "hri.weights.F"),
        ({"F": 0.25, "C": 0.2, "U": 0.15, "O": 0.1, "S": 0.1, "P": 0.1, "H": 0.05}, "sum to"),
        ({"F": 0.35, "C": 0.2, "U": 0.15, "O": 0.1, "S": 0.1, "P": 0.1}, "no weight for"),
        (
            {"F": 0.25, "C": 0.2, "U": 0.15, "O": 0.1, "S": 0.1, "P": 0.1, "H": 0.05, "X": 0.05},
            "unknown dimension",
        ),
    ],
)
def test_bad_weights_raise_a_clear_config_error(weights, message):
    doc = default_dict()
    doc["weights"] = weights
    with pytest.raises(ConfigError, match=message):
        load_hri_config(doc)


def test_weight_sum_error_reports_the_actual_sum():
    with pytest.raises(ConfigError, match=r"sum to 0\.9 "):
        validate_weights({"a": 0.5, "b": 0.4}, ("a", "b"))


def test_weights_within_tolerance_are_accepted():
    out = validate_weights({"a": 0.1, "b": 0.2, "c": 0.7}, ("a", "b", "c"))
    assert out == {"a": 0.1, "b": 0.2, "c": 0.7}


def test_unknown_key_in_the_config_is_rejected():
    doc = default_dict()
    doc["labels"]["SUPPORTED"]["contrib"] = 0.1
    with pytest.raises(ConfigError, match="contrib"):
        load_hri_config(doc)


@pytest.mark.parametrize(
    ("edit", "message"),
    [
        (lambda d: d["labels"]["PARTIAL"].update(contribution=1.5), "contribution must lie"),
        (lambda d: d["labels"]["PARTIAL"].update(dimensions=["Z"]), "unknown dimension 'Z'"),
        (lambda d: d["labels"]["PARTIAL"].update(dimensions=["F"]), "not in allowed_dimensions"),
        (lambda d: d["labels"]["UNSUPPORTED"].update(dimensions=[]), "count\\s+nowhere"),
        (lambda d: d["floors"][0].update(label="NOPE"), "unknown label 'NOPE'"),
        (lambda d: d["floors"][0].update(min_criticality=0), "must be >= 1"),
        (lambda d: d["floors"][1].update(min_criticality=3), "min_criticality 3 >"),
        (lambda d: d["floors"][0].update(min_feedback_events=2), "feedback conditions only"),
        (lambda d: d["floors"][1].update(name="contradicted_high"), "duplicate floor name"),
        (lambda d: d["bands"][1].update(upper=10), "upper bounds must increase"),
        (lambda d: d["bands"][-1].update(upper=90), "must equal hri.scale"),
        (lambda d: d["feedback"].update(decay_lambda=-1), "decay_lambda"),
        (
            lambda d: d["labels"]["VALIDATED_NEGATIVE_FEEDBACK"].update(
                dimensions=["U"], allowed_dimensions=[]
            ),
            "must be \\[H\\]",
        ),
        (
            lambda d: d["labels"]["PARTIAL"].update(allowed_dimensions=["C", "U", "H"]),
            "only VALIDATED_NEGATIVE_FEEDBACK may count",
        ),
        (lambda d: d.update(weights_source="expert"), "weights_source"),
    ],
)
def test_configs_that_cannot_work_are_rejected(edit, message):
    doc = copy.deepcopy(default_dict())
    edit(doc)
    with pytest.raises(ConfigError, match=message):
        load_hri_config(doc)


def test_missing_hri_group_says_how_to_add_it():
    with pytest.raises(ConfigError, match="/hri: default"):
        load_hri_config(None)


def _compose(overrides: list[str]):
    register_configs()  # the schema the HRI YAML names (runner.hri.config.HRIConfig)
    GlobalHydra.instance().clear()
    with initialize_config_dir(config_dir=str(CONF), version_base="1.3"):
        return compose(overrides=overrides)


def test_hydra_composes_the_default_group_against_its_schema():
    cfg = _compose(["+hri=default"])
    config = OmegaConf.to_object(cfg.hri)  # as a run builds it: the record checks itself
    assert isinstance(config, HRIConfig)
    assert config.weights == load_hri_config(default_dict()).weights


def test_ahp_variant_derives_the_weights_from_pairwise_judgments():
    cfg = _compose(["+hri=ahp"])
    config = OmegaConf.to_object(cfg.hri)
    expected = load_hri_config(default_dict()).weights
    assert config.weights_origin == "ahp"
    for k, w in expected.items():
        assert config.weights[k] == pytest.approx(w, abs=1e-12)
    assert config.ahp_summary["consistency_ratio"] == pytest.approx(0.0, abs=1e-12)


def test_ahp_variant_rejects_inconsistent_judgments():
    doc = default_dict()
    doc["weights_source"] = "ahp"
    doc["ahp"] = {
        "cr_limit": 0.1,
        "comparisons": {
            "F": {"C": 9, "U": "1/9", "O": 1, "S": 1, "P": 1, "H": 1},
            "C": {"U": 9, "O": 1, "S": 1, "P": 1, "H": 1},
            "U": {"O": 1, "S": 1, "P": 1, "H": 1},
            "O": {"S": 1, "P": 1, "H": 1},
            "S": {"P": 1, "H": 1},
            "P": {"H": 1},
        },
    }
    with pytest.raises(ConfigError, match="consistency ratio"):
        load_hri_config(doc)
