"""The artifact manifest: what exactly produced these numbers.

Resolved config and command-line overrides, git commit (dirty: modified or untracked
files), the version of every installed distribution, data file sha256 and fingerprint,
seeds, the sha256 of every model file a part loads (`runner.model_files`), and the run's
id, start time and wall time, so a reader can re-run the same thing and tell whether
anything differs.
"""

from __future__ import annotations

import dataclasses
import datetime
import functools
import platform
import re
import subprocess
import time
from collections.abc import Mapping
from dataclasses import dataclass, field
from importlib import metadata
from pathlib import Path
from typing import Any

from runner.paths import PROJECT_ROOT
from runner.results import StudyResult
from runner.run_record import RunRecord


@dataclass
class RunInfo:
    """Identity and timing of one run, filled in by the pipeline as the run goes.

    `started_perf` is `time.perf_counter()` at the start, so the manifest's wall time is a
    monotonic difference, not two wall-clock readings. `git` is `git_state()`, read once
    by the pipeline (the study is handed the same commit).
    """

    run_id: str
    started_utc: datetime.datetime = field(
        default_factory=lambda: datetime.datetime.now(datetime.UTC)
    )
    started_perf: float = field(default_factory=time.perf_counter)
    overrides: list[str] = field(default_factory=list)
    mlflow_run_id: str | None = None
    git: dict[str, Any] | None = None

    def as_dict(self) -> dict[str, Any]:
        """The manifest's `run` entry; `wall_seconds` is measured now."""
        return {
            "id": self.run_id,
            "started_utc": self.started_utc.isoformat(timespec="milliseconds"),
            "wall_seconds": round(time.perf_counter() - self.started_perf, 3),
            "overrides": list(self.overrides),
            "mlflow_run_id": self.mlflow_run_id,
        }


def git_state(root: Path = PROJECT_ROOT) -> dict[str, Any]:
    """Commit, and whether the checkout is dirty: modified or untracked files (None outside git).

    Untracked files count: a new module or data file next to the code changes what runs.
    Ignored paths (`artifacts/`, `.venv/`) do not.
    """

    def git(*args: str) -> str | None:
        try:
            out = subprocess.run(
                ["git", *args],
                cwd=root,
                capture_output=True,
                text=True,
                timeout=10,
                check=True,
            )
        except (OSError, subprocess.SubprocessError):
            return None
        return out.stdout.strip()

    commit = git("rev-parse", "HEAD")
    status = git("status", "--porcelain", "--untracked-files=all")
    if status is None:
        return {"commit": commit, "dirty": None, "modified": None, "untracked": None}
    lines = [line for line in status.splitlines() if line.strip()]
    untracked = sum(line.startswith("??") for line in lines)
    return {
        "commit": commit,
        "dirty": bool(lines),
        "modified": len(lines) - untracked,
        "untracked": untracked,
    }


def package_versions() -> dict[str, str]:
    """Version of every installed distribution (name -> version), sorted by name."""
    versions: dict[str, str] = {}
    for dist in metadata.distributions():
        name = dist.metadata["Name"]
        if name:
            versions.setdefault(canonical_name(name), dist.version)
    return dict(sorted(versions.items()))


def canonical_name(name: str) -> str:
    """PEP 503 name (`llama_cpp_python` -> `llama-cpp-python`), so lookups never miss."""
    return re.sub(r"[-_.]+", "-", name).lower()


@functools.lru_cache(maxsize=256)
def _sha256_cached(path: str, size: int, mtime_ns: int) -> str:
    from runner.data import sha256_file

    return sha256_file(path)


def file_record(path: str | Path) -> dict[str, Any]:
    """Path, size and sha256 of one file (hashed once per process while unchanged)."""
    p = Path(path).resolve()
    stat = p.stat()
    return {
        "path": str(p),
        "bytes": stat.st_size,
        "sha256": _sha256_cached(str(p), stat.st_size, stat.st_mtime_ns),
    }


def model_file_records(parts: Mapping[str, Any]) -> dict[str, Any]:
    """sha256 of the model files of every built part that loads any (key -> record).

    `parts` are the parts the pipeline built for the run (``verifiers.<name>``,
    ``judges.<name>``, ``span_detector``), each asked for `model_files()`; a part without
    the method (e.g. a judge behind an HTTP server) is recorded as having no local files,
    and one that cannot say is recorded with its error.
    """
    records: dict[str, Any] = {}
    for key, part in parts.items():
        try:
            files = getattr(part, "model_files", None)
            if files is None:
                records[key] = {"files": [], "note": "no local model files"}
            else:
                records[key] = {"files": [file_record(f) for f in files()]}
        except Exception as exc:  # recorded, never hidden: the manifest says it could not tell
            records[key] = {"error": f"{type(exc).__name__}: {exc}"}
    return records


def data_file_records(data: Any) -> list[dict[str, Any]]:
    """Path, size and sha256 of every file the data set was read from."""
    return [file_record(f) for f in data.files]


def build_manifest(
    record: RunRecord,
    result: StudyResult,
    data: Any,
    tables: list[str],
    figures: list[str],
    run_info: RunInfo | None = None,
    parts: Mapping[str, Any] | None = None,
) -> dict[str, Any]:
    """Assemble the manifest dict written as `manifest.json` and logged to MLflow.

    `parts` are the built parts whose model files are recorded (`model_file_records`);
    the git state is `run_info.git` when the pipeline read it, else read here.
    """
    dataset = None
    if data is not None:
        dataset = {
            "name": data.name,
            "files": list(data.files),
            "files_sha256": data_file_records(data),
            "fingerprint": data.fingerprint,
            "info": data.info,
        }
    return {
        "experiment": record.experiment,
        "study": record.study,
        "created_utc": datetime.datetime.now(datetime.UTC).isoformat(timespec="seconds"),
        "run": run_info.as_dict() if run_info is not None else None,
        "git": run_info.git if run_info is not None and run_info.git is not None else git_state(),
        "python": platform.python_version(),
        "platform": platform.platform(),
        "packages": package_versions(),
        "seeds": record.seeds,
        "dataset": dataset,
        "models": result.runtime.get("models", {}),
        "model_files": model_file_records(parts or {}),
        "tags": result.tags,
        "model_link": dataclasses.asdict(result.model_link) if result.model_link else None,
        "tables": tables,
        "figures": figures,
        "config": record.config,
    }
