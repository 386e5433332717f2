"""Shared test setup: offline flags, the real data path, and how tests start processes."""

from __future__ import annotations

import contextlib
import importlib.util
import inspect
import json
import os
import socket
import subprocess
import sys
import time
import urllib.request
import zlib
from collections.abc import Callable, Iterator, Mapping, Sequence
from pathlib import Path
from types import ModuleType
from typing import Any

import pytest
from omegaconf import DictConfig, OmegaConf
from tests import shards
from tests.warm_cli import WarmRunner

os.environ.setdefault("HF_HUB_OFFLINE", "1")
os.environ.setdefault("HF_DATASETS_OFFLINE", "1")
os.environ.setdefault("TRANSFORMERS_OFFLINE", "1")
os.environ.setdefault("MLFLOW_DISABLE_TELEMETRY", "true")
os.environ.setdefault("MPLBACKEND", "Agg")

ROOT = Path(__file__).resolve().parents[1]
SHARED_DATA = Path(__file__).resolve().parents[2] / "shared" / "data"


def pytest_addoption(parser: pytest.Parser) -> None:
    parser.addoption(
        "--shard",
        metavar="K/N",
        help="run only the K-th of N shards of the test files (tests/shards.py; make test)",
    )
    parser.addoption(
        "--record-durations",
        metavar="FILE",
        help="write the seconds each test took (setup+call+teardown) to FILE as JSON",
    )


@pytest.hookimpl(trylast=True)  # after -m/-k have deselected: only what runs is weighed
def pytest_collection_modifyitems(config: pytest.Config, items: list[pytest.Item]) -> None:
    """With ``--shard=K/N``, keep the tests of the files `tests.shards.split` gives shard K."""
    spec = config.getoption("shard")
    if not spec:
        return
    try:
        k, n = shards.parse_shard(spec)
    except ValueError as exc:
        raise pytest.UsageError(str(exc)) from None
    mine = set(shards.split([i.nodeid for i in items], n, shards.read_durations())[k - 1])
    kept = [i for i in items if shards.file_of(i.nodeid) in mine]
    dropped = [i for i in items if shards.file_of(i.nodeid) not in mine]
    if dropped:
        config.hook.pytest_deselected(items=dropped)
        items[:] = kept


_SECONDS: dict[str, float] = {}


def pytest_runtest_logreport(report: pytest.TestReport) -> None:
    _SECONDS[report.nodeid] = _SECONDS.get(report.nodeid, 0.0) + report.duration


def pytest_sessionfinish(session: pytest.Session) -> None:
    out = session.config.getoption("record_durations")
    if out:
        shards.write_durations(_SECONDS, Path(out))


def load_script(name: str) -> ModuleType:
    """Import ``scripts/<name>.py`` (scripts are not a package) as a module."""
    spec = importlib.util.spec_from_file_location(name, ROOT / "scripts" / f"{name}.py")
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def process_running(pid: int) -> bool:
    """True while `pid` runs; a zombie (exited, its parent has not reaped it yet) does not."""
    try:
        stat = Path(f"/proc/{pid}/stat").read_text()
    except FileNotFoundError:
        return False
    return stat.rsplit(")", 1)[1].split()[0] != "Z"


def real_data_dir() -> Path:
    """The real data sets: `RUNNER_DATA_DIR`, else `../shared/data`; fail loudly if absent."""
    value = os.environ.get("RUNNER_DATA_DIR")
    path = Path(value) if value else SHARED_DATA
    if not (path / "ragtruth" / "test.parquet").exists():
        pytest.fail(f"real data not found at {path}: set RUNNER_DATA_DIR (see README, Data)")
    return path


def checkout_outputs() -> set[str]:
    """What a run writes into the checkout when nothing points it elsewhere: MLflow's default
    store and artifact folder (``./mlflow.db``, ``./mlruns``) and the project's artifacts
    folder (run folders, Hydra's ``artifacts/hydra/<experiment>/<time>``), three levels down.
    The shard logs of ``make test`` (``artifacts/test-logs``) are the harness's, not a test's."""
    found = {name for name in ("mlflow.db", "mlruns") if (ROOT / name).exists()}
    level = [path for path in (ROOT / "artifacts").glob("*") if path.name != "test-logs"]
    for _ in range(3):
        found.update(path.relative_to(ROOT).as_posix() for path in level)
        level = [child for folder in level if folder.is_dir() for child in folder.iterdir()]
    return found


@pytest.fixture(scope="session", autouse=True)
def checkout_untouched() -> Iterator[None]:
    """Every test writes under its own temporary folder, never into the checkout (a user's
    own artifacts there stay as they were)."""
    before = checkout_outputs()
    yield
    added = sorted(checkout_outputs() - before)
    assert not added, f"the tests wrote into the checkout: {added}"


@pytest.fixture(autouse=True)
def torch_reseeded(request: pytest.FixtureRequest) -> None:
    """torch's global generator starts every test from the run's seed and the test's name.

    Why: the tests run in a shuffled order (pytest-randomly, see the Makefile), which
    reseeds `random` and numpy's global generator before each test but not torch's; a tiny
    model built from a config draws its weights from it, so without this what a test got
    would depend on the tests that ran before it. Seeded like pytest-randomly's own (run
    seed + the test's name), so another seed gives other draws: a test that needs
    particular numbers seeds a generator of its own.
    """
    torch = sys.modules.get("torch")
    if torch is None:  # not imported yet: it starts from its own fixed default seed
        return
    seed = request.config.getoption("randomly_seed", default=None)
    seed = seed if isinstance(seed, int) else 0  # pytest-randomly disabled (-p no:randomly)
    torch.manual_seed((seed + zlib.crc32(request.node.nodeid.encode())) % 2**32)


QUICK_TOOLS = frozenset({"git", "uname", "fc-list"})
"""Programs a fast test may start: the git state a manifest records, the platform probe, and
matplotlib's font scan (``fc-list``, once per machine: a fresh one has no font cache yet, so
the first test that draws a figure runs it, whatever its mark)."""


@pytest.fixture(autouse=True)
def processes_only_in_slow_tests(request: pytest.FixtureRequest, monkeypatch) -> None:
    """A test not marked ``slow`` that starts a process (python, a server, a browser) fails.

    Why: ``make test-fast`` must stay the quick tier; a subprocess-heavy test that is not
    marked would quietly make it slow. The mark is checked where processes start, not by
    review, so a new unmarked test says at once what to do.
    """
    if request.node.get_closest_marker("slow") is not None:
        return
    start = subprocess.Popen.__init__

    def guarded(self, args, *rest, **kwargs):
        program = args if isinstance(args, str | os.PathLike) else args[0]
        if Path(str(program).split()[0]).name not in QUICK_TOOLS:
            pytest.fail(
                f"{request.node.nodeid} starts a process ({program}) but is not marked "
                "@pytest.mark.slow: mark it, so make test-fast stays the quick tier",
                pytrace=False,
            )
        start(self, args, *rest, **kwargs)

    monkeypatch.setattr(subprocess.Popen, "__init__", guarded)


@pytest.fixture
def data_dir() -> Path:
    """Path of the real offline data sets."""
    return real_data_dir()


def run(
    cmd: Sequence[str], *, env: Mapping[str, str], cwd: Path = ROOT, timeout: int = 600
) -> subprocess.CompletedProcess:
    """Run `cmd` to the end with its output captured as text (default cwd: the project)."""
    return subprocess.run(
        list(cmd), cwd=cwd, env=dict(env), capture_output=True, text=True, timeout=timeout
    )


def run_script(name: str, *args: str, timeout: int = 300) -> subprocess.CompletedProcess:
    """``python scripts/<name>.py <args>`` in a fresh interpreter, as `make lint` runs it.

    Why a process of its own: CPython 3.11's ``ast.parse`` can raise ``SystemError: AST
    constructor recursion depth mismatch`` depending on what ran earlier in the same process
    (python/cpython#106905: the AST constructor's depth counter is interpreter-wide, so a
    thread an earlier test left parsing, or a failed parse, unbalances it). A check that
    parses source must fail only on the source, never on test order.
    """
    return run(
        [sys.executable, str(ROOT / "scripts" / f"{name}.py"), *args],
        env=os.environ,
        timeout=timeout,
    )


_CALL = """
import importlib.util, json, sys
spec = importlib.util.spec_from_file_location("fresh_process_module", sys.argv[1])
module = importlib.util.module_from_spec(spec)
spec.loader.exec_module(module)
result = getattr(module, sys.argv[2])(*json.loads(sys.argv[3]))
print(json.dumps(result))
"""


def call_in_fresh_process(function: Callable[..., Any], *args: Any, timeout: int = 300) -> Any:
    """``function(*args)`` in a new interpreter; returns what it returned.

    `function` is a module-level function (of a test module or a script), found again by its
    file and name; its arguments and result travel as JSON. For checks that run
    ``ast.parse`` (see `run_script` for why they need a process of their own). A failure in
    the child fails the test with the child's traceback.
    """
    result = run(
        [
            sys.executable,
            "-c",
            _CALL,
            inspect.getfile(function),
            function.__name__,
            json.dumps(args),
        ],
        env=os.environ,
        timeout=timeout,
    )
    if result.returncode != 0:
        pytest.fail(f"{function.__name__} failed in its own process:\n{result.stderr}")
    return json.loads(result.stdout.splitlines()[-1])


def run_runner(
    *args: str, env: Mapping[str, str], cwd: Path = ROOT, timeout: int = 600
) -> subprocess.CompletedProcess:
    """``python -m runner <args>`` in a fresh process, as a user starts a run."""
    return run([sys.executable, "-m", "runner", *args], env=env, cwd=cwd, timeout=timeout)


@pytest.fixture(scope="session")
def warm_runner() -> Iterator[WarmRunner]:
    """``python -m runner`` as a fresh process forked from one that has imported the runner
    (`tests.warm_cli`): for the many short CLI runs (config mistakes), without 2–4 s of
    imports each."""
    runner = WarmRunner({**os.environ, "PYTHONPATH": str(ROOT / "src")})
    yield runner
    runner.close()


def run_experiment(artifacts: Path, name: str, *overrides: str):
    """Compose ``experiment=<name>`` with `overrides` (artifacts under `artifacts`, no
    progress bars, the fast bootstrap) and run it in this process, as the CLI would."""
    from hydra import compose, initialize_config_dir

    from runner.config import register_configs
    from runner.pipeline import run as run_pipeline

    register_configs()
    with initialize_config_dir(config_dir=str(ROOT / "conf"), version_base="1.3"):
        cfg = compose(
            "config",
            overrides=[
                f"experiment={name}",
                "progress=false",
                "bootstrap=fast",
                f"paths.artifacts_dir={artifacts}",
                *overrides,
            ],
        )
    return run_pipeline(cfg)


def free_port() -> int:
    """A local TCP port that nothing listens on right now."""
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


@contextlib.contextmanager
def mlflow_server(
    store_uri: str, artifact_root: Path, env: Mapping[str, str], startup_s: float
) -> Iterator[str]:
    """A real ``mlflow server`` on a free port; yields its base URL once /health answers.

    Fails the test if the server exits or does not answer within `startup_s` seconds; the
    server is stopped when the block ends.
    """
    port = free_port()
    server = subprocess.Popen(
        [sys.executable, "-m", "mlflow", "server",
         "--backend-store-uri", store_uri, "--default-artifact-root", str(artifact_root),
         "--host", "127.0.0.1", "--port", str(port), "--workers", "1"],
        env=dict(env), stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL,
    )  # fmt: skip
    base = f"http://127.0.0.1:{port}"
    try:
        deadline = time.monotonic() + startup_s
        while True:
            try:
                with urllib.request.urlopen(f"{base}/health", timeout=2) as resp:
                    if resp.status == 200:
                        break
            except OSError:
                if server.poll() is not None or time.monotonic() > deadline:
                    pytest.fail(f"mlflow server did not come up (exit {server.poll()})")
                time.sleep(0.5)
        yield base
    finally:
        server.terminate()
        try:
            server.wait(timeout=20)
        except subprocess.TimeoutExpired:
            server.kill()


def load_part_yaml(path: str | Path) -> DictConfig:
    """One part's YAML (a gate, a dataset, ...) without its Hydra defaults list: what the
    file itself sets, to check against the schema derived from its class."""
    node = OmegaConf.load(path)
    if "defaults" in node:
        node = OmegaConf.masked_copy(node, [k for k in node if k != "defaults"])
    return node
