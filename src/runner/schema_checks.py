"""Check a composed config against its schemas: types, unknown keys, then values.

Why: a part's node is composed untyped (`runner.config.register_configs`: the config must
pickle for a launcher's job process), so `with_schemas` types each one by the schema of
the part its ``_target_`` names before any other check; a value of the wrong type or a key
the part does not take is refused there, naming the key and the class. A record's node
(``bootstrap``) is typed at compose time, but Hydra's hint for a missing key,
``+bootstrap.n_resamplez=5``, adds the key anyway: `check_known_keys` refuses it. Values
of the right type that cannot work (``bootstrap.n_resamples=-5``) are refused by the
schema's ``__post_init__``, run here through `OmegaConf.to_object`. None of it needs data.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Iterator

from omegaconf import DictConfig, ListConfig, OmegaConf
from omegaconf.errors import ConfigKeyError, OmegaConfBaseException

from runner.errors import ConfigError, RunnerError
from runner.settings import class_name, derive, unknown_key


def schema_nodes(node: object, path: str = "") -> Iterator[tuple[str, DictConfig, type]]:
    """Every dict node typed by a dataclass schema, with its dotted path, depth first."""
    if isinstance(node, DictConfig):
        kind = OmegaConf.get_type(node)
        if kind is not None and dataclasses.is_dataclass(kind):
            yield path, node, kind
        for key in node.keys():
            if not _skipped(node, key):
                yield from schema_nodes(node[key], f"{path}.{key}" if path else str(key))
    elif isinstance(node, ListConfig):
        for i in range(len(node)):
            if not _skipped(node, i):
                yield from schema_nodes(node[i], f"{path}[{i}]")


def _skipped(node: DictConfig | ListConfig, key: str | int) -> bool:
    """Unset values hold no schema, and an interpolation's target is visited at its own key
    (``study.gates: ${gates}`` is checked as ``gates``)."""
    return OmegaConf.is_missing(node, key) or OmegaConf.is_interpolation(node, key)


def with_schemas(cfg: DictConfig) -> DictConfig:
    """A copy of `cfg` whose every node naming a part (``_target_``) is typed by that part's
    schema (`runner.settings.derive`); a key the part does not take or a value of the wrong
    type is a `ConfigError` naming the key and the class. Interpolations stay as they are,
    so ``study: {gates: ${gates}}`` reaches the typed gates."""
    typed = cfg.copy()
    _type_children(typed, "")
    return typed


def _type_children(node: DictConfig, path: str) -> None:
    for key in list(node.keys()):
        if _skipped(node, key):
            continue
        child = node[key]
        where = f"{path}.{key}" if path else str(key)
        if not isinstance(child, DictConfig):
            continue
        if "_target_" in child and not OmegaConf.is_interpolation(child, "_target_"):
            node[key] = _typed(child, where)
            child = node[key]
        _type_children(child, where)


def _typed(node: DictConfig, where: str) -> DictConfig:
    target = str(node._target_)
    try:
        schema = derive(target)
    except (ImportError, AttributeError) as exc:
        raise ConfigError(f"{where}._target_={target!r}: cannot import it ({exc})") from exc
    try:
        return OmegaConf.merge(OmegaConf.structured(schema), node)
    except OmegaConfBaseException as exc:
        kind = exc.object_type if dataclasses.is_dataclass(exc.object_type) else schema
        inner, _, key = str(exc.full_key).rpartition(".")
        at = f"{where}.{inner}" if inner else where
        if isinstance(exc, ConfigKeyError):
            raise ConfigError(unknown_key(at, key, kind)) from exc
        first = str(exc).splitlines()[0]
        raise ConfigError(f"{at}.{key}: {first} ({class_name(kind)})") from exc


def check_known_keys(cfg: DictConfig) -> None:
    """Raise `ConfigError` for the first key that is not a field of its node's schema.

    Parameters
    ----------
    cfg : DictConfig
        The composed run config (the root is typed by `runner.config.RunConfig`).

    Raises
    ------
    ConfigError
        Names the key, the schema, the closest valid key and all valid keys.
    """
    for path, node, kind in schema_nodes(cfg):
        fields = [f.name for f in dataclasses.fields(kind)]
        for key in node.keys():
            if key not in fields:
                raise ConfigError(unknown_key(path, str(key), kind).removeprefix("."))


def check_schema_values(cfg: DictConfig) -> None:
    """Build every schema node that validates itself (``__post_init__``); raise on the first
    value that cannot work, as a `ConfigError` naming the node."""
    for path, node, kind in schema_nodes(cfg):
        if getattr(kind, "__post_init__", None) is None:
            continue
        try:
            OmegaConf.to_object(node)
        except RunnerError as exc:
            raise ConfigError(_rooted(str(exc), path)) from exc
        except OmegaConfBaseException as exc:
            raise ConfigError(f"{path}: {exc}") from exc


def _rooted(message: str, path: str) -> str:
    """The schema's message with its key named where the node sits in the run config.

    Split schemas name their keys as ``split.<key>`` (their usual place); the same schema
    composed as a named splitter (``splits.target``) gets ``splits.target.<key>``, so the
    message names the key a user must change.
    """
    if message.startswith(path):
        return message
    if path.startswith("splits.") and message.startswith("split."):
        return f"{path}.{message[len('split.') :]}"
    return f"{path}: {message}"


REQUIRED_HINTS = {
    "dataset.path": "your .jsonl, .csv or .parquet file, e.g. dataset.path=traffic.jsonl",
    "dataset.decisions": (
        "the route run's decisions, e.g. dataset.decisions=artifacts/route/latest/decisions.parquet"
    ),
    "dataset.labels": (
        "a .jsonl/.csv/.parquet file with id and label of the audited rows, e.g. "
        "dataset.labels=audit_labels.jsonl"
    ),
}


def check_named_parts(cfg: DictConfig, groups: tuple[str, ...]) -> None:
    """Every part named under `groups` (``gates``, ``splits``, ...) says what builds it."""
    for group in groups:
        for name, node in (cfg.get(group) or {}).items():
            if not isinstance(node, DictConfig) or "_target_" not in node:
                raise ConfigError(
                    f"{group}.{name}: no _target_ (which class or function builds it?)"
                )


def check_required(cfg: DictConfig) -> None:
    """Raise `ConfigError` for the first required value (``???``) left unset.

    Why here and not at the loader: an unset ``dataset.path`` otherwise surfaces as
    OmegaConf's ``MissingMandatoryValue`` traceback while the data loads, after the MLflow
    run has been opened; checked with the other config checks, it is one ``error:`` line
    before anything runs.
    """
    for path in _missing(cfg, ""):
        hint = REQUIRED_HINTS.get(path, f"set {path}=<value>")
        raise ConfigError(f"{path} is required and not set: {hint}")


def _missing(node: object, path: str) -> Iterator[str]:
    if isinstance(node, DictConfig):
        for key in node.keys():
            where = f"{path}.{key}" if path else str(key)
            if OmegaConf.is_missing(node, key):
                yield where
            elif not OmegaConf.is_interpolation(node, key):
                yield from _missing(node[key], where)
    elif isinstance(node, ListConfig):
        for i in range(len(node)):
            if OmegaConf.is_missing(node, i):
                yield f"{path}[{i}]"
            elif not OmegaConf.is_interpolation(node, i):
                yield from _missing(node[i], f"{path}[{i}]")
