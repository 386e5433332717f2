"""The architecture is enforced: `make lint` runs the import contracts of pyproject.toml.

docs/architecture.md draws the layers; these tests prove the contracts are live: the real tree
keeps them, and a deliberate back-import (a loader reaching up into a study, a study importing
OmegaConf) in a copy of the tree breaks them, naming the offending import.
"""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
from pathlib import Path

import pytest
from tests.conftest import run

ROOT = Path(__file__).resolve().parents[1]
LINT = Path(sys.executable).with_name("lint-imports")


def lint(tree: Path) -> subprocess.CompletedProcess:
    """Run lint-imports on the package under `tree/src` with `tree/pyproject.toml`."""
    env = {**os.environ, "PYTHONPATH": str(tree / "src")}
    return run(
        [str(LINT), "--no-cache", str(tree / "pyproject.toml")], env=env, cwd=tree, timeout=120
    )


@pytest.fixture
def tree_copy(tmp_path: Path) -> Path:
    """A scratch copy of src/runner and pyproject.toml to break on purpose."""
    shutil.copytree(ROOT / "src" / "runner", tmp_path / "src" / "runner")
    shutil.copy(ROOT / "pyproject.toml", tmp_path / "pyproject.toml")
    return tmp_path


def add_import(module: Path, line: str) -> None:
    """Insert an import right after the module's docstring."""
    text = module.read_text()
    end = text.index('"""', 3) + 3
    module.write_text(f"{text[:end]}\n{line}  # noqa\n{text[end:]}")


@pytest.mark.slow
def test_the_real_tree_keeps_every_import_contract():
    result = lint(ROOT)
    assert result.returncode == 0, result.stdout + result.stderr
    assert "BROKEN" not in result.stdout


@pytest.mark.slow
def test_a_loader_importing_a_study_breaks_the_layers(tree_copy):
    add_import(tree_copy / "src/runner/data/base.py", "import runner.studies.contract")
    result = lint(tree_copy)
    assert result.returncode != 0
    assert "runner.data.base -> runner.studies.contract" in result.stdout


@pytest.mark.slow
def test_a_part_importing_another_part_breaks_their_independence(tree_copy):
    add_import(tree_copy / "src/runner/gates/base.py", "import runner.verifiers.base")
    result = lint(tree_copy)
    assert result.returncode != 0
    assert "runner.gates.base -> runner.verifiers.base" in result.stdout


@pytest.mark.slow
def test_a_study_importing_omegaconf_breaks_the_recipe_rule(tree_copy):
    add_import(tree_copy / "src/runner/studies/rq1_cheap_signals.py", "import omegaconf")
    result = lint(tree_copy)
    assert result.returncode != 0
    assert "runner.studies.rq1_cheap_signals -> omegaconf" in result.stdout


def test_every_study_module_stays_under_300_lines():
    """docs/architecture.md: a study only orchestrates; machinery goes in its room."""
    long = {
        f.name: n
        for f in (ROOT / "src/runner/studies").glob("*.py")
        if (n := len(f.read_text().splitlines())) >= 300
    }
    assert long == {}
