"""Package names whose module is imported on first use, not with the package.

Why: a package re-exports its public names (one import path per name), but a few modules
import MLflow at import time (an MLflow pyfunc class must subclass `mlflow.pyfunc.PythonModel`)
and MLflow takes seconds to import. Importing such a package for an unrelated name, as
config registration does for every part class, must not pay for it. A package lists those
names in a mapping and delegates its module-level ``__getattr__`` (PEP 562) here.
"""

from __future__ import annotations

import importlib
from collections.abc import Mapping
from typing import Any


def on_first_use(package: str, modules: Mapping[str, str], name: str) -> Any:
    """`name` from the module `modules` maps it to (imported now); AttributeError otherwise.

    Parameters
    ----------
    package : str
        The package's ``__name__`` (for the error message).
    modules : mapping of str -> str
        Name -> the module that defines it.
    name : str
        The attribute asked for.
    """
    if name not in modules:
        raise AttributeError(f"module {package!r} has no attribute {name!r}")
    return getattr(importlib.import_module(modules[name]), name)
