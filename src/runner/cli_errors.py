"""Hydra's own config errors (bad override, wrong type, unknown option) as one `error:` line.

Why: a user mistake on the command line should read the same whether Hydra finds it while
composing (`split.n_splits=abc`, `bootstrap.n_resamplez=5`, `experiment=nope`) or the runner
finds it in `runner.pipeline.check_config`: one line on stderr starting ``error:``, exit 2.
Hydra prints composition errors over several lines, adds a hint to append the key with
``+`` (which the runner refuses for keys not in the schema), and exits 1.
`run_reporting_config_errors` shortens these errors, and only these, using Hydra's public
exception classes and its documented ``HYDRA_FULL_ERROR`` switch; nothing of Hydra is
patched (``HYDRA_FULL_ERROR=1`` set by the user still shows Hydra's full report).
"""

from __future__ import annotations

import dataclasses
import difflib
import os
import sys
import typing
from collections.abc import Callable
from typing import Any

from hydra.errors import CompactHydraException
from omegaconf import DictConfig, OmegaConf
from omegaconf.errors import ConfigAttributeError, ConfigKeyError, OmegaConfBaseException

_HINT_PREFIX = "To append to your config use"


def one_line(exc: BaseException) -> str:
    """The message of a Hydra composition error (and its OmegaConf cause) on one line.

    Lines are joined with ``; ``; Hydra's hint to append a key with ``+``, its config
    search path and the schema entries (dotted class names) are dropped; "Available options"
    lists are kept, comma-joined.
    """
    unknown = _unknown_key_of_a_part(exc.__cause__)
    if unknown:
        return unknown
    parts: list[str] = []
    texts = [str(exc)]
    if isinstance(exc.__cause__, OmegaConfBaseException):
        texts.append(str(exc.__cause__))
    for text in texts:
        lines = [ln.strip() for ln in text.splitlines()]
        if "Config search path:" in lines:
            lines = lines[: lines.index("Config search path:")]
        options: list[str] = []
        for ln in lines:
            if not ln or ln.startswith(_HINT_PREFIX) or ln.startswith("object_type="):
                continue
            if options and not ln.endswith(":"):
                if "." not in ln:  # a class's schema (runner.gates.LogitGate), not an option
                    options.append(ln)
                continue
            if ln.startswith("Available options"):
                options.append(ln)
                continue
            parts.append(ln.rstrip("."))
        if options:
            parts.append(f"{options[0]} {', '.join(options[1:])}")
    top = _unknown_top_level_key(exc.__cause__)
    if top:
        parts.append(top_level_hint(top))
    return "; ".join(dict.fromkeys(parts))


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
