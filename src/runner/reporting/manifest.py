"""The artifact manifest: what exactly produced these numbers.

Resolved config, git commit (and whether the tree was dirty), package versions, data
file fingerprints, seeds and the models used, so a reader can re-run the same thing.
"""

from __future__ import annotations

import datetime as dt
import importlib.metadata as md
import platform
import subprocess
import time
from dataclasses import dataclass, field
from typing import Any

from omegaconf import DictConfig, OmegaConf

from runner.paths import PROJECT_ROOT
from runner.results import StudyResult

PACKAGES = (
    "runner",
    "hydra-core",
    "omegaconf",
    "scikit-learn",
    "numpy",
    "scipy",
    "pandas",
    "pyarrow",
    "datasets",
    "transformers",
    "tokenizers",
    "torch",
    "mlflow",
    "matplotlib",
)


@dataclass
class RunInfo:
    """Identity and timing of one run, filled in by the pipeline as the run goes.

    `started_perf` is `time.perf_counter()` at the start, so the manifest's wall time is a
    monotonic difference, not two wall-clock readings.
    """

    run_id: str
    started_utc: dt.datetime = field(default_factory=lambda: dt.datetime.now(dt.UTC))
    started_perf: float = field(default_factory=time.perf_counter)
    overrides: list[str] = field(default_factory=list)
    mlflow_run_id: str | None = None

    def as_dict(self) -> dict[str, Any]:
        """The manifest's `run` entry; `wall_seconds` is measured now."""
        return {
            "id": self.run_id,
            "started_utc": self.started_utc.isoformat(timespec="milliseconds"),
            "wall_seconds": round(time.perf_counter() - self.started_perf, 3),
            "overrides": list(self.overrides),
            "mlflow_run_id": self.mlflow_run_id,
        }


def git_state() -> dict[str, Any]:
    """Commit hash and dirty flag of the project checkout (None outside git)."""

    def git(*args: str) -> str | None:
        try:
            out = subprocess.run(
                ["git", *args],
                cwd=PROJECT_ROOT,
                capture_output=True,
                text=True,
                timeout=10,
                check=True,
            )
        except (OSError, subprocess.SubprocessError):
            return None
        return out.stdout.strip()

    commit = git("rev-parse", "HEAD")
    status = git("status", "--porcelain", "--untracked-files=no")
    return {"commit": commit, "dirty": bool(status) if status is not None else None}


def package_versions() -> dict[str, str | None]:
    """Installed versions of the packages that shape the numbers."""
    versions: dict[str, str | None] = {}
    for name in PACKAGES:
        try:
            versions[name] = md.version(name)
        except md.PackageNotFoundError:
            versions[name] = None
    return versions


def collect_seeds(cfg: DictConfig) -> dict[str, Any]:
    """Every `seed`/`random_state` value in the resolved config, by dotted key."""
    found: dict[str, Any] = {}

    def walk(node: Any, prefix: str) -> None:
        if isinstance(node, dict):
            for key, value in node.items():
                path = f"{prefix}.{key}" if prefix else str(key)
                if key in ("seed", "random_state") and not isinstance(value, (dict, list)):
                    found[path] = value
                walk(value, path)
        elif isinstance(node, list):
            for i, value in enumerate(node):
                walk(value, f"{prefix}[{i}]")

    walk(OmegaConf.to_container(cfg, resolve=True), "")
    return found


def build_manifest(
    cfg: DictConfig,
    result: StudyResult,
    data: Any,
    tables: list[str],
    figures: list[str],
    run_info: RunInfo | None = None,
) -> dict[str, Any]:
    """Assemble the manifest dict written as `manifest.json` and logged to MLflow."""
    dataset = None
    if data is not None:
        dataset = {
            "name": data.name,
            "files": list(data.files),
            "fingerprint": data.fingerprint,
            "info": data.info,
        }
    return {
        "experiment": cfg.experiment,
        "study": cfg.study.name,
        "created_utc": dt.datetime.now(dt.UTC).isoformat(timespec="seconds"),
        "run": run_info.as_dict() if run_info is not None else None,
        "git": git_state(),
        "python": platform.python_version(),
        "platform": platform.platform(),
        "packages": package_versions(),
        "seeds": collect_seeds(cfg),
        "dataset": dataset,
        "models": result.runtime.get("models", {}),
        "tags": result.tags,
        "tables": tables,
        "figures": figures,
        "config": OmegaConf.to_container(cfg, resolve=True),
    }
