"""`route` in batches: the same decisions at any batch size, on Ray, and after a kill.

A gate is fitted on the fixture file (real MLflow on SQLite) and routes traffic made by
resampling the fixture's rows with new ids, as Parquet shards.
"""

from __future__ import annotations

import contextlib
import json
import os
import signal
import socket
import subprocess
import sys
import tempfile
import threading
import time
from collections.abc import Iterator
from pathlib import Path

import numpy as np
import pandas as pd
import pytest
from tests.conftest import free_port, load_script, real_data_dir
from tests.conftest import run_experiment as experiment

from runner.data.rag_file import load_rag_file
from runner.data.ragtruth import load_ragtruth
from runner.errors import DataError
from runner.reporting.outputs import write_parquet
from runner.routing.route import engines
from runner.routing.route.registry import load_routed_model
from runner.routing.route.stream import route_frame
from runner.routing.route.traffic import audit_sample

ROOT = Path(__file__).resolve().parents[2]
FIXTURE = ROOT / "tests" / "fixtures" / "rag_file" / "rag_example.jsonl"
URI = "routing.model_uri=models:/ragscope_e@champion"
pytestmark = pytest.mark.slow


@pytest.fixture(scope="module")
def artifacts(tmp_path_factory) -> Path:
    folder = tmp_path_factory.mktemp("stream_route")
    experiment(folder, "fit_gate", f"dataset.path={FIXTURE}")
    return folder


def traffic(folder: Path, rows: int, shard_rows: int = 250, seed: int = 0) -> Path:
    """`rows` fixture rows drawn with replacement, new ids, as Parquet shards."""
    pool = load_rag_file(str(FIXTURE)).frame
    picked = pool.iloc[np.random.default_rng(seed).integers(0, len(pool), rows)]
    frame = pd.DataFrame(
        {
            "id": [f"t{i}" for i in range(rows)],
            "question": picked["question"].to_numpy(),
            "context": picked["context"].to_numpy(),
            "answer": picked["answer"].to_numpy(),
            "label": picked["label"].to_numpy(),
            "source": picked["source"].to_numpy(),
            "task": picked["task"].to_numpy(),
        }
    )
    folder.mkdir(parents=True, exist_ok=True)
    for k, start in enumerate(range(0, rows, shard_rows)):
        frame.iloc[start : start + shard_rows].to_parquet(
            folder / f"part-{k:05d}.parquet", index=False
        )
    return folder


def route(artifacts: Path, data: Path, *overrides: str):
    return experiment(artifacts, "route", f"dataset.path={data}", URI, *overrides)


def decisions(outcome) -> pd.DataFrame:
    return pd.read_parquet(outcome.output_dir / "decisions.parquet")


def test_a_small_file_gives_the_bytes_of_routing_it_whole(artifacts, tmp_path):
    """One batch: the decisions file is byte for byte the whole-file computation."""
    routed = route(artifacts, FIXTURE, "routing.audit_fraction=0.25")
    model = load_routed_model(f"sqlite:///{artifacts / 'mlflow.db'}", "models:/ragscope_e@champion")
    frame = load_rag_file(str(FIXTURE)).frame
    whole, _, _ = route_frame(model, frame, "warn", model.metadata["training_sources"])
    audit = audit_sample(whole["decision"].to_numpy(dtype=object), 0.25, seed=13)
    whole.insert(3, "audit", audit)
    write_parquet(whole, tmp_path / "whole.parquet")
    assert (routed.output_dir / "decisions.parquet").read_bytes() == (
        tmp_path / "whole.parquet"
    ).read_bytes()


def test_the_batch_size_changes_no_decision_no_audit_id_and_no_table(artifacts, tmp_path):
    data = traffic(tmp_path / "traffic", 640)
    runs = {
        b: route(artifacts, data, f"routing.batch_rows={b}", "routing.audit_fraction=0.1")
        for b in (1000, 64, 37)
    }
    one = decisions(runs[1000])
    assert len(one) == 640 and one["id"].is_unique
    for b in (64, 37):
        pd.testing.assert_frame_equal(decisions(runs[b]), one)
        assert (runs[b].output_dir / "cells.csv").read_bytes() == (
            runs[1000].output_dir / "cells.csv"
        ).read_bytes()
    assert (
        set(one.loc[one["audit"], "id"]) == set(decisions(runs[37]).query("audit")["id"])
        and one["audit"].sum() > 0
    )
    runtime = json.loads((runs[37].output_dir / "runtime.json").read_text())
    assert runtime["stream"]["batches"] == 18  # 3 shards of 250 rows (then 140), 37 a batch


def _children(pid: int) -> list[int]:
    """The processes `pid` started (its forked workers), from /proc."""
    path = Path(f"/proc/{pid}/task/{pid}/children")
    return [int(x) for x in path.read_text().split()] if path.exists() else []


def _wait_gone(pids: list[int], seconds: float = 30.0) -> None:
    deadline = time.time() + seconds
    while any(Path(f"/proc/{p}").exists() for p in pids):
        assert time.time() < deadline, f"worker processes {pids} outlived their driver"
        time.sleep(0.1)


def test_a_route_killed_halfway_continues_and_ends_with_every_id_once(artifacts, tmp_path):
    data = traffic(tmp_path / "traffic", 1000)
    work = tmp_path / "work"
    env = {
        **os.environ,
        "RUNNER_ARTIFACTS_DIR": str(artifacts),
        "PYTHONPATH": str(ROOT / "src") + os.pathsep + str(ROOT),
    }
    command = [
        sys.executable,
        "-m",
        "runner",
        "experiment=route",
        f"dataset.path={data}",
        URI,
        "routing.batch_rows=20",
        f"routing.work_dir={work}",
        "progress=false",
    ]
    proc = subprocess.Popen(command, env=env, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    done = 0
    deadline = time.time() + 180
    while done < 10:
        manifests = list(work.glob("*/manifest.json"))
        if manifests:
            try:
                done = len(json.loads(manifests[0].read_text())["done"])
            except (json.JSONDecodeError, FileNotFoundError):
                pass  # replaced while read
        assert proc.poll() is None, "route ended before it could be killed"
        assert time.time() < deadline
        time.sleep(0.05)
    workers = _children(proc.pid)
    proc.send_signal(signal.SIGKILL)
    proc.wait()
    _wait_gone(workers)  # a forked worker ends with its killed driver
    killed_at = len(json.loads(next(work.glob("*/manifest.json")).read_text())["done"])
    assert 10 <= killed_at < 52  # 4 shards of 250 rows: 13 batches each

    resumed = route(artifacts, data, "routing.batch_rows=20", f"routing.work_dir={work}")
    stream = json.loads((resumed.output_dir / "runtime.json").read_text())["stream"]
    assert stream["batches_resumed"] == killed_at and stream["batches"] == 52
    assert stream["batches_resumed"] + stream["batches_routed_by_this_run"] == 52
    out = decisions(resumed)
    assert out["id"].is_unique and sorted(out["id"]) == sorted(f"t{i}" for i in range(1000))
    fresh = route(
        artifacts, data, "routing.batch_rows=20", f"routing.work_dir={tmp_path / 'fresh'}"
    )
    pd.testing.assert_frame_equal(out, decisions(fresh))


def test_an_id_repeated_in_a_later_batch_is_named_or_listed_as_the_whole_file_does(
    artifacts, tmp_path
):
    data = traffic(tmp_path / "traffic", 300, shard_rows=100)
    shard = pd.read_parquet(data / "part-00002.parquet")
    shard.loc[shard.index[5], "id"] = "t7"  # first seen in batch 0, row 7
    shard.to_parquet(data / "part-00002.parquet", index=False)
    first = data / "part-00000.parquet"
    with pytest.raises(DataError) as raised:
        route(artifacts, data, "routing.batch_rows=50")
    assert str(raised.value) == (
        f"file {data / 'part-00002.parquet'}, row 5 (id 't7'), field 'id': duplicate id 't7' "
        f"(first at row 7 of {first})"
    )
    skipping = route(artifacts, data, "routing.batch_rows=50", "dataset.skip_invalid=true")
    skipped = pd.read_parquet(skipping.output_dir / "skipped.parquet")
    assert skipped[["row", "id", "field", "reason"]].to_dict("records") == [
        {
            "row": "5",
            "id": "t7",
            "field": "id",
            "reason": f"duplicate id 't7' (first at row 7 of {first})",
        }
    ]
    assert len(decisions(skipping)) == 299


def test_an_id_in_two_shards_is_one_line_naming_both_shards_rows_and_the_id(
    artifacts, tmp_path, warm_runner
):
    """From the CLI: exit 2, one ``error:`` line with both files, both rows and the id; a
    repeat within one file (in a later batch) names its row only, as one file's loader."""
    data = traffic(tmp_path / "traffic", 200, shard_rows=100)
    later = pd.read_parquet(data / "part-00001.parquet")
    later.loc[later.index[0], "id"] = "t0"  # row 0 of both shards
    later.loc[later.index[60], "id"] = "t110"  # row 10 of this shard, another batch
    later.to_parquet(data / "part-00001.parquet", index=False)
    env = {**os.environ, "RUNNER_ARTIFACTS_DIR": str(artifacts), "PYTHONPATH": str(ROOT / "src")}
    work = tmp_path / "work"
    cli = ["experiment=route", f"dataset.path={data}", URI]
    done = warm_runner.run(
        [*cli, "routing.batch_rows=50", f"routing.work_dir={work}"], env=env, timeout=300
    )
    assert done.returncode == 2, done.stderr[-2000:]
    errors = [line for line in done.stderr.splitlines() if line.startswith("error:")]
    assert errors == [
        f"error: file {data / 'part-00001.parquet'}, row 0 (id 't0'), field 'id': "
        f"duplicate id 't0' (first at row 0 of {data / 'part-00000.parquet'})"
    ]
    skipping = route(artifacts, data, "routing.batch_rows=50", "dataset.skip_invalid=true")
    reasons = pd.read_parquet(skipping.output_dir / "skipped.parquet")[["row", "id", "reason"]]
    assert reasons.to_dict("records") == [
        {
            "row": "0",
            "id": "t0",
            "reason": f"duplicate id 't0' (first at row 0 of {data / 'part-00000.parquet'})",
        },
        {"row": "60", "id": "t110", "reason": "duplicate id 't110' (first at row 10)"},
    ]


def test_a_limit_counts_valid_rows_across_batches(artifacts, tmp_path):
    data = traffic(tmp_path / "traffic", 300, shard_rows=100)
    small = route(artifacts, data, "routing.batch_rows=30", "dataset.limit=125")
    whole = route(artifacts, data, "routing.batch_rows=1000", "dataset.limit=125")
    pd.testing.assert_frame_equal(decisions(small), decisions(whole))
    assert list(decisions(small)["id"]) == [f"t{i}" for i in range(125)]


@pytest.mark.parametrize(
    ("shard_rows", "batch_rows", "limit", "repeat"),
    [
        (100, 30, 333, ("part-00002.parquet", 5, "t7")),
        # the limit cuts a batch whose full risks differ in the last bits: the cut batch
        # must be routed on its admitted rows, as one process does
        (200, 50, 260, ("part-00001.parquet", 3, "t5")),
    ],
)
def test_forked_workers_route_to_the_bytes_of_one_process_repeats_and_limit_included(
    artifacts, tmp_path, shard_rows, batch_rows, limit, repeat
):
    """``routing.workers=2`` (a worker reads and routes each batch, the driver admits it
    after) gives the decisions, skipped rows and tables of the driving process alone."""
    data = traffic(tmp_path / "traffic", 400, shard_rows=shard_rows)
    name, position, ident = repeat
    shard = pd.read_parquet(data / name)
    shard.loc[shard.index[position], "id"] = ident  # repeated from an earlier batch: skipped
    shard.to_parquet(data / name, index=False)
    runs = {
        w: route(
            artifacts,
            data,
            f"routing.batch_rows={batch_rows}",
            f"dataset.limit={limit}",
            "dataset.skip_invalid=true",
            f"routing.workers={w}",
            f"routing.work_dir={tmp_path / str(w)}",
        )
        for w in (1, 2)
    }
    for name in ("decisions.parquet", "skipped.parquet", "cells.csv"):
        assert (runs[2].output_dir / name).read_bytes() == (runs[1].output_dir / name).read_bytes()
    assert len(decisions(runs[2])) == limit
    assert engines.local_workers(None, None, [0, 1]) >= 1
    assert engines.local_workers(4, object(), [0, 1]) == 1  # a verifier: one process
    assert engines.local_workers(4, None, [0]) == 1  # one batch


def test_unseen_sources_under_error_stop_before_any_batch_is_routed(artifacts, tmp_path):
    data = traffic(tmp_path / "traffic", 200, shard_rows=100)
    shard = pd.read_parquet(data / "part-00001.parquet")
    shard.loc[shard.index[-1], "source"] = "web_chat"
    shard.to_parquet(data / "part-00001.parquet", index=False)
    work = tmp_path / "work"
    with pytest.raises(DataError, match=r"1 rows come from source\(s\).*'web_chat': 1"):
        route(
            artifacts,
            data,
            "routing.batch_rows=50",
            "routing.on_unseen_source=error",
            f"routing.work_dir={work}",
        )
    assert not list(work.glob("*/batch-*.parquet"))


def test_an_unseen_source_after_the_limit_neither_stops_nor_counts(artifacts, tmp_path):
    """``dataset.limit`` cuts before the first pass of ``on_unseen_source=error`` too: a row
    the run will not route (after the limit) is not held against it, as the loader does."""
    data = traffic(tmp_path / "traffic", 200, shard_rows=100)
    shard = pd.read_parquet(data / "part-00001.parquet")
    shard.loc[shard.index[-1], "source"] = "web_chat"
    shard.to_parquet(data / "part-00001.parquet", index=False)
    routed = route(
        artifacts,
        data,
        "routing.batch_rows=50",
        "routing.on_unseen_source=error",
        "dataset.limit=150",
    )
    assert list(decisions(routed)["id"]) == [f"t{i}" for i in range(150)]
    summary = json.loads((routed.output_dir / "summary.json").read_text())
    assert summary["unseen_sources"] == {}


@pytest.fixture(scope="module")
def ray_head(artifacts):
    """A Ray head on 127.0.0.1 (as `make services` starts one), stopped by its PID."""
    port = free_port()
    temp = tempfile.mkdtemp(prefix="ray", dir="/tmp")  # Ray's socket paths must be short
    env = {
        **os.environ,
        "RAY_USAGE_STATS_ENABLED": "0",
        "RAY_ENABLE_WINDOWS_OR_OSX_CLUSTER": "0",
        # SIGTERM stops it at once: a drain would wait its whole 30 s for Ray Data's
        # detached stats actor, which never ends on its own
        "RAY_GRACEFUL_SHUTDOWN_DRAIN_TIMEOUT_S": "0",
        "PYTHONPATH": str(ROOT / "src"),
    }
    log = Path(temp) / "head.log"
    proc = subprocess.Popen(
        [
            str(Path(sys.executable).parent / "ray"),
            "start",
            "--head",
            "--block",
            "--node-ip-address=127.0.0.1",
            f"--port={port}",
            "--num-cpus=2",
            "--object-store-memory=100000000",
            "--include-dashboard=false",
            "--disable-usage-stats",
            f"--temp-dir={temp}",
        ],
        env=env,
        stdout=open(log, "w"),
        stderr=subprocess.STDOUT,
        start_new_session=True,
    )
    deadline = time.time() + 120
    while "Ray runtime started" not in log.read_text():
        assert proc.poll() is None and time.time() < deadline, log.read_text()[-2000:]
        time.sleep(0.5)
    yield f"127.0.0.1:{port}"
    import ray

    ray.shutdown()
    os.killpg(proc.pid, signal.SIGTERM)
    proc.wait(timeout=60)


def test_ray_routes_the_same_batches_to_the_same_bytes(artifacts, ray_head, tmp_path, monkeypatch):
    monkeypatch.setenv("RAY_ENABLE_WINDOWS_OR_OSX_CLUSTER", "0")
    monkeypatch.setenv("PYTHONPATH", str(ROOT / "src") + os.pathsep + str(ROOT))
    data = traffic(tmp_path / "traffic", 400, shard_rows=200)
    local = route(artifacts, data, "routing.batch_rows=50", f"routing.work_dir={tmp_path / 'a'}")
    on_ray = route(
        artifacts,
        data,
        "routing.batch_rows=50",
        "routing.engine=ray",
        f"routing.ray_address={ray_head}",
        "routing.ray_workers=2",
        f"routing.work_dir={tmp_path / 'b'}",
    )
    assert (on_ray.output_dir / "decisions.parquet").read_bytes() == (
        local.output_dir / "decisions.parquet"
    ).read_bytes()
    runtime = json.loads((on_ray.output_dir / "runtime.json").read_text())
    assert runtime["stream"]["engine"] == "ray" and runtime["stream"]["batches"] == 8


def test_ray_settles_repeats_and_the_limit_as_the_local_engine_does(
    artifacts, ray_head, tmp_path, monkeypatch
):
    """On Ray the driving process admits the batches before the workers route them: the
    same rows routed, the same repeated id skipped (named with its first shard), the same
    bytes."""
    monkeypatch.setenv("RAY_ENABLE_WINDOWS_OR_OSX_CLUSTER", "0")
    monkeypatch.setenv("PYTHONPATH", str(ROOT / "src") + os.pathsep + str(ROOT))
    data = traffic(tmp_path / "traffic", 400, shard_rows=200)
    later = pd.read_parquet(data / "part-00001.parquet")
    later.loc[later.index[3], "id"] = "t5"  # first in part-00000, row 5
    later.to_parquet(data / "part-00001.parquet", index=False)
    settings = ("routing.batch_rows=50", "dataset.skip_invalid=true", "dataset.limit=260")
    local = route(artifacts, data, *settings, f"routing.work_dir={tmp_path / 'a'}")
    on_ray = route(
        artifacts,
        data,
        *settings,
        "routing.engine=ray",
        f"routing.ray_address={ray_head}",
        "routing.ray_workers=2",
        f"routing.work_dir={tmp_path / 'b'}",
    )
    for name in ("decisions.parquet", "skipped.parquet"):
        assert (on_ray.output_dir / name).read_bytes() == (local.output_dir / name).read_bytes()
    routed = decisions(on_ray)
    assert len(routed) == 260 and "t5" in set(routed["id"]) and routed["id"].is_unique
    skipped = pd.read_parquet(on_ray.output_dir / "skipped.parquet")
    assert skipped["reason"].tolist() == [
        f"duplicate id 't5' (first at row 5 of {data / 'part-00000.parquet'})"
    ]


def test_an_unreachable_cluster_is_one_error_and_exit_2_before_any_row_is_read(artifacts, tmp_path):
    work = tmp_path / "work"
    env = {**os.environ, "RUNNER_ARTIFACTS_DIR": str(artifacts), "PYTHONPATH": str(ROOT / "src")}
    env.pop("RAY_ADDRESS", None)
    address = f"127.0.0.1:{free_port()}"
    done = subprocess.run(
        [
            sys.executable,
            "-m",
            "runner",
            "experiment=route",
            f"dataset.path={FIXTURE}",
            URI,
            "routing.engine=ray",
            f"routing.ray_address={address}",
            f"routing.work_dir={work}",
        ],
        env=env,
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert done.returncode == 2
    errors = [line for line in done.stderr.splitlines() if line.startswith("error:")]
    assert errors == [
        f"error: routing.engine=ray: no Ray cluster answers at {address} ([Errno 111] "
        "Connection refused); start one (`make services`, or `ray start --head`) or fix "
        "RAY_ADDRESS / routing.ray_address"
    ]
    assert not work.exists()


@contextlib.contextmanager
def black_hole() -> Iterator[tuple[str, list[socket.socket]]]:
    """A port on 127.0.0.1 that accepts every connection and never sends a byte."""
    server = socket.create_server(("127.0.0.1", 0))
    server.settimeout(0.1)
    accepted: list[socket.socket] = []
    stop = threading.Event()

    def serve() -> None:
        while not stop.is_set():
            try:
                accepted.append(server.accept()[0])
            except TimeoutError:
                continue

    thread = threading.Thread(target=serve, daemon=True)
    thread.start()
    try:
        yield f"127.0.0.1:{server.getsockname()[1]}", accepted
    finally:
        stop.set()
        thread.join()
        for conn in accepted:
            conn.close()
        server.close()


def test_a_cluster_address_that_never_answers_fails_in_seconds_with_one_line(tmp_path):
    """Ray's own connect retries a silent GCS for minutes, warning all along; the address
    is probed first (connect and gRPC handshake, `engines.CONNECT_TIMEOUT_S`)."""
    work = tmp_path / "work"
    env = {**os.environ, "RUNNER_ARTIFACTS_DIR": str(tmp_path), "PYTHONPATH": str(ROOT / "src")}
    env.pop("RAY_ADDRESS", None)
    with black_hole() as (address, accepted):
        start = time.perf_counter()
        done = subprocess.run(
            [
                sys.executable,
                "-m",
                "runner",
                "experiment=route",
                f"dataset.path={FIXTURE}",
                URI,
                "routing.engine=ray",
                f"routing.ray_address={address}",
                f"routing.work_dir={work}",
            ],
            env=env,
            capture_output=True,
            text=True,
            timeout=150,
        )
        took = time.perf_counter() - start
        assert accepted  # the address was reached: it is the silence that fails
    assert done.returncode == 2, done.stderr[-2000:]
    errors = [line for line in done.stderr.splitlines() if line.startswith("error:")]
    assert errors == [
        f"error: routing.engine=ray: {address} accepts connections but does not answer as a "
        f"Ray cluster (no gRPC handshake within {engines.CONNECT_TIMEOUT_S:g} s); start one "
        "(`make services`, or `ray start --head`) or fix RAY_ADDRESS / routing.ray_address"
    ]
    assert "GCS" not in done.stderr  # none of Ray's connect warnings
    # the CLI's start-up (compose, imports) is most of it; Ray alone took minutes
    assert took < 60 + engines.CONNECT_TIMEOUT_S
    assert not work.exists()


def test_generated_traffic_is_real_rows_with_new_ids_and_routes_as_a_folder(
    artifacts, tmp_path, monkeypatch
):
    """`scripts/make_traffic.py`: RAGTruth test rows resampled, seeded, new ids, shards."""
    monkeypatch.setenv("RUNNER_DATA_DIR", str(real_data_dir()))
    make_traffic = load_script("make_traffic")

    def generate(out: Path) -> list[Path]:
        args = ["--rows", "250", "--shard-rows", "100", "--out", str(out), "--labels"]
        assert (
            make_traffic.main([*args, "--new-sources", "web_chat", "--new-source-share", "0.2"])
            == 0
        )
        return sorted(out.glob("part-*.parquet"))

    out = tmp_path / "traffic"
    shards = generate(out)
    assert [len(pd.read_parquet(s)) for s in shards] == [100, 100, 50]
    frame = pd.concat([pd.read_parquet(s) for s in shards], ignore_index=True)
    assert frame["id"].is_unique and frame["id"].iloc[-1] == "traffic-13-249"
    test = load_ragtruth(split="test", data_dir=str(real_data_dir())).frame
    assert set(frame["answer"]) <= set(test["answer"])  # real rows, nothing made up
    assert 0.1 < (frame["source"] == "web_chat").mean() < 0.3
    again = generate(tmp_path / "again")  # seeded: the same rows again
    assert all(
        pd.read_parquet(a).equals(pd.read_parquet(b)) for a, b in zip(again, shards, strict=True)
    )
    routed = route(artifacts, out, "routing.batch_rows=64")
    assert sorted(decisions(routed)["id"]) == sorted(frame["id"])
