"""Registered routing models: parse a ``models:/`` URI, load a version with its metadata.

Why here: `route`, `audit`, the route engines (one load per Ray worker) and the trace
scorers all need the same thing, a registered gate at a fixed version with the contract it
carries. Writing to the registry is not done here: a study that leaves a model returns a
`runner.results.ModelSpec` and `runner.tracking.hand_over` logs and registers it.

Every function takes the tracking store as a plain URI, never a config: the pipeline
resolves it once (``RunContext.tracking_uri``) and a routing study loads the model it
names from there with `load_routed_model`.
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from runner.errors import ConfigError

_URI = re.compile(r"^models:/(?P<name>[^/@]+)(?:@(?P<alias>[^/]+)|/(?P<version>\d+))$")


@dataclass
class RoutedModel:
    """A loaded registered model and where it came from."""

    pyfunc: Any
    metadata: dict[str, Any]
    name: str
    version: str
    run_id: str | None
    uri: str

    @property
    def routing(self) -> Any:
        """The `RoutingModel` behind the pyfunc (thresholds, gate)."""
        return self.pyfunc.unwrap_python_model()


def _prepare(tracking_uri: str | None) -> str:
    """The tracking URI, with the folder of a SQLite database created (MLflow will not)."""
    if not tracking_uri:
        raise ConfigError(
            "no tracking URI to find the model registry in: set tracking.uri (or run with "
            "the default tracking=sqlite, which keeps it under paths.artifacts_dir)"
        )
    if tracking_uri.startswith("sqlite:///"):
        Path(tracking_uri.removeprefix("sqlite:///")).parent.mkdir(parents=True, exist_ok=True)
    return tracking_uri


def parse_model_uri(uri: str) -> tuple[str, str | None, str | None]:
    """(name, alias, version) of ``models:/<name>@<alias>`` or ``models:/<name>/<version>``."""
    match = _URI.match(uri or "")
    if not match:
        raise ConfigError(
            f"routing.model_uri={uri!r}: expected models:/<name>@<alias> or "
            "models:/<name>/<version>"
        )
    return match["name"], match["alias"], match["version"]


def load_routed_model(tracking_uri: str | None, uri: str) -> RoutedModel:
    """Load registered model `uri` from the store at `tracking_uri`, with version and run.

    Parameters
    ----------
    tracking_uri : str
        The tracking (and registry) URI, e.g. ``RunContext.tracking_uri``.
    uri : str
        ``models:/<name>@<alias>`` or ``models:/<name>/<version>``.
    """
    import mlflow
    from mlflow.exceptions import MlflowException

    name, alias, number = parse_model_uri(uri)
    tracking = _prepare(tracking_uri)
    mlflow.set_tracking_uri(tracking)
    mlflow.set_registry_uri(tracking)
    client = mlflow.MlflowClient(tracking_uri=tracking, registry_uri=tracking)
    try:
        mv = (
            client.get_model_version_by_alias(name, alias)
            if alias
            else client.get_model_version(name, number)
        )
    except MlflowException as exc:
        raise ConfigError(
            f"routing.model_uri={uri!r}: not in the registry at {tracking} ({exc})"
        ) from None
    pyfunc = mlflow.pyfunc.load_model(f"models:/{name}/{mv.version}")
    return RoutedModel(
        pyfunc=pyfunc,
        metadata=dict(pyfunc.metadata.metadata or {}),
        name=name,
        version=str(mv.version),
        run_id=mv.run_id,
        uri=uri,
    )
