"""Which test files a shard of ``make test`` runs: the same split of the same files every time.

Why: ``make test`` runs the suite as a few pytest processes side by side
(``scripts/test_shards.py``), so the whole suite takes minutes, not half an hour, on two
cores. A split decided while the suite runs (pytest-xdist hands the next file to whichever
process is free) would let two runs of one commit put different files in one process, and a
test that leaks state into a later one would pass or fail by luck. Here the split is decided
before anything runs, from the files alone: each goes, longest first, to the shard with the
fewest seconds so far, by the seconds its tests took when last recorded
(``tests/durations.json``; a test with no record counts `UNKNOWN_SECONDS`). A file stays in
one shard, so its module fixtures (a Slurm cluster, a server) start once. Same files, same
record, same seed: every shard runs the same tests in the same order.
"""

from __future__ import annotations

import json
from collections.abc import Iterable, Mapping
from pathlib import Path

DURATIONS = Path(__file__).resolve().parent / "durations.json"
"""Seconds each test took (setup, call and teardown) when last recorded, by node id."""

UNKNOWN_SECONDS = 1.0
"""What a test with no recorded time counts for (a new test, or a renamed one)."""


def parse_shard(spec: str) -> tuple[int, int]:
    """``"2/3"`` as ``(2, 3)``: the second of three shards.

    Raises
    ------
    ValueError
        When `spec` is not ``K/N`` with ``1 <= K <= N``.
    """
    index, _, count = spec.partition("/")
    try:
        k, n = int(index), int(count)
    except ValueError:
        raise ValueError(f"--shard={spec!r}: expected K/N, e.g. --shard=1/2") from None
    if not 1 <= k <= n:
        raise ValueError(f"--shard={spec!r}: K must lie in 1..N")
    return k, n


def file_of(nodeid: str) -> str:
    """The test file a node id belongs to (``tests/x/test_y.py::test_z[a]`` → its path)."""
    return nodeid.split("::", 1)[0]


def split(
    nodeids: Iterable[str], n: int, seconds: Mapping[str, float] | None = None
) -> list[list[str]]:
    """The test files of `nodeids` in `n` shards of about equal recorded time.

    Files are taken longest first (ties by name) and each goes to the shard with the fewest
    seconds so far (the lowest-numbered on a tie); the files of a shard are sorted.
    """
    seconds = {} if seconds is None else seconds
    weight: dict[str, float] = {}
    for nodeid in nodeids:
        file = file_of(nodeid)
        weight[file] = weight.get(file, 0.0) + float(seconds.get(nodeid, UNKNOWN_SECONDS))
    shards: list[list[str]] = [[] for _ in range(n)]
    loads = [0.0] * n
    for file in sorted(weight, key=lambda f: (-weight[f], f)):
        least = min(range(n), key=lambda i: (loads[i], i))
        shards[least].append(file)
        loads[least] += weight[file]
    return [sorted(files) for files in shards]


def read_durations(path: Path = DURATIONS) -> dict[str, float]:
    """The recorded seconds by node id; none recorded yet is an empty record."""
    if not path.exists():
        return {}
    return {str(k): float(v) for k, v in json.loads(path.read_text()).items()}


def write_durations(seconds: Mapping[str, float], path: Path = DURATIONS) -> None:
    """Record `seconds` by node id, sorted and rounded (a stable file to commit)."""
    rounded = {k: round(v, 2) for k, v in sorted(seconds.items())}
    path.write_text(json.dumps(rounded, indent=0, sort_keys=True) + "\n")
