"""``make test``'s shards: fixed by the files and their recorded seconds, never by timing."""

from __future__ import annotations

import json
import subprocess
import sys

import pytest
from tests.conftest import ROOT, load_script
from tests.shards import UNKNOWN_SECONDS, parse_shard, read_durations, split, write_durations

IDS = [
    "tests/a/test_long.py::test_one",
    "tests/a/test_long.py::test_two[x]",
    "tests/b/test_mid.py::test_one",
    "tests/test_short.py::test_one",
    "tests/test_new.py::test_one",
]
SECONDS = {IDS[0]: 50.0, IDS[1]: 10.0, IDS[2]: 40.0, IDS[3]: 15.0}


def test_every_file_lands_whole_in_exactly_one_shard():
    shards = split(IDS, 2, SECONDS)
    files = [f for shard in shards for f in shard]
    assert sorted(files) == sorted({i.split("::")[0] for i in IDS})
    assert len(files) == len(set(files))  # test_long.py's two tests share its shard


def test_the_longest_files_go_first_to_the_least_loaded_shard():
    # long (60 s) -> shard 1; mid (40 s) -> 2; short (15 s) -> 2 (40 < 60); new (1 s) -> 2
    # (55 < 60)
    shards = split(IDS, 2, SECONDS)
    assert shards == [
        ["tests/a/test_long.py"],
        ["tests/b/test_mid.py", "tests/test_new.py", "tests/test_short.py"],
    ]


def test_the_split_depends_on_the_files_not_on_their_order():
    assert split(list(reversed(IDS)), 3, SECONDS) == split(IDS, 3, SECONDS)


def test_a_test_with_no_record_counts_its_default_seconds():
    ids = ["tests/test_x.py::a", "tests/test_y.py::a", "tests/test_y.py::b"]
    assert split(ids, 2) == [["tests/test_y.py"], ["tests/test_x.py"]]  # 2 unknown vs 1
    heavy = {"tests/test_x.py::a": 2.5 * UNKNOWN_SECONDS}
    assert split(ids, 2, heavy) == [["tests/test_x.py"], ["tests/test_y.py"]]


def test_more_shards_than_files_leaves_the_rest_empty():
    assert split(IDS[:1], 3, SECONDS) == [["tests/a/test_long.py"], [], []]


@pytest.mark.parametrize("spec", ["2", "0/2", "3/2", "a/b", ""])
def test_a_shard_is_k_of_n(spec):
    with pytest.raises(ValueError, match="--shard"):
        parse_shard(spec)
    assert parse_shard("2/3") == (2, 3)


def test_shards_that_fill_the_cores_get_one_math_thread_each_unless_the_caller_chose(monkeypatch):
    script = load_script("test_shards")
    for name in script.THREADS:
        monkeypatch.delenv(name, raising=False)
    monkeypatch.setenv("MKL_NUM_THREADS", "4")
    env = script.shard_env(jobs=2, cores=2)
    assert (env["OMP_NUM_THREADS"], env["OPENBLAS_NUM_THREADS"]) == ("1", "1")
    assert env["MKL_NUM_THREADS"] == "4"  # the caller's own choice stands
    assert "OMP_NUM_THREADS" not in script.shard_env(jobs=1, cores=2)  # one process
    assert "OMP_NUM_THREADS" not in script.shard_env(jobs=2, cores=8)  # cores to spare


def test_durations_round_trip_sorted_and_rounded(tmp_path):
    path = tmp_path / "d.json"
    write_durations({"b::t": 1.23456, "a::t": 2.0}, path)
    assert list(json.loads(path.read_text())) == ["a::t", "b::t"]
    assert read_durations(path) == {"a::t": 2.0, "b::t": 1.23}
    assert read_durations(tmp_path / "none.json") == {}


def test_the_committed_record_names_tests_that_exist():
    recorded = read_durations()
    assert recorded, "tests/durations.json is empty: make test-durations records it"
    files = {i.split("::")[0] for i in recorded}
    missing = sorted(f for f in files if not (ROOT / f).exists())
    assert len(missing) <= len(files) // 10, f"re-record (make test-durations): {missing}"


@pytest.mark.slow
def test_two_shards_run_every_test_once_and_record_their_seconds(tmp_path):
    files = ["tests/test_shards.py", "tests/test_test_tiers.py"]
    record = tmp_path / "durations.json"
    command = [sys.executable, "scripts/test_shards.py", "--jobs", "2", "--seed", "7"]
    command += ["--logs", str(tmp_path), "--record", str(record), "--", *files, "-m", "not slow"]
    done = subprocess.run(command, cwd=ROOT, capture_output=True, text=True, timeout=300)
    assert done.returncode == 0, done.stdout + done.stderr
    ran = json.loads(record.read_text())
    by_file = {f: {i for i in ran if i.startswith(f)} for f in files}
    assert all(by_file.values()), by_file  # both files ran, each in one of the shards
    assert not any("test_two_shards" in i for i in ran)  # -m reached both shards
    assert "2 shard(s)" in done.stdout and "shard 2/2" in done.stdout
