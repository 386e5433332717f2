"""Fail on public names of the package that nothing uses (`make lint`).

Why: code that no path reaches still has to be read, kept passing and kept true, and a
function only tests call tests nothing a user runs. This check keeps such code from
returning once removed.

What it checks: every public (no leading underscore) top-level function, class and
assigned constant of a module under ``src/runner``. Such a name is *used* when

- code in ``src/`` or ``scripts/`` refers to it by name (a name, an attribute, an
  import), outside the statement that defines it: another module, or its own module
  (a helper used where it is defined is not dead; whether it should be private is a
  naming question this check does not ask);
- a dotted string names it, ``runner.<module>.<name>``: a Hydra ``_target_`` in
  ``conf/`` or a schema default in ``src/``, an importlib lookup, an entry point in
  ``pyproject.toml``;
- a module lists it in ``__all__`` (an export of intent);
- it is a class registered by its own statement, ``class X(Base, name=...)`` (a study:
  `runner.studies.contract.Study` registers every subclass; found by name from config);
- or `ALLOWED` names it, with the reason.

Tests do not count as users. Names are matched by spelling, not by resolving imports: a
name used elsewhere for something else can hide a dead one, never the reverse, so every
finding is real.

    python scripts/dead_code.py               # this project
    python scripts/dead_code.py --root DIR    # a project with src/<package>, scripts/, conf/

Prints ``file:line: message`` for each unused name (and each `ALLOWED` entry that is
used again or gone) and exits 1 if any.
"""

from __future__ import annotations

import argparse
import ast
import re
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]

ALLOWED: dict[str, str] = {
    "runner.model_files.ModelFiles": (
        "the documented protocol of parts that load weights; a Protocol is met structurally, "
        "so implementers never name it"
    ),
}
"""``<module>.<name>`` -> why it stays although nothing in src/ or scripts/ uses it."""

DOTTED = re.compile(r"\b[A-Za-z_]\w*(?:[.:][A-Za-z_]\w*)+")
"""A dotted path in a string, ``runner.data.wice.load_wice`` or ``runner.data.config:WiceConf``."""


def _last(dotted: str) -> str:
    """The name a dotted path ends with."""
    return re.split(r"[.:]", dotted)[-1]


def _defined(node: ast.stmt) -> list[str]:
    """Names a top-level statement defines."""
    if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef)):
        return [node.name]
    if isinstance(node, ast.Assign):
        return [t.id for t in node.targets if isinstance(t, ast.Name)]
    if isinstance(node, ast.AnnAssign) and isinstance(node.target, ast.Name):
        return [node.target.id]
    return []


def _docstrings(tree: ast.AST) -> set[int]:
    """ids of docstring nodes (module, class, function) and of bare string statements."""
    out = set()
    for node in ast.walk(tree):
        body = getattr(node, "body", None)
        if isinstance(body, list):
            for stmt in body:
                if isinstance(stmt, ast.Expr) and isinstance(stmt.value, ast.Constant):
                    out.add(id(stmt.value))
    return out


def _references(node: ast.AST, docstrings: set[int]) -> set[str]:
    """Names a piece of code refers to: names, attributes, imported names, and the last
    part of dotted strings (``"runner.data.wice.load_wice"`` refers to ``load_wice``)."""
    out: set[str] = set()
    for sub in ast.walk(node):
        if isinstance(sub, ast.Name):
            out.add(sub.id)
        elif isinstance(sub, ast.Attribute):
            out.add(sub.attr)
        elif isinstance(sub, ast.alias):
            out.add(sub.name.rpartition(".")[2])
        elif (
            isinstance(sub, ast.Constant)
            and isinstance(sub.value, str)
            and id(sub) not in docstrings
        ):
            out |= {_last(m) for m in DOTTED.findall(sub.value)}
    return out


def _exported(tree: ast.Module) -> set[str]:
    """Names in the module's ``__all__``."""
    for node in tree.body:
        if isinstance(node, ast.Assign) and any(
            isinstance(t, ast.Name) and t.id == "__all__" for t in node.targets
        ):
            return {
                e.value
                for e in ast.walk(node.value)
                if isinstance(e, ast.Constant) and isinstance(e.value, str)
            }
    return set()


def unused(
    root: Path, package: str = "runner", allowed: dict[str, str] | None = None
) -> list[tuple[Path, int, str]]:
    """(file, line, message) for every public top-level name of `package` nothing uses, and
    for every `allowed` entry that is used or gone (default: `ALLOWED`)."""
    allowed = ALLOWED if allowed is None else allowed
    src = root / "src"
    used: set[str] = set()
    parsed: dict[str, tuple[Path, ast.Module]] = {}
    for file in sorted((src / package).rglob("*.py")):
        parts = file.relative_to(src).with_suffix("").parts
        module = ".".join(parts[:-1] if parts[-1] == "__init__" else parts)
        parsed[module] = (file, ast.parse(file.read_text(encoding="utf-8"), str(file)))
    for file in sorted((root / "scripts").glob("*.py")):
        if file.resolve() == Path(__file__).resolve():
            continue  # ALLOWED names its entries: that is no use
        tree = ast.parse(file.read_text(encoding="utf-8"), str(file))
        used |= _references(tree, _docstrings(tree))
    for file in [*sorted((root / "conf").rglob("*.yaml")), root / "pyproject.toml"]:
        if file.is_file():
            used |= {_last(m) for m in DOTTED.findall(file.read_text(encoding="utf-8"))}
    # Per module: the names each top-level statement defines and refers to, to tell a use
    # in the module from the defining statement itself.
    own: dict[str, list[tuple[list[str], set[str]]]] = {}
    for module, (_, tree) in parsed.items():
        docstrings = _docstrings(tree)
        own[module] = [(_defined(node), _references(node, docstrings)) for node in tree.body]
        used |= _exported(tree)
        for node in tree.body:
            if isinstance(node, ast.ClassDef) and node.keywords:
                used.add(node.name)  # registered by its own class statement
    found: list[tuple[Path, int, str]] = []
    defined: set[str] = set()
    for module, (file, tree) in parsed.items():
        elsewhere: set[str] = set()
        for other, statements in own.items():
            if other != module:
                for _, refs in statements:
                    elsewhere |= refs
        for node in tree.body:
            for name in _defined(node):
                if name.startswith("_"):
                    continue
                in_module = any(name in refs for names, refs in own[module] if name not in names)
                is_used = name in used or name in elsewhere or in_module
                key = f"{module}.{name}"
                defined.add(key)
                if key in allowed and is_used:
                    found.append((file, node.lineno, f"{key} is used: remove it from ALLOWED"))
                elif key not in allowed and not is_used:
                    found.append((file, node.lineno, f"{key} is never used (tests do not count)"))
    for key in sorted(set(allowed) - defined):
        found.append((Path(__file__), 0, f"{key} is in ALLOWED but not defined: remove it"))
    return found


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--root", default=str(ROOT), help="project root (src/, scripts/, conf/)")
    parser.add_argument("--package", default="runner")
    args = parser.parse_args(argv)
    root = Path(args.root).resolve()
    allowed = ALLOWED if root == ROOT else {}
    found = unused(root, args.package, allowed)
    for file, line, message in found:
        where = file.relative_to(root) if file.is_relative_to(root) else file
        print(f"{where}:{line}: {message}")
    print(f"{len(found)} problems ({len(allowed)} unused names allowed, each with its reason)")
    return 1 if found else 0


if __name__ == "__main__":
    sys.exit(main())
