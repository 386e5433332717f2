"""The one straight line: config -> checks -> study (with its parts) -> data -> outputs.

`__main__` only adapts Hydra to this; tests call `run(cfg)` with a composed config.
Everything that can be checked without data is checked first, so a config error never
costs a data load or a model load: keys unknown to their schema, required values left
unset, every value by its class's own check, then the study is built with Hydra's
`instantiate` (``study: {gates: ${gates}, ...}``), which builds every part it takes and
runs their constructors' checks; then each part that loads model files finds them. The
data set is loaded here (`load_data`); the study gets it with the `RunContext`.
"""

from __future__ import annotations

import logging
import time
from dataclasses import dataclass, replace
from pathlib import Path
from typing import Any

from hydra.errors import InstantiationException
from hydra.utils import instantiate
from omegaconf import DictConfig, OmegaConf
from omegaconf.errors import OmegaConfBaseException

from runner.cli_errors import one_line
from runner.config import NAMED_PARTS, run_record
from runner.errors import ConfigError, RunnerError
from runner.interrupts import signals_as_interrupts
from runner.results import StudyResult
from runner.schema_checks import (
    check_known_keys,
    check_named_parts,
    check_required,
    check_schema_values,
    with_schemas,
)
from runner.studies import RunContext, Study

log = logging.getLogger(__name__)

MODEL_GROUPS = ("verifiers", "judges", "span_detector")
"""The study's parts that may load model files (the manifest records them)."""


@dataclass
class RunOutcome:
    """What a finished run left behind; `output_dir` is the run's own folder."""

    result: StudyResult
    output_dir: Path
    mlflow_run_id: str | None
    run_id: str | None = None


def check_config(cfg: DictConfig) -> Study:
    """Validate everything that needs no data and build the study; return it.

    In order: every part's node typed by the class its ``_target_`` names (`with_schemas`:
    a target that does not import, a value of the wrong type, a key the part does not
    take), keys unknown to a record's schema (also those added with ``+``), required
    values left unset (``dataset.path: ???``), every value by its class's check
    (``__post_init__``, a part's ``check_settings``), then the study is built with every
    part it takes (no weights are loaded) and each part finds its model files. `cfg` may
    be typed already (`run`).
    """
    cfg = with_schemas(cfg)
    check_known_keys(cfg)
    check_named_parts(cfg, NAMED_PARTS)
    check_required(cfg)
    check_schema_values(cfg)
    _use_run_registry(tracking_conf(cfg))
    study = build_node("study", cfg.study)
    if not isinstance(study, Study):
        raise ConfigError(f"study._target_={cfg.study._target_!r} is not a runner Study")
    for _, part in study.parts():
        check = getattr(part, "check_sources", None)
        if check is not None:
            check()
    return study


def _use_run_registry(store: Any) -> None:
    """Parts given a ``models:/`` URI (a trained detector) resolve it in this run's store."""
    if store is None or not store.uri:
        return
    from runner.verifiers import use_registry

    use_registry(store.uri)


def tracking_conf(cfg: DictConfig) -> Any:
    """Typed tracking settings with `uri` and `artifact_root` resolved: the run's store.

    ``tracking.uri: null`` means SQLite under ``paths.artifacts_dir``. Resolved once,
    here; the MLflow run, a loader that reads the store, the registered model a routing
    study routes with and what the run registers all use this ``RunContext.tracking.uri``.
    """
    node = cfg.get("tracking")
    conf = OmegaConf.to_object(node) if isinstance(node, DictConfig) else node
    paths = cfg.get("paths")
    if conf is None or paths is None or paths.get("artifacts_dir") is None:
        return conf
    from runner.tracking import resolve_uri

    uri, root = resolve_uri(conf, paths.artifacts_dir)
    return replace(conf, uri=uri, artifact_root=root)


def build_node(key: str, node: DictConfig) -> Any:
    """`instantiate(node)`, with a part's own `RunnerError` unwrapped from Hydra's wrapper.

    Records (typed settings such as ``routing`` and ``study.params``) reach the part as
    their dataclass, everything else as plain Python containers. A part's error is prefixed
    with the key a user sets (``verifiers.hhem_full: ...``, not the path through the
    study's node); the study's own checks name their keys themselves.
    """
    try:
        return instantiate(node, _convert_="object")
    except InstantiationException as exc:
        cause = exc.__cause__
        where = _failing_part(node, key)
        if isinstance(cause, ConfigError) and where != key and not str(cause).startswith(where):
            raise ConfigError(f"{where}: {cause}") from None
        if isinstance(cause, RunnerError):
            raise cause from None
        raise ConfigError(f"{where}: cannot build {node.get('_target_')}: {exc}") from exc
    except OmegaConfBaseException as exc:  # e.g. an interpolated value of the wrong type
        where = _user_key(node, key, str(exc.full_key or key))
        raise ConfigError(f"{where.split('.')[0]}: {one_line(exc)}") from exc


def _failing_part(node: DictConfig, key: str) -> str:
    """The key a user sets for the part whose constructor failed (``verifiers.hhem_full``),
    or `key` when none of them did (the study's own check failed).

    Only on the error path: each part handed to the study by interpolation is built again
    alone, in order, and the first that fails is named; no error text is parsed.
    """
    for child in node.keys():
        if not OmegaConf.is_interpolation(node, child):
            continue
        source = _source(node, str(child))
        value = node[child]
        named = isinstance(value, DictConfig) and "_target_" not in value
        for name, part in value.items() if named else [(None, value)]:
            if not isinstance(part, DictConfig) or "_target_" not in part:
                continue
            try:
                instantiate(part, _convert_="object")
            except Exception:
                return source if name is None else f"{source}.{name}"
    return key


def _source(node: DictConfig, child: str) -> str:
    """The key `node`'s interpolated `child` points at (``${verifiers}`` -> ``verifiers``)."""
    return str(OmegaConf.to_container(node, resolve=False)[child]).strip("${}")


def _user_key(node: DictConfig, key: str, full: str) -> str:
    """The key a user sets for the node `full` names (``study.verifiers.hhem_full`` ->
    ``verifiers.hhem_full``: the study's ``verifiers`` is ``${verifiers}``)."""
    head, _, rest = full.removeprefix(f"{key}.").partition(".")
    if full == key or head not in node or not OmegaConf.is_interpolation(node, head):
        return full
    source = _source(node, head)
    return f"{source}.{rest}" if rest else source


def load_data(cfg: DictConfig, tracking_uri: str | None = None) -> Any:
    """Load the configured dataset (None when the study needs none).

    A loader that reads the tracking store (MLflow traces) with no ``tracking_uri`` of its
    own reads `tracking_uri`, the run's store (resolved from `cfg` when not given).
    """
    if cfg.get("dataset") is None:
        return None
    kwargs: dict[str, Any] = {}
    if "tracking_uri" in cfg.dataset and not cfg.dataset.tracking_uri:
        # a loader that reads the tracking store (MLflow traces) reads the run's own store
        if tracking_uri is None:
            tracking_uri = tracking_conf(cfg).uri
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
    FAILED with the error if anything after fails (KILLED on Ctrl-C, SIGTERM or SIGHUP,
    which also remove the unfinished folder: `runner.interrupts`). `overrides` are the command-line
    overrides (default: Hydra's task overrides when Hydra is running), used for the run
    name and the manifest.
    """
    from runner import tracking
    from runner.reporting import RunFolder, RunInfo, git_state

    cfg = with_schemas(cfg)  # typed once: the study, the data and the manifest read the same
    study = check_config(cfg)
    keep_runs = check_output_settings(cfg)
    record = run_record(cfg)  # the config as plain values: all tracking and reporting read
    tracking.check(record.tracking)
    overrides = list(hydra_overrides() if overrides is None else overrides)
    git = git_state()  # read once: the manifest records it, a registered model carries it
    store = tracking_conf(cfg)
    context = RunContext(
        experiment=str(cfg.experiment),
        seed=int(cfg.seed),
        progress=bool(cfg.get("progress", False)),
        cache_dir=cfg.paths.get("cache_dir"),
        commit=git["commit"],
        tracking=store,
        overrides=tuple(overrides),
    )
    folder = RunFolder.planned(Path(cfg.paths.output_dir))
    info = RunInfo(run_id=folder.run_id, overrides=overrides, git=git)
    attempt = _Attempt(cfg, study, record, context, folder, info)
    # from the folder on, SIGTERM / SIGHUP stop the run as Ctrl-C does: the except below
    # removes the folder and ends the MLflow run KILLED (`runner.interrupts`)
    with signals_as_interrupts():
        try:
            run_dir = attempt.run(keep_runs)
        except BaseException as exc:
            attempt.abandon(exc)
            raise
    return RunOutcome(
        result=attempt.result, output_dir=run_dir, mlflow_run_id=info.mlflow_run_id,
        run_id=info.run_id,
    )  # fmt: skip


@dataclass
class _Attempt:
    """One attempt at a run, from its folder on: what it has done so far, so that a
    failure undoes exactly that (`abandon`)."""

    cfg: DictConfig
    study: Study
    record: Any
    context: RunContext
    folder: Any
    info: Any
    tracked: Any = None
    result: StudyResult | None = None
    published: bool = False

    def run(self, keep_runs: int | None) -> Path:
        """Load, run the study, write its outputs, publish the folder; the run folder."""
        from runner import tracking
        from runner.reporting import (
            publish,
            remove_abandoned,
            write_files_and_documents,
            write_outputs,
        )

        folder, store, study = self.folder, self.context.tracking, self.study
        tracking_uri = store.uri if store is not None else None
        folder.make()
        for gone in remove_abandoned(folder.exp_dir):
            log.info("removed %s: the run writing it was killed", gone)
        overrides = list(self.context.overrides)
        self.tracked = tracking.start_run(self.record, folder.run_dir, overrides, store=store)
        run_id = self.tracked.run_id if self.tracked else None
        self.info.mlflow_run_id = run_id
        started = time.perf_counter()
        data = load_data(self.cfg, tracking_uri=tracking_uri)
        if self.tracked:
            self.tracked.log_input(data)
        result = self.result = study.run(data, self.context)
        result.runtime.setdefault("study_seconds", round(time.perf_counter() - started, 3))
        manifest = write_outputs(
            self.record, result, data, folder.tmp_dir, figures=study.figures,
            run_info=self.info, parts=model_parts(study),
        )  # fmt: skip
        write_files_and_documents(result, study.documents, folder.tmp_dir)
        tracking.hand_over(tracking_uri, result, run_id, folder.tmp_dir)
        run_dir = publish(folder, keep_runs=keep_runs)
        self.published = True
        if self.tracked:
            self.tracked.finish(result, run_dir, manifest)
        return run_dir

    def abandon(self, exc: BaseException) -> None:
        """Undo what the attempt did: its folder, its trace assessments (unless published)
        and its MLflow run, which ends FAILED (or KILLED) with ``exc``."""
        from runner import tracking

        self.folder.discard()
        if not self.published:  # nothing of the run stays: neither do its trace assessments
            tracking.take_back(self.result)
        if self.tracked:
            try:
                self.tracked.fail(exc)
            except Exception as track_exc:  # keep the study's error in front
                log.error("could not mark MLflow run %s failed: %s", self.tracked.run_id, track_exc)


def model_parts(study: Study) -> dict[str, Any]:
    """The study's parts that may load model files, by config key, for the manifest."""
    return {key: part for key, part in study.parts() if key.split(".")[0] in MODEL_GROUPS}


def hydra_overrides() -> list[str]:
    """The task overrides of the running Hydra job (empty outside Hydra)."""
    from hydra.core.hydra_config import HydraConfig

    if not HydraConfig.initialized():
        return []
    return list(HydraConfig.get().overrides.task)
