"""The one straight line: config -> checks -> parts -> data -> study -> outputs -> tracking.

`__main__` only adapts Hydra to this; tests call `run(cfg)` with a composed config.
Everything that can be checked without data (study parameters, importable targets,
split and bootstrap settings, building every part) is checked first, so a config error
never costs a data load or a model load. Config nodes become the run's objects here: the
parts, splitters and typed settings in `build_inputs`, the data set in `load_data`, the
registered model a routing study routes with in `with_registered_model`; studies, the
manifest and tracking receive what was built (`runner.studies.contract`). Elsewhere config
becomes objects in exactly three places, none of them part of a run's path of its own:
`runner.hri.config.load_hri_config` (the HRI configuration; called from `build_inputs`),
`runner.schema_checks.check_schema_values` (builds schema nodes only to validate them,
then drops them) and `runner.verifiers.build.build_verifier` (one verifier outside a run,
for `scripts/bench_verifiers.py`).
"""

from __future__ import annotations

import importlib
import logging
import time
from dataclasses import dataclass, replace
from pathlib import Path
from typing import Any

from hydra.errors import InstantiationException
from hydra.utils import instantiate
from omegaconf import DictConfig, OmegaConf
from omegaconf.errors import ConfigKeyError, OmegaConfBaseException

from runner.cli_errors import one_line
from runner.errors import ConfigError, RunnerError
from runner.results import StudyResult
from runner.schema_checks import check_known_keys, check_required, check_schema_values
from runner.studies import Inputs, Study, load_study

log = logging.getLogger(__name__)

PART_GROUPS = ("gates", "verifiers", "judges", "splits")


@dataclass
class RunOutcome:
    """What a finished run left behind; `output_dir` is the run's own folder."""

    result: StudyResult
    output_dir: Path
    mlflow_run_id: str | None
    run_id: str | None = None


def check_config(cfg: DictConfig) -> tuple[Study, Any, Inputs]:
    """Validate everything that needs no data; return the study, its typed params and inputs.

    In order: keys unknown to their schema (also those added with ``+``), required values
    left unset (``dataset.path: ???``), the study's params, importable targets, schema
    values (``__post_init__``: bootstrap, split, dataset provenance), then every part is
    built (no weights are loaded), verifiers find their model files and the study's own
    `Study.check` runs.
    """
    check_known_keys(cfg)
    check_required(cfg)
    study = load_study(cfg.study.name)
    try:
        params = OmegaConf.merge(OmegaConf.structured(study.Params), cfg.study.params)
    except OmegaConfBaseException as exc:
        raise ConfigError(_params_error(cfg, study.Params, exc)) from exc
    targets: list[tuple[str, Any]] = []
    if cfg.get("dataset") is not None:
        targets.append(("dataset", cfg.dataset))
    if cfg.get("split") is not None:
        targets.append(("split", cfg.split))
    if cfg.get("span_detector") is not None:
        targets.append(("span_detector", cfg.span_detector))
    for group in PART_GROUPS:
        for name, node in (cfg.get(group) or {}).items():
            targets.append((f"{group}.{name}", node))
    for key, node in targets:
        target = node.get("_target_") if isinstance(node, DictConfig) else None
        if not target:
            raise ConfigError(f"{key}: no _target_ (which class or function builds it?)")
        _check_importable(key, target)
    check_schema_values(cfg)
    typed = OmegaConf.to_object(params)
    inputs = build_inputs(cfg)
    _check_model_files(inputs)
    study.check(inputs, typed)
    return study, typed, inputs


def _check_model_files(inputs: Inputs) -> None:
    """Every configured verifier finds its model files (the disk, once, before any work)."""
    wrapped = getattr(inputs.span_detector, "verifier", None)
    for part in [*inputs.verifiers.values(), wrapped]:
        check = getattr(part, "check_sources", None)
        if check is not None:
            check()


def _params_error(cfg: DictConfig, params_type: type, exc: OmegaConfBaseException) -> str:
    """One line: what OmegaConf refused in `study.params`, the class that declares the
    parameters (grep finds it), its valid keys and where a moved setting lives now."""
    import dataclasses

    what = (
        str(exc)
        .splitlines()[0]
        .replace(
            f"'{params_type.__name__}'", f"'{params_type.__module__}.{params_type.__qualname__}'"
        )
    )
    if not isinstance(exc, ConfigKeyError):  # a value of the wrong type
        return f"study.params.{exc.full_key} for {cfg.study.name}: {what}"
    valid = ", ".join(f.name for f in dataclasses.fields(params_type))
    hint = _moved_params_hint(cfg, params_type)
    return f"study.params for {cfg.study.name}: {what} (valid: {valid}){hint}"


def _moved_params_hint(cfg: DictConfig, params_type: type) -> str:
    """Where an unknown study parameter lives instead, when another config group has it.

    Settings of parts moved out of `study.params` (RQ5's `ks` is `splits.target.ks`), so an
    old command line names the key the run now reads.
    """
    import dataclasses

    known = {f.name for f in dataclasses.fields(params_type)}
    unknown = [k for k in cfg.study.params if k not in known]
    places = []
    for key in unknown:
        for group in ("split", "bootstrap", "dataset", "routing", "span_detector"):
            node = cfg.get(group)
            if isinstance(node, DictConfig) and key in node:
                places.append(f"{group}.{key}")
        for group in PART_GROUPS:
            for name, node in _items(cfg, group):
                if isinstance(node, DictConfig) and key in node:
                    places.append(f"{group}.{name}.{key}")
    return f" (set {' or '.join(dict.fromkeys(places))} instead)" if places else ""


def build_inputs(cfg: DictConfig, data: Any = None) -> Inputs:
    """Build every part the config names and hand them over as one typed `Inputs`.

    Parts are built, not run: no data is read and no model weights are loaded here.
    """
    from runner.hri import load_hri_config
    from runner.routing import RoutingConf

    store = _tracking(cfg)
    _use_run_registry(store)
    return Inputs(
        experiment=str(cfg.experiment),
        seed=int(cfg.seed),
        progress=bool(cfg.get("progress", False)),
        cache_dir=cfg.paths.get("cache_dir") if cfg.get("paths") else None,
        data=data,
        bootstrap=_typed(cfg.get("bootstrap")),
        split=_build("split", cfg.split) if cfg.get("split") is not None else None,
        splits={name: _build(f"splits.{name}", node) for name, node in _items(cfg, "splits")},
        gates=build_parts(cfg, "gates"),
        verifiers=build_parts(cfg, "verifiers"),
        judges=build_parts(cfg, "judges"),
        span_detector=(
            _build("span_detector", cfg.span_detector)
            if cfg.get("span_detector") is not None
            else None
        ),
        hri=load_hri_config(cfg.hri) if cfg.get("hri") is not None else None,
        routing=_typed(cfg.get("routing")) or RoutingConf(),  # the defaults when unset
        tracking=store,
        detector=_typed(cfg.get("detector")),
        train=_typed(cfg.get("train")),
    )


def _use_run_registry(store: Any) -> None:
    """Parts given a ``models:/`` URI (a trained detector) resolve it in this run's store."""
    if store is None or not store.uri:
        return
    from runner.verifiers import use_registry

    use_registry(store.uri)


def _tracking(cfg: DictConfig) -> Any:
    """Typed tracking settings with `uri` and `artifact_root` resolved: the run's store.

    ``tracking.uri: null`` means SQLite under ``paths.artifacts_dir``. Resolved once,
    here; the MLflow run, a loader that reads the store, the registered model a routing
    study routes with and what the run registers all use this ``Inputs.tracking.uri``.
    """
    conf = _typed(cfg.get("tracking"))
    paths = cfg.get("paths")
    if conf is None or paths is None or paths.get("artifacts_dir") is None:
        return conf
    from runner.tracking import resolve_uri

    uri, root = resolve_uri(cfg)
    return replace(conf, uri=uri, artifact_root=root)


def _items(cfg: DictConfig, group: str) -> list[tuple[str, Any]]:
    return list((cfg.get(group) or {}).items())


def _typed(node: Any) -> Any:
    """A schema-typed config node as its dataclass instance (None stays None)."""
    if node is None:
        return None
    return OmegaConf.to_object(node) if isinstance(node, DictConfig) else node


def _build(key: str, node: DictConfig) -> Any:
    """`instantiate(node)`, with a part's own `RunnerError` unwrapped from Hydra's wrapper."""
    try:
        return instantiate(node, _convert_="all")
    except InstantiationException as exc:
        cause = exc.__cause__
        if isinstance(cause, ConfigError) and not str(cause).startswith(key):
            raise ConfigError(f"{key}: {cause}") from None  # the key a user sets, then why
        if isinstance(cause, RunnerError):
            raise cause from None
        raise ConfigError(f"{key}: cannot build {node.get('_target_')}: {exc}") from exc
    except OmegaConfBaseException as exc:  # e.g. an interpolated value of the wrong type
        raise ConfigError(f"{key}: {one_line(exc)}") from exc


def _check_importable(key: str, target: str) -> None:
    module, _, attr = target.rpartition(".")
    try:
        obj = importlib.import_module(module)
    except ImportError as exc:
        raise ConfigError(f"{key}._target_={target!r}: cannot import {module!r} ({exc})") from exc
    if not hasattr(obj, attr):
        raise ConfigError(f"{key}._target_={target!r}: {module!r} has no {attr!r}")


def build_parts(cfg: DictConfig, group: str) -> dict[str, Any]:
    """Instantiate every part of a group (`gates`, `verifiers`, `judges`) by name."""
    return {name: _build(f"{group}.{name}", node) for name, node in _items(cfg, group)}


STREAMING_LOADERS = {"runner.data.rag_file.load_rag_file": "runner.data.rag_stream.open_stream"}
"""Loaders with a streaming counterpart (same arguments), for studies that read in batches."""


def load_data(cfg: DictConfig, stream: bool = False, tracking_uri: str | None = None) -> Any:
    """Load the configured dataset (None when the study needs none).

    With `stream`, a loader that has a streaming counterpart (`STREAMING_LOADERS`) opens
    the data as batches instead of reading every row. A loader that reads the tracking
    store (MLflow traces) with no ``tracking_uri`` of its own reads `tracking_uri`, the
    run's store (`Inputs.tracking.uri`; resolved from `cfg` when not given).
    """
    if cfg.get("dataset") is None:
        return None
    kwargs: dict[str, Any] = {}
    if stream and cfg.dataset.get("_target_") in STREAMING_LOADERS:
        kwargs["_target_"] = STREAMING_LOADERS[cfg.dataset._target_]
    if "tracking_uri" in cfg.dataset and not cfg.dataset.tracking_uri:
        # a loader that reads the tracking store (MLflow traces) reads the run's own store
        if tracking_uri is None:
            from runner.tracking import resolve_uri

            tracking_uri = resolve_uri(cfg)[0]
        kwargs["tracking_uri"] = tracking_uri
    try:
        return instantiate(cfg.dataset, _convert_="all", **kwargs)
    except InstantiationException as exc:
        # Hydra wraps the loader's own error; a data error reads better unwrapped.
        if isinstance(exc.__cause__, RunnerError):
            raise exc.__cause__ from None
        raise


def check_output_settings(cfg: DictConfig) -> int | None:
    """`paths.keep_runs`: null (keep every run) or a positive number of runs to keep."""
    keep = cfg.paths.get("keep_runs")
    if keep is not None and (isinstance(keep, bool) or not isinstance(keep, int) or keep < 1):
        raise ConfigError(
            f"paths.keep_runs must be a positive int or null (keep all), got {keep!r}"
        )
    return keep


def run(cfg: DictConfig, overrides: list[str] | None = None) -> RunOutcome:
    """Run one experiment end to end and return what it produced.

    The outputs go into a new run folder under `paths.output_dir` (the experiment's
    folder); `latest` there switches to it only once it is complete
    (`runner.reporting.run_folders`). The MLflow run opens before the data load and ends
    FAILED with the error if anything after fails. `overrides` are the command-line
    overrides (default: Hydra's task overrides when Hydra is running), used for the run
    name and the manifest.
    """
    from runner import tracking
    from runner.reporting import (
        RunFolder,
        RunInfo,
        git_state,
        publish,
        write_files_and_documents,
        write_outputs,
    )

    study, params, inputs = check_config(cfg)
    keep_runs = check_output_settings(cfg)
    tracking.check(cfg)
    overrides = list(hydra_overrides() if overrides is None else overrides)
    folder = RunFolder.create(Path(cfg.paths.output_dir))
    git = git_state()  # read once: the manifest records it, a registered model carries it
    inputs = replace(inputs, commit=git["commit"])
    info = RunInfo(run_id=folder.run_id, overrides=overrides, git=git)
    store = inputs.tracking
    tracking_uri = store.uri if store is not None else None
    tracked = None
    result = None
    published = False
    try:
        where = (store.uri, store.artifact_root) if store is not None and store.uri else None
        tracked = tracking.start_run(cfg, folder.run_dir, overrides, store=where)
        run_id = tracked.run_id if tracked else None
        info.mlflow_run_id = run_id
        started = time.perf_counter()
        data = load_data(cfg, stream=study.streams, tracking_uri=tracking_uri)
        if tracked:
            tracked.log_input(data)
        inputs = with_registered_model(study, inputs.with_data(data), params)
        result = study.run(inputs, params)
        result.runtime.setdefault("study_seconds", round(time.perf_counter() - started, 3))
        manifest = write_outputs(
            cfg,
            result,
            data,
            folder.tmp_dir,
            figures=study.figures,
            run_info=info,
            parts=model_parts(inputs),
        )
        write_files_and_documents(result, study.documents, folder.tmp_dir)
        tracking.publish(tracking_uri, result, run_id, folder.tmp_dir)
        run_dir = publish(folder, keep_runs=keep_runs)
        published = True
        if tracked:
            tracked.finish(cfg, result, run_dir, manifest)
    except BaseException as exc:
        folder.discard()
        if not published:  # nothing of the run stays: neither do its trace assessments
            tracking.withdraw(result)
        if tracked:
            try:
                tracked.fail(exc)
            except Exception as track_exc:  # keep the study's error in front
                log.error("could not mark MLflow run %s failed: %s", tracked.run_id, track_exc)
        raise
    return RunOutcome(
        result=result, output_dir=run_dir, mlflow_run_id=info.mlflow_run_id, run_id=info.run_id
    )


def with_registered_model(study: Study, inputs: Inputs, params: Any) -> Inputs:
    """`inputs` with the registered model the study routes with (`Study.registered_model`),
    loaded from the run's store; unchanged for a study that names none."""
    uri = study.registered_model(inputs, params)
    if not uri:
        return inputs
    from runner.routing import load_routed_model

    store = inputs.require("tracking")
    return replace(inputs, model=load_routed_model(store.uri, uri))


def model_parts(inputs: Inputs) -> dict[str, Any]:
    """The built parts that may load model files, by config key, for the manifest."""
    parts = {f"verifiers.{name}": part for name, part in inputs.verifiers.items()}
    parts.update({f"judges.{name}": part for name, part in inputs.judges.items()})
    if inputs.span_detector is not None:
        parts["span_detector"] = inputs.span_detector
    return parts


def hydra_overrides() -> list[str]:
    """The task overrides of the running Hydra job (empty outside Hydra)."""
    from hydra.core.hydra_config import HydraConfig

    if not HydraConfig.initialized():
        return []
    return list(HydraConfig.get().overrides.task)
