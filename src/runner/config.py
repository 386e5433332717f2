"""Hydra's side of the configuration: the run's schema, every part's schema in the
ConfigStore, composing outside a run, and the run's record.

Why: a typo in an override (`split.n_splits=abc`, `dataset.pth=...`) must fail at compose
time, naming the key, before any data is read or model loaded. Every YAML in `conf/`
starts from the class it configures (its defaults list names it, ``runner.gates.LogitGate``);
`register_configs` finds those names in the YAMLs and stores the schema derived from each
class (`runner.settings.derive`), so OmegaConf checks types and rejects unknown keys and a
value's type and default live only in the class. No list of schemas is kept anywhere.

Everything that reads a Hydra config lives here and in the pipeline: a config composed
outside a run (`compose_verifier` / `build_verifier` for ``scripts/bench_verifiers.py``,
which must time exactly the verifier a study would use; `experiment_config` for ``make
tables``, which counts a logged run as the reproduction when its settings equal its
experiment's config composed afresh), and the run's record (`run_record`), the plain values
tracking and reporting receive.
"""

from __future__ import annotations

import dataclasses
import warnings
from collections.abc import Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from hydra import compose, initialize_config_dir
from hydra.core.config_store import ConfigStore
from hydra.core.global_hydra import GlobalHydra
from hydra.utils import instantiate
from omegaconf import MISSING, DictConfig, OmegaConf

from runner.paths import PROJECT_ROOT
from runner.run_record import RunRecord, TrackingConf
from runner.schema_checks import with_schemas
from runner.settings import OPEN_KEYS, SEED, import_path, is_record


@dataclass
class PathsConf:
    """Filesystem locations (data sets are found by each loader: `$RUNNER_DATA_DIR`).

    `output_dir` is the experiment's folder: each run writes `runs/<id>/` there and
    `latest` points at the newest complete one. `keep_runs` bounds how many complete runs
    stay (null: all; the latest and runs still writing are never removed).
    """

    artifacts_dir: str = MISSING
    output_dir: str = MISSING
    cache_dir: str | None = None
    keep_runs: int | None = None


@dataclass
class RunConfig:
    """The whole composed run: one experiment, its data, its parts and the protocol."""

    experiment: str = MISSING
    seed: int = SEED
    progress: bool = True
    study: Any = None  # the study class's schema: the experiment's `/study@study: <class>`
    dataset: Any = None
    split: Any = None
    # Further named splitters, e.g. RQ5's `splits.cross_source` and `splits.target`
    # (composed with `- /split@splits.<name>: <option>`).
    splits: dict[str, Any] = field(default_factory=dict)
    bootstrap: Any = None
    tracking: TrackingConf = field(default_factory=TrackingConf)
    hri: Any = None
    gates: dict[str, Any] = field(default_factory=dict)
    verifiers: dict[str, Any] = field(default_factory=dict)
    judges: dict[str, Any] = field(default_factory=dict)
    span_detector: Any = None
    routing: Any = None
    detector: Any = None
    train: Any = None
    paths: PathsConf = field(default_factory=PathsConf)


NAMED_PARTS = tuple(f.name for f in dataclasses.fields(RunConfig) if f.default_factory is dict)
"""Groups of named parts (``gates``, ``splits``, ...): a setting is ``<group>.<name>.<key>``."""


CLASS_MARK = "."
"""A defaults-list entry whose name holds a dot names a class or function (no YAML file name
does): ``defaults: [runner.gates.LogitGate, _self_]`` in ``conf/gate/<x>.yaml``. Registration
stores that entry in the YAML's group, with the schema derived from what it names."""


def class_entries(conf_dirs: list[Path]) -> dict[tuple[str, str], None]:
    """Every (group, dotted path) the defaults lists of the YAML files under `conf_dirs` name.

    An entry ``runner.x.Y`` belongs to the file's own group; ``{/group@package: runner.x.Y}``
    (``override`` or not) to ``group``; ``{sub@package: runner.x.Y}`` to the file's
    ``group/sub``, as Hydra reads them. Ordered, each pair once.
    """
    import yaml

    loader = getattr(yaml, "CSafeLoader", yaml.SafeLoader)  # libyaml: 0.11 s -> 0.01 s a run
    found: dict[tuple[str, str], None] = {}
    for conf in conf_dirs:
        for path in sorted(Path(conf).rglob("*.yaml")):
            own = path.parent.relative_to(conf).as_posix()
            own = "" if own == "." else own
            node = yaml.load(path.read_text(), Loader=loader) or {}
            for entry in node.get("defaults") or [] if isinstance(node, dict) else []:
                if isinstance(entry, str):
                    key, name = None, entry
                elif isinstance(entry, dict) and len(entry) == 1:
                    key, name = next(iter(entry.items()))
                else:
                    continue
                if not isinstance(name, str) or CLASS_MARK not in name:
                    continue
                group = own
                if key is not None:
                    key = key.removeprefix("override ").split("@")[0].strip()
                    group = key[1:] if key.startswith("/") else "/".join(filter(None, (own, key)))
                found[(group, name)] = None
    return found


def code_value(path: str) -> Any:
    """``${code:runner.gates.BASE_FEATURES}``: a value whose one home is the code (a tuple
    becomes a list), so a YAML names it instead of restating it."""

    value = import_path(path)
    return list(value) if isinstance(value, tuple) else value


def searchpath_dirs(argv: list[str]) -> list[str]:
    """The folders a command line adds to Hydra's search path
    (``hydra.searchpath=[file:///my/conf]``), so `register_configs` scans them too."""
    dirs = []
    for arg in argv:
        key, _, value = arg.lstrip("+").partition("=")
        if key != "hydra.searchpath":
            continue
        for item in value.strip("[]").split(","):
            item = item.strip().strip("'\"")
            if item.startswith("file://"):
                dirs.append(item.removeprefix("file://"))
    return dirs


def register_configs(conf_dirs: list[str | Path] | None = None) -> ConfigStore:
    """Register the run schema and the schema of every class the conf YAMLs name.

    `conf_dirs`: conf folders to scan besides the project's ``conf/`` (a folder you add to
    Hydra's search path). Each ``(group, runner.x.Y)`` found (`class_entries`) is stored
    under that name with the schema derived from the imported class (`runner.settings.
    derive`): adding a part needs its class and one YAML, no list. Safe to call more than once:
    folders already registered in this process are not read again (a test module and each
    composing helper call it; reading 86 YAMLs and storing 52 schemas costs about 0.7 s).
    """
    from runner.settings import derive

    # conf/hydra/launcher/{ray,submitit_*}.yaml share their names with the plugins' own
    # schemas on purpose (`hydra/launcher=ray`): Hydra validates them against those schemas
    # and warns that this matching is deprecated; the warning is expected, not a fault.
    warnings.filterwarnings(
        "ignore", message=r"(?s).*is validated against ConfigStore schema with the same name"
    )
    if not OmegaConf.has_resolver("project_root"):
        OmegaConf.register_new_resolver("project_root", lambda: str(PROJECT_ROOT))
    if not OmegaConf.has_resolver("code"):
        OmegaConf.register_new_resolver("code", code_value)
    cs = ConfigStore.instance()
    cs.store(name="config_schema", node=RunConfig)
    dirs = [PROJECT_ROOT / "conf", *(Path(d) for d in conf_dirs or [])]
    dirs = [d for d in dirs if d.resolve() not in _REGISTERED]
    schemas: dict[str, type] = {}
    for group, name in class_entries(dirs):
        if name not in schemas:
            schemas[name] = derive(name)
        cs.store(group=group, name=name, node=_stored_node(name, schemas[name]))
    _REGISTERED.update(d.resolve() for d in dirs)
    return cs


_REGISTERED: set[Path] = set()
"""The conf folders whose classes this process has stored in the ConfigStore."""


def _stored_node(path: str, schema: type) -> Any:
    """What the ConfigStore keeps for a class a YAML names.

    A record (``RoutingConf``) is stored as the class itself: it lives in a module, so a
    config typed by it pickles by reference. A part's derived schema is stored as its
    defaults, untyped (``_target_`` and one key per setting): the composed config then holds
    no class that exists only in this process, and a launcher sends it to a job process
    with plain pickle. The part's schema types the node again before any work
    (`runner.schema_checks.with_schemas`). A mapping setting (`OPEN_KEYS`) stays open, so
    ``dataset.columns.id=request_id`` needs no ``+``.
    """
    if is_record(import_path(path)):
        return schema
    node = OmegaConf.create(OmegaConf.to_container(OmegaConf.structured(schema), enum_to_str=True))
    for f in dataclasses.fields(schema):
        if f.metadata.get(OPEN_KEYS) and isinstance(node.get(f.name), DictConfig):
            OmegaConf.set_struct(node[f.name], False)
    return node


def study_name(cfg: Any) -> str:
    """The registered name of the study a composed config builds (``rq1_cheap_signals``),
    as the manifest and the MLflow run record it."""

    target = str(cfg.study._target_)
    return str(getattr(import_path(target), "name", target))


def recorded(cfg: Any) -> dict[str, Any]:
    """The run's config as the manifest, ``config.yaml`` and MLflow record it: resolved,
    but the parts handed to the study by interpolation (``study.gates: ${gates}``) stay
    references, so each part is recorded once, at its own key."""
    out = OmegaConf.to_container(cfg, resolve=True)
    study = cfg.get("study")
    if isinstance(study, DictConfig) and isinstance(out.get("study"), dict):
        written = OmegaConf.to_container(study, resolve=False)
        for key in study.keys():
            if OmegaConf.is_interpolation(study, key):
                out["study"][key] = written[key]
    return out


def run_record(cfg: Any) -> RunRecord:
    """The run's configuration as plain values (`RunRecord`), computed once by the pipeline
    and handed to tracking and reporting, which never read the config themselves."""
    config = recorded(cfg)
    node = cfg.get("tracking")
    if isinstance(node, DictConfig):
        node = OmegaConf.to_object(node)
    tracking = TrackingConf(**node) if isinstance(node, dict) else node or TrackingConf()
    paths = cfg.get("paths")
    artifacts = paths.get("artifacts_dir") if paths is not None else None
    return RunRecord(
        experiment=str(cfg.experiment),
        study=study_name(cfg),
        config=config,
        config_yaml=OmegaConf.to_yaml(OmegaConf.create(config)),
        tracking=tracking,
        artifacts_dir=None if artifacts is None else str(artifacts),
    )


CONF_DIR = PROJECT_ROOT / "conf"


def master_seed(conf_dir: Path = CONF_DIR) -> int:
    """The master ``seed`` of the root config (``conf/config.yaml``)."""
    return int(OmegaConf.load(conf_dir / "config.yaml").get("seed", SEED))


def compose_verifier(
    name: str, overrides: Sequence[str] = (), conf_dir: Path = CONF_DIR, seed: int | None = None
) -> DictConfig:
    """Compose ``conf/verifier/<name>.yaml`` (with its defaults) into one config node.

    Parameters
    ----------
    name : str
        File stem in ``conf/verifier/``.
    overrides : sequence of str
        Hydra overrides relative to the verifier node, e.g. ``["weights=random"]``.
    conf_dir : Path
        Config root.
    seed : int or None
        The master seed the verifier's ``seed: ${seed}`` follows (None: the root config's,
        `master_seed`), as in a run.

    Returns
    -------
    DictConfig
        The verifier node (``_target_`` and its parameters), interpolations resolved.

    Raises
    ------
    ConfigError
        A value of the wrong type for the verifier's class (`with_schemas`).
    """
    register_configs()
    seed = master_seed(conf_dir) if seed is None else seed
    was_initialized = GlobalHydra.instance().is_initialized()
    if was_initialized:
        GlobalHydra.instance().clear()
    with initialize_config_dir(config_dir=str(conf_dir), version_base="1.3"):
        cfg = compose(
            config_name=None,
            overrides=[
                f"+seed={seed}",
                f"+verifier@verifier={name}",
                *[f"verifier.{o}" for o in overrides],
            ],
        )
    OmegaConf.resolve(cfg)
    return with_schemas(cfg).verifier  # typed by its class, as a run's pre-flight types it


def build_verifier(
    name: str, overrides: Sequence[str] = (), conf_dir: Path = CONF_DIR, seed: int | None = None
) -> Any:
    """Instantiate the verifier of ``conf/verifier/<name>.yaml`` (see `compose_verifier`)."""
    return instantiate(compose_verifier(name, overrides, conf_dir, seed), _convert_="all")


def experiment_config(experiment: str, conf_dir: Path = CONF_DIR) -> dict[str, Any] | None:
    """``conf/experiment/<experiment>.yaml`` composed afresh with no overrides, as a run
    records its config (`runner.config.recorded`); None when the experiment has no file."""
    if not (conf_dir / "experiment" / f"{experiment}.yaml").exists():
        return None
    register_configs()
    GlobalHydra.instance().clear()
    with initialize_config_dir(config_dir=str(conf_dir), version_base="1.3"):
        cfg = compose("config", overrides=[f"experiment={experiment}"])
    return recorded(cfg)
