"""MLflow model logging, registration and loading for the routing contract.

Why here and not in a study: studies never talk to MLflow. `fit_gate` returns a
`ModelSpec` in its result; the pipeline calls `log_result_model` once the run is logged,
which logs the pyfunc model into that same run, registers it and points the alias
(``champion`` by default) at the new version. `route` and `audit` resolve a
``models:/<name>@<alias>`` URI through `load_routed_model`, against the same tracking
store the runs use (SQLite under ``artifacts/`` by default).

Every function here takes the tracking store as a plain URI, never a config: the pipeline
resolves it once (`runner.tracking.resolve_uri`, handed to studies as
``Inputs.tracking.uri``), so a study can load a model without seeing the config.
"""

from __future__ import annotations

import json
import logging
import re
from dataclasses import dataclass, field
from importlib.metadata import version
from pathlib import Path
from typing import Any

import pandas as pd

from runner.errors import ConfigError

log = logging.getLogger(__name__)

REQUIREMENTS = ("mlflow", "scikit-learn", "numpy", "pandas", "scipy", "pyarrow")
_URI = re.compile(r"^models:/(?P<name>[^/@]+)(?:@(?P<alias>[^/]+)|/(?P<version>\d+))$")


@dataclass
class ModelSpec:
    """What a study asks the tracking layer to log and register with its run."""

    python_model: Any
    name: str
    alias: str
    metadata: dict[str, Any]
    input_example: pd.DataFrame
    tags: dict[str, str] = field(default_factory=dict)
    artifacts: dict[str, str] | None = None  # name -> local path, shipped with the model
    signature: Any = None  # None: the routing model's signature


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


def _pins() -> list[str]:
    return [f"{name}=={version(name)}" for name in REQUIREMENTS]


def log_result_model(
    tracking_uri: str | None, result: Any, run_id: str | None, output_dir: Path
) -> dict:
    """Log, register and alias the result's `ModelSpec` in run `run_id`; {} when none.

    Writes ``registered_model.json`` (name, version, alias, URI, run id) into `output_dir`
    (the run folder, logged with the run when the pipeline finishes it). Called while the
    run is open; resuming it for `mlflow.pyfunc.log_model` leaves it for the pipeline to
    end.
    """
    spec: ModelSpec | None = getattr(result, "model", None)
    if spec is None:
        return {}
    if run_id is None:
        raise ConfigError("this experiment registers a model: it needs tracking (not tracking=off)")
    import mlflow

    from runner.routing.model import signature

    uri = _prepare(tracking_uri)
    mlflow.set_tracking_uri(uri)
    mlflow.set_registry_uri(uri)
    client = mlflow.MlflowClient(tracking_uri=uri, registry_uri=uri)
    with mlflow.start_run(run_id=run_id):
        info = mlflow.pyfunc.log_model(
            name="model",
            python_model=spec.python_model,
            signature=spec.signature if spec.signature is not None else signature(),
            input_example=spec.input_example,
            artifacts=spec.artifacts,
            metadata=spec.metadata,
            pip_requirements=_pins(),
            registered_model_name=spec.name,
        )
        model_version = str(info.registered_model_version)
        client.set_registered_model_alias(spec.name, spec.alias, model_version)
        for key, value in spec.tags.items():
            client.set_model_version_tag(spec.name, model_version, key, str(value))
        record = {
            "name": spec.name,
            "version": model_version,
            "alias": spec.alias,
            "uri": f"models:/{spec.name}@{spec.alias}",
            "version_uri": f"models:/{spec.name}/{model_version}",
            "run_id": run_id,
            "tracking_uri": uri,
        }
        path = Path(output_dir) / "registered_model.json"
        path.write_text(json.dumps(record, indent=2, sort_keys=True) + "\n")
    log.info("registered %s version %s as @%s", spec.name, model_version, spec.alias)
    return record


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
        The tracking (and registry) URI, e.g. ``Inputs.tracking.uri``.
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


def link_run_to_model(tracking_uri: str | None, result: Any, run_id: str | None) -> None:
    """Tag the model version a routing/audit run used with that run's id."""
    link = getattr(result, "tags", {}) or {}
    name, number, key = link.get("model_name"), link.get("model_version"), link.get("model_link")
    if run_id is None or not (name and number and key):
        return
    import mlflow

    uri = _prepare(tracking_uri)
    client = mlflow.MlflowClient(tracking_uri=uri, registry_uri=uri)
    client.set_model_version_tag(name, number, key, run_id)
