"""Hydra's own config errors (bad override, wrong type, unknown option) as one `error:` line.

Why: a user mistake on the command line should read the same whether Hydra finds it while
composing (`split.n_splits=abc`, `bootstrap.n_resamplez=5`, `experiment=nope`) or the runner
finds it in `runner.pipeline.check_config`: one line on stderr starting ``error:``, exit 2.
Hydra prints composition errors over several lines and exits 1.
`run_reporting_config_errors` shortens these errors, and only these, from Hydra's public
exception classes and their fields and its documented ``HYDRA_FULL_ERROR`` switch; nothing
of Hydra is patched (``HYDRA_FULL_ERROR=1`` set by the user still shows Hydra's report).
"""

from __future__ import annotations

import dataclasses
import difflib
import os
import sys
import typing
from collections.abc import Callable
from typing import Any

from hydra.errors import CompactHydraException, MissingConfigException
from omegaconf import DictConfig, OmegaConf
from omegaconf.errors import ConfigAttributeError, ConfigKeyError, OmegaConfBaseException


def one_line(exc: BaseException) -> str:
    """A Hydra composition error (or an OmegaConf error) on one line.

    Built from the exception's type and fields, never by reading Hydra's text beyond its
    headline (the message's first line): an unknown key gets the class whose keys they are
    and the closest one; an unknown option lists ``exc.options`` (a class's stored schema
    is no option: its name holds a dot); a value OmegaConf refused gets its headline and
    ``full_key``; an unknown top-level key, `top_level_hint`. Anything else is its message
    with the lines joined by ``; ``.
    """
    from runner.config import CLASS_MARK

    cause = exc.__cause__
    unknown = _unknown_key_of_a_part(cause)
    if unknown:
        return unknown
    if isinstance(exc, OmegaConfBaseException):
        return _omegaconf_line(exc)
    if isinstance(exc, MissingConfigException):
        group = (exc.missing_cfg_file or "").rpartition("/")[0]
        options = [o for o in exc.options or () if CLASS_MARK not in o]
        listing = f"; Available options in '{group}': {', '.join(options)}" if options else ""
        return _headline(exc) + listing
    if isinstance(cause, OmegaConfBaseException):
        parts = [_headline(exc), _omegaconf_line(cause)]
        top = _unknown_top_level_key(cause)
        if top:
            parts.append(top_level_hint(top))
        return "; ".join(parts)
    lines = (line.strip().rstrip(".") for line in str(exc).splitlines())
    return "; ".join(line for line in lines if line)


def _headline(exc: BaseException) -> str:
    return str(exc).strip().split("\n", 1)[0].strip().rstrip(".")


def _omegaconf_line(exc: OmegaConfBaseException) -> str:
    """OmegaConf's headline and the key it names (its ``object_type`` line is left out)."""
    return f"{_headline(exc)}; full_key: {exc.full_key}" if exc.full_key else _headline(exc)


def _unknown_top_level_key(cause: BaseException | None) -> str | None:
    """The key the run's root config (`runner.config.RunConfig`) refused, from the error's
    own fields (OmegaConf's ``full_key`` and ``object_type``), or None."""
    from runner.config import RunConfig

    if not isinstance(cause, ConfigKeyError | ConfigAttributeError):
        return None
    key = str(cause.full_key or "")
    if not key or "." in key or getattr(cause, "object_type", None) is not RunConfig:
        return None
    return key


def _unknown_key_of_a_part(cause: BaseException | None) -> str | None:
    """A key its node does not take, named with the class whose fields the keys are.

    A part's node is composed untyped (struct mode refuses the key with no class to name),
    so the part its ``_target_`` names (or the record a field of it is) says which keys it
    takes; a record's node (``bootstrap``) is typed by its own class. A top-level key is
    `top_level_hint`'s."""
    if not isinstance(cause, ConfigKeyError | ConfigAttributeError):
        return None
    where, _, key = str(cause.full_key).rpartition(".")
    kind = _schema_of(getattr(cause, "parent_node", None)) if where else None
    if kind is None:
        return None
    from runner.settings import unknown_key

    return unknown_key(where, key, kind)


def _schema_of(node: Any) -> type | None:
    """The dataclass whose fields `node`'s keys are, or None."""
    from runner.settings import derive

    path: list[str] = []
    while isinstance(node, DictConfig):
        kind = OmegaConf.get_type(node)
        if dataclasses.is_dataclass(kind):
            break
        if "_target_" in node:
            kind = derive(str(node._target_))
            break
        path.insert(0, str(node._key()))
        node = node._get_parent()
    else:
        return None
    for key in path:
        kind = typing.get_type_hints(kind).get(key)
        if not dataclasses.is_dataclass(kind):
            return None
    return kind  # type: ignore[return-value]


def top_level_hint(key: str) -> str:
    """What to write instead of an unknown top-level key (`runner.config.RunConfig`'s fields).

    ``gate.x=1`` -> use ``gates.<name>.x`` (the gates are named, as in the experiment's
    YAML); otherwise the closest key and the list of valid ones.
    """
    from runner.config import NAMED_PARTS, RunConfig

    valid = [f.name for f in dataclasses.fields(RunConfig)]
    close = difflib.get_close_matches(key, valid, n=1, cutoff=0.6)
    if close and close[0] in NAMED_PARTS:
        group = close[0]
        return (
            f"top-level keys are runner.config.RunConfig's; did you mean {group}.<name>.<key>? "
            f"{group} are named in the experiment's YAML (python -m runner experiment=<name> "
            f"--cfg job shows them)"
        )
    hint = f"did you mean {close[0]!r}? " if close else ""
    return f"top-level keys are runner.config.RunConfig's: {hint}valid: {', '.join(valid)}"


def run_reporting_config_errors(main: Callable[[], Any]) -> Any:
    """Call Hydra's `main`; a composition error becomes one ``error:`` line and exit 2.

    Hydra prints such errors itself and exits 1 unless ``HYDRA_FULL_ERROR=1``, in which
    case it raises them as they are; so the variable is set for the call (a user who set it
    keeps Hydra's full report, as Hydra documents) and the error is caught here, through
    Hydra's public exception classes only. Any other exception propagates with its whole
    traceback.
    """
    if os.environ.get("HYDRA_FULL_ERROR") == "1":
        return main()
    os.environ["HYDRA_FULL_ERROR"] = "1"
    try:
        return main()
    except CompactHydraException as exc:
        print(f"error: {one_line(exc)}", file=sys.stderr)
        sys.exit(2)
    finally:
        os.environ.pop("HYDRA_FULL_ERROR", None)
