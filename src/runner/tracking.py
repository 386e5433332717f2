"""MLflow tracking: one run per experiment run, everything browsable in the UI.

The MLflow run is opened *before* the data load and the study (status RUNNING), so its
Duration is the run's and a study that fails ends it FAILED with the error (tag `error`,
artifact `error.txt`). Its name is the experiment plus the job's command-line overrides
(`rq1_cheap_signals seed=2`), so sweep jobs are told apart. The data set goes in with
`mlflow.log_input` (name, source file, digest = the data fingerprint), filling the UI's
Dataset column. At the end: the flattened config as params, every table cell as a
metric (`<table>/<row>/<column>`, with `.../ci_low` and `.../ci_high` where there is an
interval), and the run's own output folder (scores, tables, figures, runtime, manifest)
as artifacts; the `output_dir` tag names that folder, which no later run reuses. A run
inside a Slurm job is tagged with the job's ids (`slurm_job_id`, and for a job array
`slurm_array_job_id` and `slurm_array_task_id`) and node (`slurm_node`) from the start,
so a job that fails is found in `squeue`/`sacct` and its log by the run's tags.

The default backend is SQLite under `artifacts/` with an explicit artifact root: MLflow
3's file store refuses to run without an opt-in flag, and SQLite gives the UI search and
comparison. The database is created and migrated once, under an `fcntl` lock on
`<db>.lock` (parallel sweep jobs otherwise race in alembic's first migration), and writes
that meet "database is locked" are retried.

With `tracking=server` an MLflow tracking server (http/https) takes everything, artifacts
included: the experiment gets the server's default location (proxied
`mlflow-artifacts:/`), so a job on another machine needs no shared disk.

What a run leaves outside itself is typed on its `StudyResult` and handled here, once
the run id is known (`hand_over`): a model to log and register (`ModelSpec`), the
registered model version the run used (`ModelLink`: the run is tagged with the model,
the version with the run) and feedback to write onto traces (`RunFeedback`). The
pipeline resolves the store once (`resolve_uri`, kept in ``RunContext.tracking``) and hands
that URI to every step of the run. Nothing here reads the Hydra config: the run's
configuration arrives as a `runner.run_record.RunRecord`, plain values made once by the
pipeline.
"""

from __future__ import annotations

import contextlib
import fcntl
import json
import logging
import os
import re
import time
import traceback
import warnings
from collections.abc import Callable, Iterator, Mapping
from pathlib import Path
from typing import Any, TypeVar

import pandas as pd

from runner.errors import ConfigError
from runner.results import ModelLink, ModelSpec, StudyResult
from runner.run_record import RunRecord, TrackingConf

log = logging.getLogger(__name__)

_UNSAFE = re.compile(r"[^A-Za-z0-9_\-. /:]")
MAX_PARAM_VALUE = 6000
BATCH = 900
MAX_RUN_NAME = 250
DIGEST_CHARS = 32
"""MLflow's dataset digest column holds 36 characters; the full fingerprint is a tag."""
NAME_EXCLUDES = frozenset({"experiment", "progress"})
"""Override keys left out of run names (the experiment is the name's start already)."""
SLURM_TAGS = {
    "SLURM_JOB_ID": "slurm_job_id",
    "SLURM_ARRAY_JOB_ID": "slurm_array_job_id",
    "SLURM_ARRAY_TASK_ID": "slurm_array_task_id",
    "SLURMD_NODENAME": "slurm_node",
}
"""Run tags from a Slurm job's environment (variable -> tag); set only where Slurm set them."""
T = TypeVar("T")
KIND_TAG = "mlflow.experimentKind"
STUDY_KIND = "custom_model_development"
"""The UI's "model training" kind: the experiment opens on its runs."""
TRACES_KIND = "genai_development"
"""The UI's GenAI kind: the experiment opens on its traces."""
MODEL_REQUIREMENTS = ("mlflow", "scikit-learn", "numpy", "pandas", "scipy", "pyarrow")
"""Distributions pinned (at their installed versions) in a registered model's requirements."""


def metric_key(*parts: str) -> str:
    """An MLflow-safe metric name (alphanumerics, `_-. /:`) built from table coordinates."""
    return "/".join(_UNSAFE.sub("_", p) for p in parts)


def flat_params(node: Any, prefix: str = "") -> dict[str, str]:
    """Flatten a nested config into dotted keys with string values."""
    out: dict[str, str] = {}
    if isinstance(node, dict):
        for key, value in node.items():
            out.update(flat_params(value, f"{prefix}.{key}" if prefix else str(key)))
    elif isinstance(node, list) and any(isinstance(v, (dict, list)) for v in node):
        for i, value in enumerate(node):
            out.update(flat_params(value, f"{prefix}.{i}"))
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


def resolve_uri(conf: TrackingConf, artifacts_dir: str | Path) -> tuple[str, str | None]:
    """Tracking URI and artifact root, defaulting to SQLite + a folder under `artifacts_dir`.

    A server keeps artifacts where it decides (root None) unless `artifact_root` is set.
    """
    artifacts = Path(artifacts_dir)
    uri = conf.uri or f"sqlite:///{artifacts / 'mlflow.db'}"
    if is_server(uri):
        return uri, conf.artifact_root
    root = conf.artifact_root or str(artifacts / "mlruns")
    return uri, root


def record_store(record: RunRecord) -> tuple[str, str | None]:
    """The (tracking URI, artifact root) of `record`'s configuration (`resolve_uri`)."""
    if record.artifacts_dir is None:
        raise ValueError("the run record has no paths.artifacts_dir to put a default store under")
    return resolve_uri(record.tracking, record.artifacts_dir)


def check(conf: TrackingConf, timeout: float = 10.0) -> None:
    """Fail before any work when the configured tracking target cannot take a run.

    `tracking=server` without an http(s) URI would otherwise fall back to local SQLite,
    and an unreachable server would only fail after the study has run.
    """
    if not conf.enabled:
        return
    uri = conf.uri
    if conf.server and not is_server(uri):
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


BUSY = ("database is locked",)
"""What SQLite says while another writer holds the database."""
RACED = (*BUSY, "UniqueViolation", "UNIQUE constraint failed", "duplicate key value")
"""... and what a store says when a concurrent writer created the same row first (two sweep
jobs logging one data set at once to a server over PostgreSQL): a retry finds that row."""


def retry_locked(
    fn: Callable[..., T], *args: Any, attempts: int = 8, retry_on: tuple[str, ...] = BUSY,
    **kwargs: Any,
) -> T:  # fmt: skip
    """Call `fn`, retrying with backoff while the store answers one of `retry_on`."""
    delay = 0.25
    for attempt in range(1, attempts + 1):
        try:
            return fn(*args, **kwargs)
        except Exception as exc:
            if not any(text in str(exc) for text in retry_on) or attempt == attempts:
                raise
            log.warning("MLflow store busy (%s); retry %d/%d", exc, attempt, attempts - 1)
            time.sleep(delay)
            delay = min(delay * 2, 4.0)
    raise AssertionError("unreachable")


@contextlib.contextmanager
def store_lock(uri: str) -> Iterator[None]:
    """Exclusive lock beside a SQLite database (`<db>.lock`); a no-op for other stores."""
    if not uri.startswith("sqlite:///"):
        yield
        return
    db = Path(uri.removeprefix("sqlite:///"))
    db.parent.mkdir(parents=True, exist_ok=True)
    with open(db.with_name(db.name + ".lock"), "a") as handle:
        fcntl.flock(handle, fcntl.LOCK_EX)
        try:
            yield
        finally:
            fcntl.flock(handle, fcntl.LOCK_UN)


def prepare_experiment(record: RunRecord, store: TrackingConf | None = None) -> tuple[Any, str]:
    """Client and experiment id; creates (and migrates) the store and experiment once.

    `store` is the run's tracking settings with the URI and artifact root the pipeline
    resolved (default: `record_store(record)`). Under `store_lock`, so of many jobs starting
    at once exactly one creates the database and the experiment and the others find them.
    """
    import mlflow
    from mlflow.exceptions import MlflowException

    if store is not None and store.uri:
        uri, root = store.uri, store.artifact_root
    else:
        uri, root = record_store(record)
    name = record.tracking.experiment_name or record.experiment
    with store_lock(uri):
        client = mlflow.MlflowClient(tracking_uri=uri)
        experiment = retry_locked(client.get_experiment_by_name, name)
        if experiment is not None:
            mark_kind(client, experiment, STUDY_KIND)
            return client, experiment.experiment_id
        kwargs = {}  # a server without artifact_root keeps artifacts where it decides
        if root is not None and "://" in root:
            kwargs["artifact_location"] = root
        elif root is not None:
            Path(root).mkdir(parents=True, exist_ok=True)
            kwargs["artifact_location"] = Path(root).as_uri()
        kwargs["tags"] = {KIND_TAG: STUDY_KIND}
        try:
            return client, retry_locked(client.create_experiment, name, **kwargs)
        except MlflowException as exc:
            # the lock is SQLite's: jobs on a server may race to create the experiment
            if exc.error_code != "RESOURCE_ALREADY_EXISTS":
                raise
            experiment = retry_locked(client.get_experiment_by_name, name)
            if experiment is None:
                raise
            return client, experiment.experiment_id


def mark_kind(client: Any, experiment: Any, kind: str) -> None:
    """Tag an experiment's kind (`KIND_TAG`) unless it has one, so the UI opens on its work.

    MLflow 3's UI lands on a GenAI overview ("Traces 0") for an experiment without a kind;
    a study's experiment holds runs (`STUDY_KIND` opens on them), the experiment of a traced
    app holds traces (`TRACES_KIND`). A kind someone set is never overwritten.
    """
    if (experiment.tags or {}).get(KIND_TAG):
        return
    retry_locked(client.set_experiment_tag, experiment.experiment_id, KIND_TAG, kind)


def ui_path(experiment_id: str, kind: str = STUDY_KIND) -> str:
    """The UI route that opens an experiment on its work: runs for a study, else traces.

    MLflow 3.17's UI picks its view from a ``workflowType`` (URL parameter, else the
    browser's last choice, GenAI by default), so a study experiment's link names it.
    """
    if kind == TRACES_KIND:
        return f"#/experiments/{experiment_id}/traces?workflowType=genai"
    return f"#/experiments/{experiment_id}?workflowType=machine_learning"


def slurm_tags(environ: Mapping[str, str] | None = None) -> dict[str, str]:
    """The Slurm job's ids and node as run tags; empty outside a Slurm job.

    A submitit sweep runs as a job array: `slurm_array_job_id` + `slurm_array_task_id`
    (`squeue`'s `12_1`) name the job, `slurm_job_id` is that task's own id.
    """
    env = os.environ if environ is None else environ
    return {tag: env[var] for var, tag in SLURM_TAGS.items() if env.get(var)}


def run_name(experiment: str, overrides: list[str] | tuple[str, ...]) -> str:
    """`<experiment> <overrides>`: what a person typed, minus the experiment choice itself."""
    shown = [o for o in overrides if o.split("=", 1)[0].lstrip("+~") not in NAME_EXCLUDES]
    return " ".join([experiment, *shown])[:MAX_RUN_NAME]


class TrackedRun:
    """One MLflow run, opened before the study and closed FINISHED, FAILED or KILLED."""

    def __init__(self, client: Any, run_id: str) -> None:
        self.client = client
        self.run_id = run_id

    def log_params(self, config: Mapping[str, Any]) -> None:
        """The flattened, resolved config as params (logged first, so failed runs have them)."""
        from mlflow.entities import Param

        params = flat_params(dict(config))
        items = [Param(_UNSAFE.sub("_", k), v) for k, v in sorted(params.items())]
        for i in range(0, len(items), 100):
            retry_locked(self.client.log_batch, self.run_id, params=items[i : i + 100])

    def log_input(self, data: Any) -> None:
        """Log the data set (name, source file, digest = data fingerprint) as the run's input."""
        if data is None:
            return
        from mlflow.entities import DatasetInput, InputTag

        context = InputTag(key="mlflow.data.context", value="study")
        retry_locked(
            self.client.log_inputs,
            self.run_id,
            datasets=[DatasetInput(_dataset_entity(data), tags=[context])],
            retry_on=RACED,  # get-or-create of the data set races between concurrent jobs
        )

    def finish(self, result: StudyResult, run_dir: Path, manifest: dict) -> None:
        """Log cells, runtime, tags and the run folder; end the run FINISHED."""
        from mlflow.entities import Metric, RunTag

        tags = {
            "git_commit": str(manifest["git"]["commit"]),
            "data_fingerprint": str((manifest.get("dataset") or {}).get("fingerprint")),
            **link_tags(result.model_link),
            **{k: str(v) for k, v in result.tags.items()},
        }
        metrics = cell_metrics(result)
        for key, value in _numeric_runtime(result.runtime).items():
            metrics[metric_key("runtime", key)] = value
        metrics.update({metric_key(k): float(v) for k, v in result.metrics.items()})
        metric_items = [Metric(k, v, 0, 0) for k, v in metrics.items()]
        metric_items += [
            Metric(metric_key("series", name), float(v), 0, int(step))
            for name, points in result.series.items()
            for step, v in points
        ]
        tag_items = [RunTag(k, v) for k, v in tags.items()]
        batch = self.client.log_batch
        retry_locked(batch, self.run_id, tags=tag_items)
        for i in range(0, len(metric_items), BATCH):
            retry_locked(batch, self.run_id, metrics=metric_items[i : i + BATCH])
        self.client.log_artifacts(self.run_id, str(run_dir))
        retry_locked(self.client.set_terminated, self.run_id, status="FINISHED")

    def fail(self, exc: BaseException) -> None:
        """End the run FAILED (KILLED on Ctrl-C, and on SIGTERM / SIGHUP, which
        `runner.interrupts` raises as a `KeyboardInterrupt`) with the error as tag and
        artifact."""
        from mlflow.entities import RunTag

        status = "KILLED" if isinstance(exc, KeyboardInterrupt) else "FAILED"
        message = f"{type(exc).__name__}: {exc}"
        trace = "".join(traceback.format_exception(type(exc), exc, exc.__traceback__))
        try:
            retry_locked(self.client.log_batch, self.run_id, tags=[RunTag("error", message[:5000])])
            self.client.log_text(self.run_id, trace, "error.txt")
        finally:
            retry_locked(self.client.set_terminated, self.run_id, status=status)


def start_run(
    record: RunRecord,
    run_dir: Path,
    overrides: list[str] | tuple[str, ...] = (),
    store: TrackingConf | None = None,
) -> TrackedRun | None:
    """Open the MLflow run of one experiment run (None with tracking off).

    `run_dir` is the run's final folder (it is written later); the `output_dir` tag names it.
    `store` is the run's resolved tracking settings (default: `record_store(record)`).
    """
    if not record.tracking.enabled:
        log.info("tracking disabled: outputs are in %s only", run_dir)
        return None
    client, experiment_id = prepare_experiment(record, store)
    tags = {
        "study": record.study,
        "output_dir": str(run_dir),
        "run_folder": run_dir.name,
        "overrides": " ".join(overrides)[:5000],
        **slurm_tags(),
    }
    name = record.tracking.run_name or run_name(record.experiment, overrides)
    run = retry_locked(client.create_run, experiment_id, run_name=name, tags=tags)
    tracked = TrackedRun(client, run.info.run_id)  # at once: a stop from here ends it KILLED
    try:
        log.info(
            "MLflow run %s (%s) in experiment %s; in the UI: %s",
            run.info.run_id,
            name,
            experiment_id,
            ui_path(experiment_id),
        )
        tracked.log_params(record.config)
    except BaseException as exc:
        tracked.fail(exc)
        raise
    return tracked


def link_tags(link: ModelLink | None) -> dict[str, str]:
    """The run tags naming the registered model version a run used (empty without one)."""
    if link is None:
        return {}
    tags = {"model_name": link.name, "model_version": link.version}
    if link.uri:
        tags["model_uri"] = link.uri
    return tags


def hand_over(
    tracking_uri: str | None, result: StudyResult, run_id: str | None, output_dir: Path
) -> None:
    """Hand over what the run leaves outside itself, once its run id is known.

    Called while the run is open, before its folder is published and logged: registers
    `result.model` (``registered_model.json`` in `output_dir`), tags the model version of
    `result.model_link` with the run and writes `result.trace_feedback`
    (``trace_assessments.json``). `tracking_uri` is the run's store, resolved once by the
    pipeline. With tracking off (`run_id` None) a model cannot be registered (an error),
    there is no run to link, and feedback is still written.
    """
    if result.model is not None:
        register_model(tracking_uri, result.model, run_id, output_dir)
    if result.model_link is not None and run_id is not None:
        link_model(tracking_uri, result.model_link, run_id)
    if result.trace_feedback is not None:
        summary = result.trace_feedback.write(run_id)
        path = Path(output_dir) / "trace_assessments.json"
        path.write_text(json.dumps(summary, indent=2, sort_keys=True) + "\n")
        report_feedback(tracking_uri, result, run_id, output_dir, summary)


FEEDBACK_COUNTS = ("added", "updated", "left")
"""What a feedback summary counts per assessment name (`runner.routing.audit.trace_feedback`)."""


def report_feedback(
    tracking_uri: str | None,
    result: StudyResult,
    run_id: str | None,
    output_dir: Path,
    summary: dict[str, Any],
) -> None:
    """Put the feedback's counts where the run's own numbers are: ``summary.json`` (key
    ``trace_assessments``) and the MLflow run's metrics ``trace_assessments/<name>/<count>``.

    The study wrote ``summary.json`` before the run id, hence the feedback, existed; the run
    folder is still the run's own (not yet published), so it is rewritten here.
    """
    counts = {key: summary[key] for key in FEEDBACK_COUNTS if key in summary}
    if not counts:
        return
    path = Path(output_dir) / "summary.json"
    if "summary.json" in result.extra and path.exists():
        record = json.loads(path.read_text())
        record["trace_assessments"] = {
            **counts,
            "routing_run_id": summary.get("routing_run_id"),
            "traces": summary.get("traces"),
        }
        result.extra["summary.json"] = record
        path.write_text(json.dumps(record, indent=2, sort_keys=True, default=str) + "\n")
    if run_id is None or not tracking_uri:
        return
    import mlflow
    from mlflow.entities import Metric

    metrics = [
        Metric(metric_key("trace_assessments", name, key), float(n), 0, 0)
        for key, per_name in counts.items()
        for name, n in per_name.items()
    ]
    client = mlflow.MlflowClient(tracking_uri=tracking_uri)
    retry_locked(client.log_batch, run_id, metrics=metrics)


def take_back(result: StudyResult | None) -> None:
    """Take back what `hand_over` wrote onto traces, for a run that failed before its folder
    was published (the trace feedback's ``undo``); never raises over the run's own error."""
    feedback = getattr(result, "trace_feedback", None)
    if feedback is None or not callable(getattr(feedback, "undo", None)):
        return
    try:
        undone = feedback.undo()
    except Exception as exc:
        log.error("the run failed and its trace assessments could not be removed: %s", exc)
        return
    if undone:
        log.warning("the run failed: removed the %d trace assessments it had written", undone)


def _store(tracking_uri: str | None) -> str:
    if not tracking_uri:
        raise ConfigError(
            "no tracking URI to find the model registry in: set tracking.uri (or run with "
            "the default tracking=sqlite, which keeps it under paths.artifacts_dir)"
        )
    return tracking_uri


def register_model(
    tracking_uri: str | None, spec: ModelSpec, run_id: str | None, output_dir: Path
) -> dict[str, Any]:
    """Log `spec` into run `run_id` as a pyfunc model, register it and point its alias.

    Writes ``registered_model.json`` (name, version, alias, URI, run id, tracking URI) into
    `output_dir` (the run folder, logged with the run when it finishes) and returns it.
    The run is resumed for `mlflow.pyfunc.log_model` and left open for the pipeline to end.
    """
    if run_id is None:
        raise ConfigError("this experiment registers a model: it needs tracking (not tracking=off)")
    from importlib.metadata import version

    import mlflow

    uri = _store(tracking_uri)
    mlflow.set_tracking_uri(uri)
    mlflow.set_registry_uri(uri)
    client = mlflow.MlflowClient(tracking_uri=uri, registry_uri=uri)
    # resuming a run needs its experiment active, whatever this process set before
    mlflow.set_experiment(experiment_id=client.get_run(run_id).info.experiment_id)
    if spec.version is not None:
        return _reuse_version(client, spec, run_id, uri, output_dir)
    with mlflow.start_run(run_id=run_id):
        info = mlflow.pyfunc.log_model(
            name="model",
            python_model=spec.python_model,
            signature=spec.signature,
            input_example=spec.input_example,
            artifacts=spec.artifacts,
            metadata=spec.metadata,
            pip_requirements=[f"{name}=={version(name)}" for name in MODEL_REQUIREMENTS],
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


def _reuse_version(
    client: Any, spec: ModelSpec, run_id: str, uri: str, output_dir: Path
) -> dict[str, Any]:
    """Point `spec.alias` at the registered `spec.version` instead of logging a duplicate."""
    version = str(spec.version)
    client.set_registered_model_alias(spec.name, spec.alias, version)
    client.set_model_version_tag(spec.name, version, "last_rerun", run_id)
    record = {
        "name": spec.name,
        "version": version,
        "alias": spec.alias,
        "uri": f"models:/{spec.name}@{spec.alias}",
        "version_uri": f"models:/{spec.name}/{version}",
        "run_id": run_id,
        "tracking_uri": uri,
        "reused": True,
    }
    path = Path(output_dir) / "registered_model.json"
    path.write_text(json.dumps(record, indent=2, sort_keys=True) + "\n")
    log.info("kept %s version %s (no new version) as @%s", spec.name, version, spec.alias)
    return record


def link_model(tracking_uri: str | None, link: ModelLink, run_id: str) -> None:
    """Tag the model version `link` names with the run that used it (tag `link.tag`) and
    with its `link.records` (JSON, each stamped ``run_id``: a reader can tell a record a
    failed run left from one a finished run did)."""
    import mlflow

    uri = _store(tracking_uri)
    client = mlflow.MlflowClient(tracking_uri=uri, registry_uri=uri)
    retry_locked(client.set_model_version_tag, link.name, link.version, link.tag, run_id)
    for tag, record in link.records.items():
        value = json.dumps({**record, "run_id": run_id}, sort_keys=True)
        retry_locked(client.set_model_version_tag, link.name, link.version, tag, value)


def _dataset_entity(data: Any) -> Any:
    """The MLflow dataset entity of a loaded data set (a pandas dataset when there is a frame:
    schema and row count show in the UI; else name, source and digest only)."""
    import mlflow.data
    from mlflow.data.meta_dataset import MetaDataset

    files = [str(f) for f in data.files]
    source: Any = files[0] if len(files) == 1 else os.path.commonpath(files) if files else None
    if source is None:  # read from a store, not files (MLflow traces): say which
        from mlflow.data.code_dataset_source import CodeDatasetSource

        where = (getattr(data, "info", None) or {}).get("location") or data.name
        source = CodeDatasetSource(tags={"location": str(where)})
    digest = str(data.fingerprint)[:DIGEST_CHARS]
    frame = getattr(data, "frame", None)
    with warnings.catch_warnings():
        # a local path matches two equivalent source classes; MLflow warns and picks one
        warnings.filterwarnings("ignore", message="The specified dataset source")
        # schema inference hints at models' missing-value handling; a data set has none here
        warnings.filterwarnings("ignore", message="Hint: Inferred schema contains integer")
        if isinstance(frame, pd.DataFrame):
            dataset = mlflow.data.from_pandas(frame, source=source, name=data.name, digest=digest)
        else:
            from mlflow.data.dataset_source_registry import resolve_dataset_source

            if isinstance(source, str):
                source = resolve_dataset_source(source)
            dataset = MetaDataset(source, name=data.name, digest=digest)
        return dataset._to_mlflow_entity()


def _numeric_runtime(runtime: dict[str, Any], prefix: str = "") -> dict[str, float]:
    out: dict[str, float] = {}
    for key, value in runtime.items():
        path = f"{prefix}/{key}" if prefix else str(key)
        if isinstance(value, dict):
            out.update(_numeric_runtime(value, path))
        elif isinstance(value, (int, float)) and not isinstance(value, bool):
            out[path] = float(value)
    return out
