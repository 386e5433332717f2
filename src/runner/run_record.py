"""A run's configuration as plain values: made once at the entry point, read below it.

Why: tracking and reporting record the configuration (MLflow params, ``config.yaml``, the
manifest) and open the run's store, but none of them should read a Hydra config. The
pipeline turns the composed config into a `RunRecord` once (`runner.config.run_record`) and
hands that down, so everything below the pipeline takes plain, typed Python values.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any


@dataclass
class TrackingConf:
    """MLflow tracking: a SQLite backend under `artifacts/` unless `uri` says otherwise."""

    enabled: bool = True
    server: bool = False  # true (tracking=server): `uri` must be an http(s) tracking server
    uri: str | None = None
    artifact_root: str | None = None
    experiment_name: str | None = None
    run_name: str | None = None


@dataclass(frozen=True)
class RunRecord:
    """What a run records of its configuration, and the settings tracking needs.

    ``config`` is the resolved configuration as the manifest and MLflow record it (a part
    handed to the study by interpolation stays a reference: it is recorded at its own key);
    ``config_yaml`` is that same mapping as ``config.yaml`` holds it. ``tracking`` is the
    run's tracking settings as configured (the store not yet resolved) and
    ``artifacts_dir`` the folder a default SQLite store goes under.
    """

    experiment: str
    study: str
    config: dict[str, Any]
    config_yaml: str
    tracking: TrackingConf = field(default_factory=TrackingConf)
    artifacts_dir: str | None = None

    @property
    def seeds(self) -> dict[str, Any]:
        """Every ``seed`` / ``random_state`` value of the configuration, by dotted key."""
        found: dict[str, Any] = {}

        def walk(node: Any, prefix: str) -> None:
            if isinstance(node, dict):
                for key, value in node.items():
                    path = f"{prefix}.{key}" if prefix else str(key)
                    if key in ("seed", "random_state") and not isinstance(value, (dict, list)):
                        found[path] = value
                    walk(value, path)
            elif isinstance(node, list):
                for i, value in enumerate(node):
                    walk(value, f"{prefix}[{i}]")

        walk(self.config, "")
        return found
