"""Fail on an import cycle among the modules of a package (`make lint`).

Why: the import contracts (`lint-imports`, pyproject.toml) keep arrows pointing down
between packages, but not between two modules of one package, nor a module that imports
its own package. A cycle makes import order matter and hides which module depends on
which; this check keeps them from returning.

Every import counts, at module level or inside a function (a lazy import is still a
dependency), except under ``if TYPE_CHECKING:``. ``from pkg import name`` is an edge to
``pkg.name`` when that is a module, else to ``pkg`` itself: so a submodule that imports its
own package (whose ``__init__`` imports the submodule) is a cycle. Python running a
package's ``__init__`` before its submodules is no import statement, and no edge.

    python scripts/check_imports.py                # src/runner
    python scripts/check_imports.py SRC_DIR PACKAGE

Prints each cycle (its modules, and one import line per edge) and exits 1 if any.
"""

from __future__ import annotations

import argparse
import ast
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]


def module_files(src: Path, package: str) -> dict[str, Path]:
    """Dotted module name -> file, for every ``.py`` file of `package` under `src`."""
    out = {}
    for file in sorted((src / package).rglob("*.py")):
        parts = file.relative_to(src).with_suffix("").parts
        out[".".join(parts[:-1] if parts[-1] == "__init__" else parts)] = file
    return out


def _type_checking_nodes(tree: ast.Module) -> set[int]:
    skipped: set[int] = set()
    for node in ast.walk(tree):
        if isinstance(node, ast.If) and "TYPE_CHECKING" in ast.unparse(node.test):
            skipped |= {id(x) for stmt in node.body for x in ast.walk(stmt)}
    return skipped


def _targets(module: str, is_package: bool, node: ast.Import | ast.ImportFrom) -> list[str]:
    """The dotted names an import statement loads: a submodule where one is named, else the
    module the names come from."""
    if isinstance(node, ast.Import):
        return [alias.name for alias in node.names]
    if node.level:
        parts = module.split(".") if is_package else module.split(".")[:-1]
        parts = parts[: len(parts) - (node.level - 1)]
        base = ".".join([*parts, *([node.module] if node.module else [])])
    else:
        base = node.module or ""
    return [f"{base}.{alias.name}" for alias in node.names]


def import_graph(modules: dict[str, Path]) -> dict[str, dict[str, int]]:
    """module -> {imported module of the same package: line of the first such import}."""
    edges: dict[str, dict[str, int]] = {m: {} for m in modules}
    for module, file in modules.items():
        tree = ast.parse(file.read_text(encoding="utf-8"), str(file))
        skipped = _type_checking_nodes(tree)
        for node in ast.walk(tree):
            if id(node) in skipped or not isinstance(node, (ast.Import, ast.ImportFrom)):
                continue
            for target in _targets(module, file.name == "__init__.py", node):
                while target and target not in modules:
                    target = target.rpartition(".")[0]
                if target and target != module:
                    edges[module].setdefault(target, node.lineno)
    return edges


def cycles(edges: dict[str, dict[str, int]]) -> list[list[str]]:
    """Strongly connected components of more than one module (Tarjan), each sorted."""
    index: dict[str, int] = {}
    low: dict[str, int] = {}
    stack: list[str] = []
    on_stack: set[str] = set()
    found: list[list[str]] = []

    def visit(v: str) -> None:
        index[v] = low[v] = len(index)
        stack.append(v)
        on_stack.add(v)
        for w in edges[v]:
            if w not in index:
                visit(w)
                low[v] = min(low[v], low[w])
            elif w in on_stack:
                low[v] = min(low[v], index[w])
        if low[v] == index[v]:
            component = []
            while True:
                w = stack.pop()
                on_stack.discard(w)
                component.append(w)
                if w == v:
                    break
            if len(component) > 1:
                found.append(sorted(component))

    sys.setrecursionlimit(max(10_000, sys.getrecursionlimit()))
    for v in edges:
        if v not in index:
            visit(v)
    return sorted(found)


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("src", nargs="?", default=str(ROOT / "src"))
    parser.add_argument("package", nargs="?", default="runner")
    args = parser.parse_args(argv)
    modules = module_files(Path(args.src), args.package)
    edges = import_graph(modules)
    found = cycles(edges)
    for component in found:
        print("import cycle: " + " <-> ".join(component))
        members = set(component)
        for module in component:
            for target, line in sorted(edges[module].items()):
                if target in members:
                    print(f"  {modules[module]}:{line}: {module} imports {target}")
    print(f"{len(found)} import cycles among {len(modules)} modules")
    return 1 if found else 0


if __name__ == "__main__":
    sys.exit(main())
