"""``python -m runner`` in a fresh process forked from a warm one.

Why: a config mistake fails in about half a second of the runner's own work, but a fresh
interpreter first spends 2–4 s importing scikit-learn, pandas and torch. A server process
(this file, run as a script) imports the runner's modules once and never runs anything;
for each command it forks a child, which takes the command's environment, working folder
and arguments and runs ``runpy.run_module("runner")`` as ``python -m runner`` does. Every
command starts from the same untouched state, so no test sees what another did, and each
ends as a process ends: its exit status, its stdout and stderr.

With ``no_data``, the child's data loader exits with status 99 instead of reading data, so
a check that happens only after the load shows up as exit 99, not as a slow success.
"""

from __future__ import annotations

import atexit
import json
import os
import runpy
import subprocess
import sys
import tempfile
import time
from collections.abc import Mapping, Sequence
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
NO_DATA_STATUS = 99


class WarmRunner:
    """A client of the server: one command at a time, each in its own forked process."""

    def __init__(self, env: Mapping[str, str]) -> None:
        self._server = subprocess.Popen(
            [sys.executable, __file__],
            stdin=subprocess.PIPE,
            stdout=subprocess.PIPE,
            env=dict(env),
            cwd=ROOT,
            text=True,
        )
        self._outputs = tempfile.TemporaryDirectory(prefix="warm_cli_")

    def run(
        self,
        args: Sequence[str],
        *,
        env: Mapping[str, str],
        cwd: Path = ROOT,
        no_data: bool = False,
        timeout: int = 600,
    ) -> subprocess.CompletedProcess:
        """``python -m runner <args>`` run to the end, its output captured as text."""
        out, err = (Path(self._outputs.name) / name for name in ("stdout", "stderr"))
        request = {
            "args": list(args),
            "env": dict(env),
            "cwd": str(cwd),
            "stdout": str(out),
            "stderr": str(err),
            "no_data": no_data,
            "timeout": timeout,
        }
        assert self._server.stdin is not None and self._server.stdout is not None
        self._server.stdin.write(json.dumps(request) + "\n")
        self._server.stdin.flush()
        reply = self._server.stdout.readline()
        if not reply:
            raise RuntimeError(f"the warm runner exited with status {self._server.wait()}")
        status = json.loads(reply)["status"]
        command = [sys.executable, "-m", "runner", *args]
        if status is None:
            raise subprocess.TimeoutExpired(command, timeout)
        return subprocess.CompletedProcess(command, status, out.read_text(), err.read_text())

    def close(self) -> None:
        """End the server (it exits when its input closes) and remove the outputs."""
        if self._server.stdin is not None:
            self._server.stdin.close()
        self._server.wait(timeout=60)
        self._outputs.cleanup()


def _warm_up() -> None:
    """Import what a run imports before its first line of work: the pipeline and every
    class or function a conf YAML names. Nothing is registered or composed here."""
    import hydra.main  # noqa: F401

    import runner.pipeline  # noqa: F401
    from runner.config import class_entries
    from runner.paths import PROJECT_ROOT
    from runner.settings import import_path

    for _, name in class_entries([PROJECT_ROOT / "conf"]):
        import_path(name)


def _no_data(*args: object, **kwargs: object) -> None:
    sys.stderr.write("the data was loaded\n")
    sys.stderr.flush()
    os._exit(NO_DATA_STATUS)


def _child(request: dict) -> None:
    """Run one command as ``python -m runner`` would, then end the process."""
    os.environ.clear()
    os.environ.update(request["env"])
    os.chdir(request["cwd"])
    added = [p for p in request["env"].get("PYTHONPATH", "").split(os.pathsep) if p]
    sys.path[:] = [request["cwd"], *added, *_BASE_PATH]  # as a fresh `python -m` starts
    os.dup2(os.open(os.devnull, os.O_RDONLY), 0)
    for fd, path in ((1, request["stdout"]), (2, request["stderr"])):
        os.dup2(os.open(path, os.O_WRONLY | os.O_CREAT | os.O_TRUNC), fd)
    if request["no_data"]:
        import runner.pipeline

        runner.pipeline.load_data = _no_data
    sys.argv = [str(ROOT / "src" / "runner" / "__main__.py"), *request["args"]]
    status = 0
    try:
        runpy.run_module("runner", run_name="__main__", alter_sys=True)
    except SystemExit as exc:
        code = exc.code
        status = code if isinstance(code, int) else (0 if code is None else 1)
        if isinstance(code, str):
            print(code, file=sys.stderr)
    except BaseException:
        import traceback

        traceback.print_exc()
        status = 1
    atexit._run_exitfuncs()
    sys.stdout.flush()
    sys.stderr.flush()
    os._exit(status)


_BASE_PATH = [
    p
    for p in sys.path
    if p != str(Path(__file__).parent)
    and p not in os.environ.get("PYTHONPATH", "").split(os.pathsep)
]
"""The server's import path without its own folder and its ``PYTHONPATH``: the site
packages every command shares."""


def _wait(pid: int, timeout: float) -> int | None:
    """The child's exit status, or None when it ran past `timeout` (then it is killed)."""
    deadline = time.monotonic() + timeout
    while True:
        done, status = os.waitpid(pid, os.WNOHANG)
        if done:
            return os.waitstatus_to_exitcode(status)
        if time.monotonic() > deadline:
            os.kill(pid, 9)
            os.waitpid(pid, 0)
            return None
        time.sleep(0.01)


def serve() -> None:
    """Read one JSON request per line; answer each with the exit status of its child."""
    _warm_up()
    for line in sys.stdin:
        request = json.loads(line)
        sys.stdout.flush()
        pid = os.fork()
        if pid == 0:
            _child(request)
        print(json.dumps({"status": _wait(pid, request["timeout"])}), flush=True)


if __name__ == "__main__":
    serve()
