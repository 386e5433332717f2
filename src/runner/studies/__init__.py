"""One module per study: `Params` (typed parameters) and `run(cfg, data, params)`.

A study receives loaded data and its composed parts and returns a `StudyResult`; it never
reads files or talks to MLflow. Optional `figures(cells)` draws its figures from the
long-format cells alone, so `make tables` can redraw them without recomputing.
"""

from __future__ import annotations

import importlib
from types import ModuleType

from runner.errors import ConfigError


def load_study(name: str) -> ModuleType:
    """Import `runner.studies.<name>`, checking it has the study contract."""
    try:
        module = importlib.import_module(f"runner.studies.{name}")
    except ModuleNotFoundError as exc:
        if exc.name != f"runner.studies.{name}":
            raise
        raise ConfigError(
            f"study.name={name!r}: no module runner.studies.{name} "
            f"(available: {', '.join(available_studies())})"
        ) from exc
    for attr in ("Params", "run"):
        if not hasattr(module, attr):
            raise ConfigError(f"runner.studies.{name} has no {attr}: not a study module")
    return module


def available_studies() -> list[str]:
    """Names of the study modules shipped with the runner."""
    import pkgutil

    import runner.studies as pkg

    return sorted(m.name for m in pkgutil.iter_modules(pkg.__path__) if not m.name.startswith("_"))
