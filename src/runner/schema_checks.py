"""Check a composed config against its structured schemas: unknown keys, then values.

Why: struct mode stops a misspelt override (`bootstrap.n_resamplez=5`) only when it is a
plain override. Hydra's own hint for a missing key, `+bootstrap.n_resamplez=5`, opens the
node and adds the key, so a typo would be silently ignored and the run would use the
default. The composed nodes still carry their schema's type, so every key can be checked
against the dataclass's fields, however it was added. Values of the right type that cannot
work (`bootstrap.n_resamples=-5`) are refused by the schema's ``__post_init__``, which runs
here through `OmegaConf.to_object`: all of this needs no data, so it runs before any load.
"""

from __future__ import annotations

import dataclasses
import difflib
from collections.abc import Iterator

from omegaconf import DictConfig, ListConfig, OmegaConf
from omegaconf.errors import OmegaConfBaseException

from runner.errors import ConfigError, RunnerError


def schema_nodes(node: object, path: str = "") -> Iterator[tuple[str, DictConfig, type]]:
    """Every dict node typed by a dataclass schema, with its dotted path, depth first."""
    if isinstance(node, DictConfig):
        kind = OmegaConf.get_type(node)
        if kind is not None and dataclasses.is_dataclass(kind):
            yield path, node, kind
        for key in node.keys():
            if OmegaConf.is_missing(node, key):
                continue
            child = node._get_node(key)
            yield from schema_nodes(child, f"{path}.{key}" if path else str(key))
    elif isinstance(node, ListConfig):
        for i in range(len(node)):
            if not OmegaConf.is_missing(node, i):
                yield from schema_nodes(node._get_node(i), f"{path}[{i}]")


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
            if key in fields:
                continue
            where = f"{path}.{key}" if path else str(key)
            close = difflib.get_close_matches(str(key), fields, n=1)
            hint = f"did you mean {close[0]!r}? " if close else ""
            valid = ", ".join(f for f in fields if not f.startswith("_"))
            raise ConfigError(
                f"{where}: unknown key ({kind.__name__} has no {key!r}); {hint}valid keys: {valid}"
            )


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
            else:
                yield from _missing(node._get_node(key), where)
    elif isinstance(node, ListConfig):
        for i in range(len(node)):
            if OmegaConf.is_missing(node, i):
                yield f"{path}[{i}]"
            else:
                yield from _missing(node._get_node(i), f"{path}[{i}]")
