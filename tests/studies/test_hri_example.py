"""The seed's worked example (Table V) is reproduced exactly from the claims file."""

from __future__ import annotations

import csv
import json
import shutil
from decimal import Decimal
from pathlib import Path

import pytest
import yaml
from hydra import compose, initialize_config_dir
from hydra.core.global_hydra import GlobalHydra
from hydra.utils import instantiate

from runner.config import register_configs
from runner.data.hri_claims import load_hri_claims
from runner.errors import ConfigError
from runner.hri.config import HRIConfig
from runner.pipeline import check_config
from runner.studies import RunContext, hri_example

ROOT = Path(__file__).resolve().parents[2]
CONF = ROOT / "conf"
PUBLISHED = ROOT / "experiments" / "hri" / "published.csv"


def hri_dict(name: str = "default") -> dict:
    doc = yaml.safe_load((CONF / "hri" / f"{name}.yaml").read_text())
    doc.pop("defaults")
    return doc


CONTEXT = RunContext(experiment="hri_example", seed=13)


def published() -> list[dict]:
    with open(PUBLISHED, newline="") as handle:
        return list(csv.DictReader(handle))


def run_example(hri: dict | None = None, data=None, **params):
    """The study built with the `hri` group (validated on construction), run on the claims."""
    study = hri_example.HriExample(
        hri=hri_dict() if hri is None else hri, params=hri_example.Params(**params)
    )
    return study.run(data or load_hri_claims(), CONTEXT)


def test_every_published_number_is_reproduced_at_its_published_precision():
    cells = run_example(response_id="supplier-contract").cells_frame()
    got = {(r.table, r.row, r.column): r.value for r in cells.itertuples(index=False)}
    rows = published()
    assert len(rows) >= 30
    for row in rows:
        key = (row["table"], row["row"], row["column"])
        assert key in got, f"no cell {key}"
        decimals = max(0, -Decimal(row["value"]).as_tuple().exponent)
        assert round(got[key], decimals) == pytest.approx(float(row["value"]), abs=1e-12), key


def test_worked_example_exact_fractions():
    result = run_example()
    cells = result.cells_frame()
    value = {(r.table, r.row, r.column): r.value for r in cells.itertuples(index=False)}
    for k, numerator in {"F": 3, "C": 3, "U": 1.5, "O": 1.5, "P": 1.2, "S": 0.75, "H": 0}.items():
        assert value["hri_example_dimensions", k, "score"] == pytest.approx(
            numerator / 11, abs=1e-15
        )
    assert value["hri_example_summary", "supplier-contract", "hri_add"] == pytest.approx(
        1.92 / 11, abs=1e-15
    )
    assert value["hri_example_summary", "supplier-contract", "hri_star"] == 0.70
    assert result.tags == {"hri_band": "High", "hri_action": "review"}
    ex = result.extra["hri_example_explanations.json"]["supplier-contract"]
    assert ex["binding_floor"]["claim_id"] == "3"
    assert ex["binding_floor"]["rule"] == "contradicted_high"
    assert ex["driving_claims"][0]["claim_id"] == "3"
    json.dumps(result.extra)  # JSON-serialisable
    assert result.scores["band"].tolist() == ["High"]


def test_ahp_weights_reproduce_the_same_example():
    a = run_example(hri={**hri_dict(), **hri_dict("ahp")}).cells_frame()
    b = run_example().cells_frame()
    assert a["value"].to_numpy() == pytest.approx(b["value"].to_numpy(), abs=1e-12)


def test_constants_come_from_the_config():
    doc = hri_dict()
    doc["floors"][0]["floor"] = 0.8
    result = run_example(hri=doc)
    assert result.tags["hri_band"] == "Critical"


def test_unknown_response_id_and_ambiguous_file_are_config_errors(tmp_path):
    with pytest.raises(ConfigError, match="not in the claims file"):
        run_example(response_id="nope")
    two = {
        "responses": [
            {"response_id": f"r{i}", "claims": [{"claim_id": "a", "labels": ["SUPPORTED"]}]}
            for i in range(2)
        ]
    }
    path = tmp_path / "two.yaml"
    path.write_text(yaml.safe_dump(two))
    with pytest.raises(ConfigError, match="say which one"):
        run_example(data=load_hri_claims(str(path)))
    result = run_example(data=load_hri_claims(str(path)), response_id="r1")
    assert len(result.scores) == 2


def compose_experiment(tmp_path: Path, experiment: str, overrides: list[str] = ()):
    """Compose an HRI experiment from this project's YAML files under a minimal root config.

    The root config stands in for conf/config.yaml so the test checks the HRI files alone;
    its bootstrap group is typed (BootstrapConf) as conf/bootstrap/ is.
    """
    conf = tmp_path / "conf"
    (conf / "dataset").mkdir(parents=True)
    (conf / "experiment").mkdir()
    shutil.copytree(CONF / "hri", conf / "hri")
    for name in ("factbench", "hri_claims"):
        shutil.copy(CONF / "dataset" / f"{name}.yaml", conf / "dataset")
    for name in ("hri_example", "hri_calibration"):
        shutil.copy(CONF / "experiment" / f"{name}.yaml", conf / "experiment")
    (conf / "bootstrap").mkdir()
    (conf / "bootstrap" / "test.yaml").write_text(
        "defaults:\n  - runner.evaluation.config.BootstrapConf\n  - _self_\nn_resamples: 40\n"
    )
    (conf / "config.yaml").write_text(
        "defaults:\n  - _self_\n  - dataset: hri_claims\n  - bootstrap: test\n"
        "  - experiment: null\nseed: 13\n"
    )
    register_configs()  # every schema: hri, dataset (hri_claims, factbench), bootstrap
    GlobalHydra.instance().clear()
    with initialize_config_dir(config_dir=str(conf), version_base="1.3"):
        return compose(config_name="config", overrides=[f"experiment={experiment}", *overrides])


def test_experiment_config_composes_and_runs(tmp_path):
    cfg = compose_experiment(tmp_path, "hri_example")
    assert cfg.experiment == "hri_example"
    assert cfg.study._target_ == "runner.studies.hri_example.HriExample"
    assert cfg.dataset._target_ == "runner.data.hri_claims.load_hri_claims"
    data = instantiate(cfg.dataset, _convert_="all")
    study = check_config(cfg)  # the study as the pipeline builds it, `hri` group validated
    assert isinstance(study, hri_example.HriExample) and isinstance(study.hri, HRIConfig)
    assert study.params.response_id == "supplier-contract"
    cells = study.run(data, CONTEXT).cells_frame()
    hri_star = cells[(cells["table"] == "hri_example_summary") & (cells["column"] == "hri_star")]
    assert hri_star["value"].tolist() == [0.70]


def test_ahp_group_option_composes(tmp_path):
    cfg = compose_experiment(tmp_path, "hri_example", ["hri=ahp"])
    assert cfg.hri.weights_source == "ahp"
    data = instantiate(cfg.dataset, _convert_="all")
    result = check_config(cfg).run(data, CONTEXT)
    assert result.extra["hri_example_config.json"]["weights_origin"] == "ahp"
    assert result.tags["hri_band"] == "High"


def test_an_experiment_without_the_hri_group_fails_before_any_data_is_read():
    with pytest.raises(ConfigError, match="/hri: default"):
        hri_example.HriExample(hri=None)
