"""MLflow tracking: one run per experiment run, everything browsable in the UI.

Logged: the flattened config as params, every table cell as a metric
(`<table>/<row>/<column>`, with `.../ci_low` and `.../ci_high` where there is an
interval), and the output folder (scores, tables, figures, runtime, manifest) as
artifacts. The default backend is SQLite under `artifacts/` with an explicit artifact
root: MLflow 3's file store refuses to run without an opt-in flag, and SQLite gives the
UI search and comparison. With `tracking=server` an MLflow tracking server (http/https)
takes everything, artifacts included: the experiment gets the server's default location
(proxied `mlflow-artifacts:/`), so a job on another machine needs no shared disk.
"""

from __future__ import annotations

import logging
import re
from pathlib import Path
from typing import Any

from omegaconf import DictConfig, OmegaConf

from runner.errors import ConfigError
from runner.results import StudyResult

log = logging.getLogger(__name__)

_UNSAFE = re.compile(r"[^A-Za-z0-9_\-. /:]")
MAX_PARAM_VALUE = 6000
BATCH = 900


def metric_key(*parts: str) -> str:
    """An MLflow-safe metric name (alphanumerics, `_-. /:`) built from table coordinates."""
    return "/".join(_UNSAFE.sub("_", p) for p in parts)


def flatten(node: Any, prefix: str = "") -> dict[str, str]:
    """Flatten a nested config into dotted keys with string values."""
    out: dict[str, str] = {}
    if isinstance(node, dict):
        for key, value in node.items():
            out.update(flatten(value, f"{prefix}.{key}" if prefix else str(key)))
    elif isinstance(node, list) and any(isinstance(v, (dict, list)) for v in node):
        for i, value in enumerate(node):
            out.update(flatten(value, f"{prefix}.{i}"))
    else:
        out[prefix] = str(node)[:MAX_PARAM_VALUE]
    return out


def cell_metrics(result: StudyResult) -> dict[str, float]:
    """Every available cell value (and CI bound) as a metric; n/a cells are not logged."""
    metrics: dict[str, float] = {}
    for c in result.cells:
        if c.value is None:
            continue
        key = metric_key(c.table, c.row, c.column)
        metrics[key] = c.value
        if c.ci_low is not None and c.ci_high is not None:
            metrics[key + "/ci_low"] = c.ci_low
            metrics[key + "/ci_high"] = c.ci_high
    return metrics


def is_server(uri: str | None) -> bool:
    """True for a tracking server's URI (MLflow's REST API over http or https)."""
    return bool(uri) and str(uri).startswith(("http://", "https://"))


def resolve_uri(cfg: DictConfig) -> tuple[str, str | None]:
    """Tracking URI and artifact root, defaulting to SQLite + a folder under artifacts/.

    A server keeps artifacts where it decides (root None) unless `artifact_root` is set.
    """
    artifacts = Path(cfg.paths.artifacts_dir)
    uri = cfg.tracking.uri or f"sqlite:///{artifacts / 'mlflow.db'}"
    if is_server(uri):
        return uri, cfg.tracking.artifact_root
    root = cfg.tracking.artifact_root or str(artifacts / "mlruns")
    return uri, root


def check(cfg: DictConfig, timeout: float = 10.0) -> None:
    """Fail before any work when the configured tracking target cannot take a run.

    `tracking=server` without an http(s) URI would otherwise fall back to local SQLite,
    and an unreachable server would only fail after the study has run.
    """
    if not cfg.tracking.enabled:
        return
    uri = cfg.tracking.uri
    if cfg.tracking.get("server") and not is_server(uri):
        raise ConfigError(
            f"tracking=server needs tracking.uri=http://HOST:PORT (or MLFLOW_TRACKING_URI); "
            f"got {uri!r}"
        )
    if is_server(uri):
        import urllib.request

        health = f"{str(uri).rstrip('/')}/health"
        try:
            with urllib.request.urlopen(health, timeout=timeout) as resp:
                ok = resp.status == 200
        except OSError as exc:
            raise ConfigError(f"tracking.uri={uri}: no MLflow server answers ({exc})") from exc
        if not ok:
            raise ConfigError(f"tracking.uri={uri}: {health} answered {resp.status}, not 200")


def _experiment_id(client: Any, name: str, root: str | None) -> str:
    """The experiment's id, creating it if needed; parallel sweep jobs may race to create it."""
    from mlflow.exceptions import MlflowException

    experiment = client.get_experiment_by_name(name)
    if experiment is not None:
        return experiment.experiment_id
    kwargs = {}
    if root is not None and "://" in root:
        kwargs["artifact_location"] = root
    elif root is not None:
        Path(root).mkdir(parents=True, exist_ok=True)
        kwargs["artifact_location"] = Path(root).as_uri()
    try:
        return client.create_experiment(name, **kwargs)
    except MlflowException as exc:
        if exc.error_code != "RESOURCE_ALREADY_EXISTS":
            raise
        experiment = client.get_experiment_by_name(name)  # another job created it first
        if experiment is None:
            raise
        return experiment.experiment_id


def log_run(
    cfg: DictConfig, result: StudyResult, output_dir: Path, manifest: dict[str, Any]
) -> str | None:
    """Log one finished run to MLflow; returns the run id (None with tracking off)."""
    if not cfg.tracking.enabled:
        log.info("tracking disabled: outputs are in %s only", output_dir)
        return None
    import mlflow
    from mlflow.entities import Metric, Param, RunTag

    uri, root = resolve_uri(cfg)
    if uri.startswith("sqlite:///"):
        Path(uri.removeprefix("sqlite:///")).parent.mkdir(parents=True, exist_ok=True)
    client = mlflow.MlflowClient(tracking_uri=uri)
    name = cfg.tracking.experiment_name or cfg.experiment
    experiment_id = _experiment_id(client, name, root)
    tags = {
        "study": cfg.study.name,
        "git_commit": str(manifest["git"]["commit"]),
        "data_fingerprint": str((manifest.get("dataset") or {}).get("fingerprint")),
        **{k: str(v) for k, v in result.tags.items()},
    }
    run = client.create_run(
        experiment_id, run_name=cfg.tracking.run_name or cfg.experiment, tags=tags
    )
    run_id = run.info.run_id
    try:
        params = flatten(OmegaConf.to_container(cfg, resolve=True))
        metrics = cell_metrics(result)
        for key, value in _numeric_runtime(result.runtime).items():
            metrics[metric_key("runtime", key)] = value
        param_items = [Param(_UNSAFE.sub("_", k), v) for k, v in sorted(params.items())]
        metric_items = [Metric(k, v, 0, 0) for k, v in metrics.items()]
        for i in range(0, len(param_items), 100):
            client.log_batch(run_id, params=param_items[i : i + 100])
        for i in range(0, len(metric_items), BATCH):
            client.log_batch(run_id, metrics=metric_items[i : i + BATCH])
        client.log_batch(run_id, tags=[RunTag("output_dir", str(output_dir))])
        client.log_artifacts(run_id, str(output_dir))
    except Exception:
        client.set_terminated(run_id, status="FAILED")
        raise
    client.set_terminated(run_id, status="FINISHED")
    log.info("MLflow run %s in experiment %r at %s", run_id, name, uri)
    return run_id


def _numeric_runtime(runtime: dict[str, Any], prefix: str = "") -> dict[str, float]:
    out: dict[str, float] = {}
    for key, value in runtime.items():
        path = f"{prefix}/{key}" if prefix else str(key)
        if isinstance(value, dict):
            out.update(_numeric_runtime(value, path))
        elif isinstance(value, (int, float)) and not isinstance(value, bool):
            out[path] = float(value)
    return out
