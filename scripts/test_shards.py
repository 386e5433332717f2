"""Run the test suite as N pytest processes side by side, each on a fixed shard of the files.

Why: the suite is mostly single-threaded work (subprocesses, servers, small models), so on
a machine with N cores N processes finish it in about 1/N of the time. Which files each
process runs is fixed before anything starts (``tests/shards.py``), and every shard is
shuffled by the same seed, so a rerun of a commit runs exactly the same tests in the same
order in each process: ``make test SEED=S`` replays a failure.

Shard 1 prints as it runs; the others write to ``artifacts/test-logs/shard-<k>.log`` and are
printed when they end. Exit status: 0 when every shard passed, else the first failing
shard's (pytest's "no tests collected", 5, counts as a failure only when no shard ran a
test).

    python scripts/test_shards.py --jobs 2 --seed 123 [-- -m "not slow"]
    python scripts/test_shards.py --record tests/durations.json   # re-weigh the shards
"""

from __future__ import annotations

import argparse
import json
import os
import resource
import subprocess
import sys
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
NO_TESTS = 5
THREADS = ("OMP_NUM_THREADS", "OPENBLAS_NUM_THREADS", "MKL_NUM_THREADS")
"""The math libraries' thread counts: one each when the shards already fill the cores, unless
the caller set them. Two shards of two-thread OpenMP on two cores spin against each other:
measured on six of the slowest files, 4.1 and 4.3 min with their own threads, 4.0 and 4.1
with one each (CPU 7.0/7.2 min against 6.6/6.9)."""


def shard_env(jobs: int, cores: int | None) -> dict[str, str]:
    """The environment each shard runs in: this one, with one math thread per process when
    `jobs` processes fill the `cores`."""
    env = dict(os.environ)
    if jobs > 1 and jobs >= (cores or 1):
        for name in THREADS:
            env.setdefault(name, "1")
    return env


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--jobs", type=int, default=2, help="shards run side by side")
    parser.add_argument("--seed", type=int, required=True, help="pytest-randomly's seed")
    parser.add_argument("--logs", type=Path, default=ROOT / "artifacts" / "test-logs")
    parser.add_argument(
        "--record", type=Path, help="write every test's seconds here (tests/durations.json)"
    )
    parser.add_argument("pytest_args", nargs="*", help="passed on to pytest (after --)")
    args = parser.parse_args()
    if args.jobs < 1:
        parser.error(f"--jobs={args.jobs}: at least 1")
    args.logs.mkdir(parents=True, exist_ok=True)

    started = time.monotonic()
    env = shard_env(args.jobs, os.cpu_count())
    shards = []
    for k in range(1, args.jobs + 1):
        command = [sys.executable, "-m", "pytest", "-q", "-p", "randomly"]
        command += [f"--randomly-seed={args.seed}", f"--shard={k}/{args.jobs}"]
        if args.record:
            part = args.logs / f"durations-{k}.json"
            part.unlink(missing_ok=True)  # an earlier run's part must not count as this one's
            command.append(f"--record-durations={part}")
        command += args.pytest_args
        log = args.logs / f"shard-{k}.log"
        out = None if k == 1 else log.open("w")
        process = subprocess.Popen(command, cwd=ROOT, env=env, stdout=out, stderr=out)
        shards.append((k, log, out, process))
        print(f"shard {k}/{args.jobs}: {'below' if k == 1 else log}", flush=True)

    codes = {}
    for k, log, out, process in shards:
        codes[k] = process.wait()
        if out is not None:
            out.close()
            print(f"\n===== shard {k}/{args.jobs} ({log}) =====", flush=True)
            print(log.read_text(), end="", flush=True)
    minutes = (time.monotonic() - started) / 60
    used = resource.getrusage(resource.RUSAGE_CHILDREN)
    cpu = (used.ru_utime + used.ru_stime) / 60
    summary = ", ".join(f"shard {k}: exit {c}" for k, c in codes.items())
    print(
        f"\n{args.jobs} shard(s) in {minutes:.1f} min: {summary}; CPU {cpu:.1f} min of "
        f"{minutes * (os.cpu_count() or 1):.1f} available ({os.cpu_count()} cores)",
        flush=True,
    )

    if args.record:
        seconds: dict[str, float] = {}
        for k in codes:
            part = args.logs / f"durations-{k}.json"
            if part.exists():
                seconds.update(json.loads(part.read_text()))
        args.record.write_text(json.dumps(dict(sorted(seconds.items())), indent=0) + "\n")
        print(f"recorded {len(seconds)} tests' seconds in {args.record}")

    if all(c == NO_TESTS for c in codes.values()):
        print("pytest collected no tests: failing")
        return 1
    failed = [c for c in codes.values() if c not in (0, NO_TESTS)]
    return failed[0] if failed else 0


if __name__ == "__main__":
    sys.exit(main())
