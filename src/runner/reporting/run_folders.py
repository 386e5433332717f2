"""One folder per run, and an atomic `latest` pointer to the newest complete one.

Why: a run must never destroy an earlier result. Each run writes into a hidden temporary
folder beside its final place (`<experiment>/runs/.<id>.tmp/`), renames it to
`<experiment>/runs/<id>/` only when every file (manifest last) is on disk, and only then
switches `<experiment>/latest`, a relative symlink replaced with `os.replace` (atomic on
POSIX). A run stopped half-way (an error, Ctrl-C, SIGTERM) removes its `.tmp` folder; one
killed outright (SIGKILL, a machine gone) leaves it, and a later run of the experiment
removes it once the process named in its `.owner` file is gone (`remove_abandoned`);
readers follow `latest` and never see it. Two runs of one experiment at once write into
different folders; the pointer and the retention sweep are switched under an exclusive
`fcntl` lock on `<experiment>/.lock`, so the pointer always names the newest complete run
(by run id, which sorts by start time).

Layout::

    artifacts/<experiment>/
      latest -> runs/<newest id>
      runs/<id>/            cells.csv, scores.parquet, tables/, figures/, manifest.json, ...
      runs/.<id>.tmp/       a run still writing (or one that was killed)
      runs/.<id>.owner      the process writing it: host, PID namespace, PID
      multirun/<sweep>/<job overrides>/   the same layout per sweep job (latest, runs/)
"""

from __future__ import annotations

import contextlib
import datetime
import fcntl
import json
import logging
import os
import re
import secrets
import shutil
import socket
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path

from runner.errors import ConfigError

log = logging.getLogger(__name__)

LATEST = "latest"
RUNS = "runs"
MULTIRUN = "multirun"
TMP_SUFFIX = ".tmp"
OWNER_SUFFIX = ".owner"
"""Beside a run's `.tmp` folder: which process writes it (`this_process`)."""
COMPLETE_MARKER = "manifest.json"
"""Written last into a run folder: a run folder without it is not complete."""

_RUN_ID = re.compile(r"^\d{8}T\d{6}\d{6}Z-[0-9a-f]{6}$")


def new_run_id(now: datetime.datetime | None = None) -> str:
    """A sortable, unique run id: UTC time to the microsecond + 6 random hex digits."""
    now = now or datetime.datetime.now(datetime.UTC)
    return f"{now:%Y%m%dT%H%M%S%f}Z-{secrets.token_hex(3)}"


def is_run_id(name: str) -> bool:
    """True for names made by `new_run_id` (so stray folders are never touched)."""
    return bool(_RUN_ID.match(name))


@contextlib.contextmanager
def experiment_lock(exp_dir: Path) -> Iterator[None]:
    """Exclusive lock on `<exp_dir>/.lock` (blocks until free; released on exit or death)."""
    exp_dir.mkdir(parents=True, exist_ok=True)
    with open(exp_dir / ".lock", "a") as handle:
        fcntl.flock(handle, fcntl.LOCK_EX)
        try:
            yield
        finally:
            fcntl.flock(handle, fcntl.LOCK_UN)


@dataclass(frozen=True)
class RunFolder:
    """Where one run writes (`tmp_dir`) and where it will live when complete (`run_dir`)."""

    exp_dir: Path
    run_id: str

    @property
    def run_dir(self) -> Path:
        return self.exp_dir / RUNS / self.run_id

    @property
    def tmp_dir(self) -> Path:
        return self.exp_dir / RUNS / f".{self.run_id}{TMP_SUFFIX}"

    @property
    def owner_file(self) -> Path:
        return self.exp_dir / RUNS / f".{self.run_id}{OWNER_SUFFIX}"

    @classmethod
    def planned(cls, exp_dir: Path, run_id: str | None = None) -> RunFolder:
        """The run's folders, named but not made yet (`make` makes the temporary one): a
        run that is stopped right after making it still knows what to remove."""
        return cls(Path(exp_dir), run_id or new_run_id())

    @classmethod
    def create(cls, exp_dir: Path, run_id: str | None = None) -> RunFolder:
        """Make the run's temporary folder (its final folder must not exist yet)."""
        folder = cls.planned(exp_dir, run_id)
        folder.make()
        return folder

    def make(self) -> None:
        """Make the temporary folder (its final folder must not exist yet), its owner file
        first: a `.tmp` folder never exists without the process that writes it named."""
        if self.run_dir.exists():
            raise FileExistsError(f"run folder {self.run_dir} exists already")
        self.tmp_dir.parent.mkdir(parents=True, exist_ok=True)
        self.owner_file.write_text(json.dumps(this_process()))
        self.tmp_dir.mkdir()

    def discard(self) -> None:
        """Remove the temporary folder of a run that failed (its final folder is untouched)."""
        shutil.rmtree(self.tmp_dir, ignore_errors=True)
        self.owner_file.unlink(missing_ok=True)


def this_process() -> dict:
    """What names this process to a later run: host, PID namespace (None off Linux) and PID."""
    try:
        namespace = os.readlink("/proc/self/ns/pid")
    except OSError:
        namespace = None
    return {"host": socket.gethostname(), "pid_namespace": namespace, "pid": os.getpid()}


def _process_gone(owner: Path) -> bool:
    """Whether the process `owner` names is certainly gone: one of this host and PID
    namespace (another machine's or container's PIDs cannot be checked from here) that no
    longer exists. An unreadable file, or a PID now used by another process, counts as
    not gone: a folder is kept rather than removed from under a run."""
    try:
        record = json.loads(owner.read_text())
        pid = int(record["pid"])
    except (OSError, ValueError, KeyError, TypeError):
        return False
    here = this_process()
    if (record.get("host"), record.get("pid_namespace")) != (here["host"], here["pid_namespace"]):
        return False
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return True
    except PermissionError:  # another user's process: alive
        return False
    return False


def remove_abandoned(exp_dir: Path) -> list[Path]:
    """Remove the `.tmp` folders of an experiment's runs whose process is gone; return them.

    A run killed outright (SIGKILL, the OOM killer) cannot clean up after itself. Safe with
    runs at once: a run still writing is alive, and a folder without an owner file (a run
    of an older runner) or of another host is kept. Best effort: what cannot be removed
    stays, and the run that asked goes on.
    """
    removed = []
    for owner in sorted((Path(exp_dir) / RUNS).glob(f".*{OWNER_SUFFIX}")):
        if not _process_gone(owner):
            continue
        tmp = owner.with_name(owner.name.removesuffix(OWNER_SUFFIX) + TMP_SUFFIX)
        shutil.rmtree(tmp, ignore_errors=True)
        with contextlib.suppress(OSError):
            owner.unlink()
        removed.append(tmp)
    return removed


def publish(folder: RunFolder, keep_runs: int | None = None) -> Path:
    """Make a finished run visible: rename its folder, switch `latest`, apply retention.

    The manifest must already be in the temporary folder; it marks the run complete.
    Returns the run's final folder.
    """
    if not (folder.tmp_dir / COMPLETE_MARKER).is_file():
        raise RuntimeError(f"{folder.tmp_dir}: no {COMPLETE_MARKER}, the run is not complete")
    os.rename(folder.tmp_dir, folder.run_dir)
    folder.owner_file.unlink(missing_ok=True)
    with experiment_lock(folder.exp_dir):
        complete = complete_runs(folder.exp_dir)
        _point_latest(folder.exp_dir, complete[-1])
        if keep_runs is not None:
            _apply_retention(folder.exp_dir, complete, keep_runs, protect=folder.run_id)
    return folder.run_dir


def complete_runs(exp_dir: Path) -> list[str]:
    """Ids of the complete runs of an experiment folder, oldest first."""
    runs = Path(exp_dir) / RUNS
    if not runs.is_dir():
        return []
    return sorted(
        p.name for p in runs.iterdir() if is_run_id(p.name) and (p / COMPLETE_MARKER).is_file()
    )


def _point_latest(exp_dir: Path, run_id: str) -> None:
    link = exp_dir / LATEST
    tmp = exp_dir / f".{LATEST}-{secrets.token_hex(4)}{TMP_SUFFIX}"
    os.symlink(f"{RUNS}/{run_id}", tmp)
    os.replace(tmp, link)


def _apply_retention(exp_dir: Path, complete: list[str], keep_runs: int, protect: str) -> None:
    """Delete the oldest complete runs beyond `keep_runs`.

    Never deleted: the latest, the run just published (`protect`, still being logged) and
    any `.tmp` folder (a run still writing).
    """
    if keep_runs < 1:
        raise ConfigError(f"paths.keep_runs must be >= 1 or null (keep all), got {keep_runs}")
    latest = latest_run_dir(exp_dir)
    for run_id in complete[: max(0, len(complete) - keep_runs)]:
        path = exp_dir / RUNS / run_id
        if run_id == protect or (latest is not None and path.resolve() == latest.resolve()):
            continue
        log.info("retention (paths.keep_runs=%d): removing %s", keep_runs, path)
        shutil.rmtree(path, ignore_errors=True)


def latest_run_dir(exp_dir: Path) -> Path | None:
    """The folder of an experiment's newest complete run, or None when there is none.

    Readers (`make tables`, tests, notebooks) use this instead of building
    `artifacts/<experiment>/cells.csv` by hand.
    """
    link = Path(exp_dir) / LATEST
    if not link.is_symlink():
        return None
    target = link.parent / os.readlink(link)
    if not (target / COMPLETE_MARKER).is_file():
        return None
    return target


def incomplete_runs(exp_dir: Path) -> list[Path]:
    """Temporary folders of runs still writing or killed while writing."""
    runs = Path(exp_dir) / RUNS
    if not runs.is_dir():
        return []
    return sorted(
        p for p in runs.iterdir() if p.name.startswith(".") and p.name.endswith(TMP_SUFFIX)
    )


def why_no_latest(exp_dir: Path) -> str:
    """One line saying why `latest_run_dir(exp_dir)` is None (for `make tables`)."""
    exp_dir = Path(exp_dir)
    link = exp_dir / LATEST
    partial = incomplete_runs(exp_dir)
    if link.is_symlink():
        target = link.parent / os.readlink(link)
        if not target.exists():
            return f"{link} points at {target}, which does not exist"
        return f"{link} points at {target}, which has no {COMPLETE_MARKER} (incomplete run)"
    if partial:
        names = ", ".join(p.name for p in partial)
        return (
            f"no complete run, only incomplete run folder(s) {names} in {exp_dir / RUNS} "
            "(still running, or killed before they finished)"
        )
    if (exp_dir / "cells.csv").exists() or (exp_dir / COMPLETE_MARKER).exists():
        return f"{exp_dir} holds outputs of the old layout (no runs/, no latest): rerun the study"
    if not exp_dir.exists():
        return f"no run yet ({exp_dir} does not exist)"
    return f"no complete run in {exp_dir}"
