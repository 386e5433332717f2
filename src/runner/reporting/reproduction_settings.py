"""A run's settings against its experiment's reproduction settings (composed afresh).

A run counts as the reproduction only when the settings that shape its cells equal those
of its experiment's config as it stands, composed by Hydra with no overrides.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from typing import Any

from runner.reporting.logged_runs import LoggedRun

NOT_SETTINGS = ("experiment", "paths", "progress", "tracking", "hydra")
"""Top-level config keys that do not change a number (where outputs go, logging, bars)."""

IGNORED_SETTINGS = frozenset(
    {
        "dataset.data_dir",
        "dataset.hub_id",
        "study.params.time_gates",
        "study.params.timing_rows",
        "study.params.timing_repeats",
    }
)
"""Settings that change where data comes from or what is timed, not the table cells."""

SettingsFn = Callable[[str], "dict[str, Any] | None"]


def dotted_keys(node: Any, prefix: str = "") -> dict[str, Any]:
    """Nested config as dotted keys (lists stay values)."""
    if not isinstance(node, Mapping):
        return {prefix: node}
    out: dict[str, Any] = {}
    for key, value in node.items():
        out.update(dotted_keys(value, f"{prefix}.{key}" if prefix else str(key)))
    return out


def settings(config: Mapping[str, Any]) -> dict[str, Any]:
    """The settings that shape a run's cells: every config key but outputs and logging."""
    kept = {k: v for k, v in config.items() if k not in NOT_SETTINGS}
    return {k: v for k, v in dotted_keys(kept).items() if k not in IGNORED_SETTINGS and _shapes(k)}


def _shapes(key: str) -> bool:
    """Of the study's node only its parameters are settings: its class is the experiment's,
    and its parts (``study.gates: ${gates}``) are counted at their own keys."""
    return not key.startswith("study.") or key.startswith("study.params.")


def reproduction_settings(experiment: str) -> dict[str, Any] | None:
    """The experiment's reproduction settings: its config composed afresh, no overrides
    (`runner.config.experiment_config`).

    None when the experiment has no config file (then no run of it counts as the
    reproduction).
    """
    from runner.config import experiment_config

    config = experiment_config(experiment)
    return None if config is None else settings(config)


def setting_differences(
    run: LoggedRun, reproduction: SettingsFn = reproduction_settings
) -> list[tuple[str, Any, Any]] | None:
    """(key, this run's value, the reproduction's value) for every setting that differs.

    None when the experiment has no reproduction settings.
    """
    wanted = reproduction(run.experiment)
    if wanted is None:
        return None
    have = settings(run.manifest.get("config") or {})
    out = []
    # A null setting means "not set": a run logged before a key existed equals one that
    # leaves it null.
    for key in sorted(set(have) | set(wanted)):
        a, b = have.get(key), wanted.get(key)
        if a != b:
            out.append((key, a, b))
    return out
