"""Hydra's own config errors (bad override, wrong type, unknown option) as one `error:` line.

Why: a user mistake on the command line should read the same whether Hydra finds it while
composing (`split.n_splits=abc`, `bootstrap.n_resamplez=5`, `experiment=nope`) or the runner
finds it in `runner.pipeline.check_config`: one line on stderr starting ``error:``, exit 2.
Hydra prints composition errors over several lines, adds a hint to append the key with
``+`` (which the runner refuses for keys not in the schema), and exits 1. `install` wraps
Hydra's reporter so that these errors, and only these, are shortened; anything else keeps
Hydra's report (and ``HYDRA_FULL_ERROR=1`` still shows the full trace).
"""

from __future__ import annotations

import os
import sys
from collections.abc import Callable
from typing import Any

from hydra.errors import CompactHydraException
from omegaconf.errors import OmegaConfBaseException

_HINT_PREFIX = "To append to your config use"


def one_line(exc: BaseException) -> str:
    """The message of a Hydra composition error (and its OmegaConf cause) on one line.

    Lines are joined with ``; ``; Hydra's hint to append a key with ``+``, its config
    search path and the schema entries (dotted class names) are dropped; "Available options"
    lists are kept, comma-joined.
    """
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
    return "; ".join(dict.fromkeys(parts))


def _reporting(original: Callable[[Any], Any]) -> Callable[[Any], Any]:
    def run_and_report(func: Any) -> Any:
        def guarded() -> Any:
            try:
                return func()
            except CompactHydraException as exc:
                if os.environ.get("HYDRA_FULL_ERROR") == "1":
                    raise
                print(f"error: {one_line(exc)}", file=sys.stderr)
                sys.exit(2)

        return original(guarded)

    run_and_report.wrapped = original  # type: ignore[attr-defined]
    return run_and_report


def install() -> None:
    """Route Hydra's error reporter through `one_line` for composition errors (idempotent)."""
    from hydra._internal import utils

    if not hasattr(utils.run_and_report, "wrapped"):
        utils.run_and_report = _reporting(utils.run_and_report)
