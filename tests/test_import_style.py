"""How runner's own names are imported: one path per name, no cryptic module aliases.

Why: a name importable as both ``runner.gates.LogitGate`` and ``runner.gates.logit.LogitGate``
makes a reader (and a rename) chase two spellings; outside its package a public name is
imported from the package, whose ``__init__`` re-exports it. Inside a package, modules import
their siblings directly (the package's ``__init__`` imports them). Two-letter aliases
(``scopes as rs``) make call sites unreadable; only the field's conventional third-party
aliases are allowed.

The checks parse source with ``ast``; each runs in a process of its own (see
`tests.conftest.run_script` for why).
"""

from __future__ import annotations

import ast
import importlib
from pathlib import Path

import pytest
from tests.conftest import call_in_fresh_process

ROOT = Path(__file__).resolve().parents[1]
SRC = ROOT / "src" / "runner"
CONVENTIONAL = {
    "np": "numpy",
    "pd": "pandas",
    "plt": "matplotlib.pyplot",
    "pa": "pyarrow",
    "pq": "pyarrow.parquet",
}
PYFUNC_MODULES = ("runner.routing.model", "runner.verifiers.detector_model")
"""Modules that import MLflow at import time (the pyfunc classes): their package does not
re-export them, so their one import path is the module itself."""
PACKAGES = sorted(
    ".".join(p.parent.relative_to(SRC.parent).parts) for p in SRC.rglob("__init__.py")
)


def _files(*folders: str) -> list[Path]:
    return sorted(p for folder in folders for p in (ROOT / folder).rglob("*.py"))


def _package(module: str) -> str:
    """The package that holds `module` (`runner.gates.logit` -> `runner.gates`)."""
    return module if module in PACKAGES else module.rsplit(".", 1)[0]


def _own_package(path: Path) -> str | None:
    if SRC not in path.parents:
        return None
    parts = path.relative_to(SRC.parent).with_suffix("").parts
    return ".".join(parts[:-1])


def deep_imports(path: Path, root: Path = ROOT) -> list[str]:
    """``from runner.P.M import name`` lines of `path` where P is not the file's own package."""
    own = _own_package(path)
    found = []
    for node in ast.walk(ast.parse(path.read_text())):
        if not (isinstance(node, ast.ImportFrom) and node.module and node.level == 0):
            continue
        if not node.module.startswith("runner.") or node.module in PACKAGES:
            continue
        if node.module in PYFUNC_MODULES:
            continue
        package = _package(node.module)
        if package == "runner":  # a top-level module (runner.paths) is its own import path
            continue
        if own is not None and (own == package or own.startswith(package + ".")):
            continue
        for alias in node.names:
            if not alias.name.startswith("_"):
                found.append(f"{path.relative_to(root)}:{node.lineno} {node.module}.{alias.name}")
    return found


def deep_imports_in_tree() -> list[str]:
    """`deep_imports` of every file under src/ and scripts/."""
    return [line for path in _files("src", "scripts") for line in deep_imports(path)]


def deep_imports_of(path: str, root: str) -> list[str]:
    """`deep_imports` of one file, for a call in a fresh process (arguments as JSON)."""
    return deep_imports(Path(path), root=Path(root))


@pytest.mark.slow
def test_outside_its_package_a_public_name_is_imported_from_the_package():
    found = call_in_fresh_process(deep_imports_in_tree)
    assert not found, "import these from their package:\n" + "\n".join(found)


@pytest.mark.parametrize("module", PYFUNC_MODULES)
def test_a_pyfunc_module_is_not_re_exported_by_its_package(module):
    package = module.rsplit(".", 1)[0]
    init = SRC.parent.joinpath(*package.split("."), "__init__.py")
    imported = {
        node.module
        for node in ast.walk(ast.parse(init.read_text()))
        if isinstance(node, ast.ImportFrom)
    }
    assert module not in imported


@pytest.mark.parametrize("package", PACKAGES)
def test_every_name_a_package_exports_is_importable_from_it(package):
    module = importlib.import_module(package)
    missing = [name for name in getattr(module, "__all__", []) if not hasattr(module, name)]
    assert not missing


def short_aliases_in_src() -> list[str]:
    """``import x as y`` lines under src/ with a name of two letters or fewer that is not
    a conventional alias of its module."""
    found = []
    for path in _files("src"):
        for node in ast.walk(ast.parse(path.read_text())):
            if isinstance(node, ast.Import | ast.ImportFrom):
                for alias in node.names:
                    short = alias.asname
                    if short and len(short) <= 2 and CONVENTIONAL.get(short) != _full(node, alias):
                        found.append(f"{path.relative_to(ROOT)}:{node.lineno} as {short}")
    return found


@pytest.mark.slow
def test_no_two_letter_module_aliases_in_src():
    found = call_in_fresh_process(short_aliases_in_src)
    assert not found, "\n".join(found)


def _full(node: ast.Import | ast.ImportFrom, alias: ast.alias) -> str:
    return f"{node.module}.{alias.name}" if isinstance(node, ast.ImportFrom) else alias.name


@pytest.mark.slow
def test_the_check_finds_a_deep_import(tmp_path):
    script = tmp_path / "x.py"
    script.write_text(
        "from runner.gates.logit import LogitGate\nfrom runner.gates import TfidfGate\n"
    )
    found = call_in_fresh_process(deep_imports_of, str(script), str(tmp_path))
    assert found == ["x.py:1 runner.gates.logit.LogitGate"]
