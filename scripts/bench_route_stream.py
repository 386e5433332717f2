"""`make bench` (routing at scale): rows/s and peak memory of `route` on generated traffic.

Each cell is one real `python -m runner experiment=route` process on traffic written by
`scripts/make_traffic.py` (RAGTruth test rows resampled, Parquet shards), routed through a
gate fitted here on RAGTruth train (`experiment=fit_gate`, not timed). Memory is sampled
every 0.1 s with psutil: the route process's resident set (RSS), and with Ray the RSS of
each Ray worker that routes batches. Engines:

- ``local``: the streaming route in one process (``routing.engine=local``);
- ``ray1`` / ``ray2``: the same batches as Ray Data tasks on 1 or 2 workers of a Ray head
  started here (``ray start --head``, stopped by its PID) or the cluster at $RAY_ADDRESS;
- ``inmemory``: the route as it was before streaming (``--baseline-ref``, checked out in a
  git worktree): the whole file in one frame, scored in one call. It reads one file, so it
  gets the same rows as one Parquet file (a row group per 50k rows).

Rows/s is rows over the process's wall time (start-up, model load and writing included)
and over the study's own time (``runtime.json``). Cells run one at a time, on whatever
else the machine is doing: read ratios between cells of one run, not absolute speeds.

    python scripts/bench_route_stream.py --sizes 100000 1000000 \
        --engines inmemory local ray1 ray2 --out artifacts/bench/route_stream.json
"""

from __future__ import annotations

import argparse
import json
import os
import shutil
import socket
import subprocess
import sys
import tempfile
import threading
import time
from pathlib import Path

import psutil

ROOT = Path(__file__).resolve().parents[1]
PY = sys.executable
RAY_WORKER_MARK = "_RayRouter"


def run_env(artifacts: Path, src: Path) -> dict[str, str]:
    env = dict(os.environ)
    env.update(
        {
            "RUNNER_ARTIFACTS_DIR": str(artifacts),
            "PYTHONPATH": str(src),
            "HF_HUB_OFFLINE": "1",
            "HF_DATASETS_OFFLINE": "1",
            "TRANSFORMERS_OFFLINE": "1",
            "MLFLOW_DISABLE_TELEMETRY": "true",
            "RAY_ENABLE_WINDOWS_OR_OSX_CLUSTER": "0",
            "RAY_USAGE_STATS_ENABLED": "0",
        }
    )
    return env


class PeakRss:
    """Sample a process's RSS, and the RSS of Ray's routing workers, until stopped.

    With `floor` bytes: when the machine's available memory falls below it, the process
    is killed (`killed` says so), so a run that does not fit cannot take the machine down.
    """

    def __init__(self, pid: int, ray: bool, floor: int = 0) -> None:
        self.pid, self.driver, self.workers, self.worker_sum = pid, 0, 0, 0
        self.ray, self.floor, self.killed = ray, floor, False
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._loop, daemon=True)
        self._thread.start()

    def _loop(self) -> None:
        while not self._stop.is_set():
            try:
                self.driver = max(self.driver, psutil.Process(self.pid).memory_info().rss)
            except psutil.Error:
                pass
            if self.floor and psutil.virtual_memory().available < self.floor:
                self.killed = True
                try:
                    psutil.Process(self.pid).kill()
                except psutil.Error:
                    pass
            total = 0
            for proc in psutil.process_iter(["cmdline"]) if self.ray else ():
                try:
                    if RAY_WORKER_MARK in " ".join(proc.info["cmdline"] or ()):
                        rss = proc.memory_info().rss
                        self.workers = max(self.workers, rss)
                        total += rss
                except psutil.Error:
                    continue
            self.worker_sum = max(self.worker_sum, total)
            time.sleep(0.1)

    def stop(self) -> dict[str, float]:
        self._stop.set()
        self._thread.join()
        mib = 1 << 20
        return {
            "driver_peak_rss_mib": round(self.driver / mib, 1),
            "worker_peak_rss_mib": round(self.workers / mib, 1),
            "workers_peak_rss_sum_mib": round(self.worker_sum / mib, 1),
        }


def route(
    artifacts: Path, src: Path, data: Path, overrides: list[str], label: str, floor: int = 0
) -> dict[str, object]:
    """One route process; its wall time, peak memory and the run's runtime record."""
    command = [
        PY,
        "-m",
        "runner",
        "experiment=route",
        f"dataset.path={data}",
        "progress=false",
        *overrides,
    ]
    log = artifacts / f"{label}.log"
    start = time.perf_counter()
    with open(log, "w") as handle:
        proc = subprocess.Popen(
            command, env=run_env(artifacts, src), stdout=handle, stderr=subprocess.STDOUT
        )
        peak = PeakRss(proc.pid, ray="routing.engine=ray" in overrides, floor=floor)
        _, status, usage = os.wait4(proc.pid, 0)
        rc = os.waitstatus_to_exitcode(status)
        proc.returncode = rc
    wall = time.perf_counter() - start
    driver_cpu = usage.ru_utime + usage.ru_stime
    memory = peak.stop()
    if peak.killed:
        gib = psutil.virtual_memory().total / (1 << 30)
        return {
            "survived": False,
            "note": f"killed when the machine's available memory fell below the floor "
            f"({floor / (1 << 30):.1f} of {gib:.0f} GiB) after {wall:.0f} s",
            **memory,
        }
    if rc != 0:
        raise SystemExit(f"{label}: route failed (exit {rc}); see {log}")
    # the run folder this process wrote (``latest`` follows run ids, not finishing order)
    folder = [ln for ln in log.read_text().splitlines() if ln.startswith("outputs: ")][-1]
    runtime = json.loads((Path(folder.removeprefix("outputs: ")) / "runtime.json").read_text())
    rows = int(runtime["rows"])
    study = float(runtime.get("study_seconds") or wall)
    return {
        "rows": rows,
        "wall_seconds": round(wall, 1),
        "rows_per_second_wall": round(rows / wall, 1),
        "study_seconds": round(study, 1),
        "rows_per_second_study": round(rows / study, 1),
        "gate_ms_per_example": round(float(runtime["gate_ms_per_example"]), 3),
        "survived": True,
        "driver_cpu_seconds": round(driver_cpu, 1),
        **memory,
    }


def traffic(folder: Path, rows: int, single: bool) -> Path:
    """Generated traffic of `rows` rows (made once, reused by later runs)."""
    name = f"{rows}{'_single' if single else ''}"
    out = folder / name
    if not (out / "traffic.json").exists():
        if out.exists():
            shutil.rmtree(out)
        command = [PY, str(ROOT / "scripts" / "make_traffic.py"), "--rows", str(rows)]
        command += ["--shard-rows", "50000", "--out", str(out)]
        subprocess.run(command + (["--single-file"] if single else []), check=True)
    return out / "traffic.parquet" if single else out


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


class RayHead:
    """A Ray head on 127.0.0.1 for the Ray cells (as `scripts/services.sh` starts one)."""

    def __init__(self, folder: Path, cpus: int) -> None:
        self.port = free_port()
        tmp = Path(tempfile.mkdtemp(prefix="ray", dir="/tmp"))  # Ray's socket paths are short
        # stopped at once: a drain would wait 30 s for Ray Data's detached stats actor
        env = {**run_env(folder, ROOT / "src"), "RAY_GRACEFUL_SHUTDOWN_DRAIN_TIMEOUT_S": "0"}
        self.proc = subprocess.Popen(
            [
                str(Path(PY).parent / "ray"),
                "start",
                "--head",
                "--block",
                "--node-ip-address=127.0.0.1",
                f"--port={self.port}",
                f"--num-cpus={cpus}",
                "--object-store-memory=200000000",
                "--include-dashboard=false",
                "--disable-usage-stats",
                f"--temp-dir={tmp}",
            ],
            env=env,
            stdout=open(folder / "ray.log", "w"),
            stderr=subprocess.STDOUT,
            start_new_session=True,
        )
        deadline = time.time() + 120
        while "Ray runtime started" not in (folder / "ray.log").read_text():
            if self.proc.poll() is not None or time.time() > deadline:
                raise SystemExit(f"ray head did not start; see {folder / 'ray.log'}")
            time.sleep(0.5)
        self.address = f"127.0.0.1:{self.port}"

    def stop(self) -> None:
        os.killpg(self.proc.pid, 15)
        self.proc.wait(timeout=60)


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--sizes", type=int, nargs="+", default=[100_000, 1_000_000])
    parser.add_argument("--engines", nargs="+", default=["inmemory", "local", "ray1", "ray2"])
    parser.add_argument("--inmemory-max", type=int, default=None, help="largest in-memory size")
    parser.add_argument("--batch-rows", type=int, default=10_000)
    parser.add_argument("--traffic", type=Path, default=ROOT / "artifacts" / "traffic")
    parser.add_argument("--work", type=Path, default=None, help="artifacts folder (temp)")
    parser.add_argument("--baseline-ref", default="9d09033", help="the in-memory route's commit")
    parser.add_argument("--out", type=Path, default=None)
    parser.add_argument(
        "--memory-floor-gib",
        type=float,
        default=1.5,
        help="kill a cell when the machine's available memory falls below this",
    )
    args = parser.parse_args(argv)
    work = args.work or Path(tempfile.mkdtemp(prefix="bench_route_"))
    work.mkdir(parents=True, exist_ok=True)
    train = work / "train.jsonl"
    if not train.exists():
        subprocess.run(
            [
                PY,
                str(ROOT / "scripts" / "ragtruth_to_rag_file.py"),
                "--split",
                "train",
                "--out",
                str(train),
            ],
            check=True,
        )
    if not (work / "mlflow.db").exists():
        print("fitting the gate on RAGTruth train (not timed)", file=sys.stderr)
        subprocess.run(
            [PY, "-m", "runner", "experiment=fit_gate", f"dataset.path={train}", "progress=false"],
            env=run_env(work, ROOT / "src"),
            check=True,
            stdout=subprocess.DEVNULL,
        )
    baseline_src = None
    if "inmemory" in args.engines:
        checkout = work / "baseline"
        if not checkout.exists():
            subprocess.run(
                [
                    "git",
                    "-C",
                    str(ROOT),
                    "worktree",
                    "add",
                    "--detach",
                    str(checkout),
                    args.baseline_ref,
                ],
                check=True,
            )
        baseline_src = checkout / "src"
    head = None
    if any(e.startswith("ray") for e in args.engines) and not os.environ.get("RAY_ADDRESS"):
        head = RayHead(work, cpus=max(int(e[3:]) for e in args.engines if e.startswith("ray")))
    address = os.environ.get("RAY_ADDRESS") or (head.address if head else None)
    cells = []
    try:
        for rows in args.sizes:
            for engine in args.engines:
                if engine == "inmemory" and args.inmemory_max and rows > args.inmemory_max:
                    continue
                data = traffic(args.traffic, rows, single=engine == "inmemory")
                label = f"{engine}_{rows}"
                shutil.rmtree(work / "work" / label, ignore_errors=True)  # route, not resume
                overrides = [f"routing.work_dir={work / 'work' / label}"]
                if engine.startswith("ray"):
                    overrides += [
                        "routing.engine=ray",
                        f"routing.ray_address={address}",
                        f"routing.ray_workers={int(engine[3:])}",
                    ]
                if engine == "inmemory":
                    overrides = []
                src = baseline_src if engine == "inmemory" else ROOT / "src"
                print(f"{label} ...", file=sys.stderr, flush=True)
                cell = {"engine": engine, "size": rows, "batch_rows": args.batch_rows}
                if engine != "inmemory":
                    overrides.append(f"routing.batch_rows={args.batch_rows}")
                floor = int(args.memory_floor_gib * (1 << 30))
                cell.update(route(work, src, data, overrides, label, floor))
                print(json.dumps(cell), file=sys.stderr, flush=True)
                cells.append(cell)
    finally:
        if head is not None:
            head.stop()
    report = {
        "cpu_count": os.cpu_count(),
        "baseline_ref": args.baseline_ref,
        "cells": cells,
    }
    by = {(c["engine"], c["size"]): c for c in cells if c["survived"]}
    if len(args.sizes) > 1:
        small, large = min(args.sizes), max(args.sizes)
        report["rss_ratio_large_over_small"] = {
            e: round(
                by[(e, large)]["driver_peak_rss_mib"] / by[(e, small)]["driver_peak_rss_mib"], 3
            )
            for e in args.engines
            if (e, small) in by and (e, large) in by
        }
    for size in args.sizes:
        if ("inmemory", size) in by and ("local", size) in by:
            report.setdefault("local_over_inmemory_rows_per_second_study", {})[str(size)] = round(
                by[("local", size)]["rows_per_second_study"]
                / by[("inmemory", size)]["rows_per_second_study"],
                3,
            )
    text = json.dumps(report, indent=2, sort_keys=True) + "\n"
    if args.out:
        args.out.parent.mkdir(parents=True, exist_ok=True)
        args.out.write_text(text)
    print(text)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
