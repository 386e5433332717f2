"""Run folders: every run keeps its own folder and `latest` moves only to a complete run."""

from __future__ import annotations

import datetime as dt
import json
import os
import threading
from pathlib import Path

import pytest

from runner.reporting.run_folders import (
    RunFolder,
    complete_runs,
    incomplete_runs,
    is_run_id,
    latest_run_dir,
    new_run_id,
    publish,
    remove_abandoned,
    this_process,
    why_no_latest,
)


def finished(exp: Path, run_id: str | None = None, text: str = "x") -> RunFolder:
    folder = RunFolder.create(exp, run_id)
    (folder.tmp_dir / "cells.csv").write_text(text)
    (folder.tmp_dir / "manifest.json").write_text("{}")
    return folder


def test_run_ids_sort_by_start_time_and_differ_within_one_microsecond():
    t0 = dt.datetime(2026, 1, 2, 3, 4, 5, 6, tzinfo=dt.UTC)
    t1 = t0 + dt.timedelta(microseconds=1)
    assert new_run_id(t0) < new_run_id(t1)
    assert new_run_id(t0) != new_run_id(t0)
    assert is_run_id(new_run_id()) and not is_run_id("notes")


def test_latest_is_a_relative_symlink_to_the_newest_complete_run_and_older_runs_stay(tmp_path):
    first = publish(finished(tmp_path, text="one"))
    second = publish(finished(tmp_path, text="two"))
    link = tmp_path / "latest"
    assert link.is_symlink() and not os.readlink(link).startswith("/")
    assert latest_run_dir(tmp_path) == tmp_path / "runs" / second.name
    assert (first / "cells.csv").read_text() == "one"
    assert complete_runs(tmp_path) == sorted([first.name, second.name])


def test_a_run_is_invisible_until_published_and_cannot_be_published_without_its_manifest(
    tmp_path,
):
    old = publish(finished(tmp_path, text="old"))
    writing = RunFolder.create(tmp_path)
    (writing.tmp_dir / "cells.csv").write_text("half")
    assert latest_run_dir(tmp_path) == tmp_path / "runs" / old.name
    with pytest.raises(RuntimeError, match="not complete"):
        publish(writing)
    assert latest_run_dir(tmp_path) == tmp_path / "runs" / old.name
    assert incomplete_runs(tmp_path) == [writing.tmp_dir]
    writing.discard()
    assert incomplete_runs(tmp_path) == []


def test_a_run_finishing_late_does_not_move_latest_back_to_an_older_run(tmp_path):
    early, late = sorted([new_run_id(), new_run_id()])
    newer = finished(tmp_path, late)
    older = finished(tmp_path, early)
    publish(newer)
    publish(older)
    assert latest_run_dir(tmp_path).name == late
    assert set(complete_runs(tmp_path)) == {early, late}


def test_retention_keeps_the_newest_runs_and_never_a_running_one(tmp_path):
    ids = sorted(new_run_id() for _ in range(4))
    for run_id in ids[:3]:
        publish(finished(tmp_path, run_id))
    running = RunFolder.create(tmp_path)
    publish(finished(tmp_path, ids[3]), keep_runs=2)
    assert complete_runs(tmp_path) == ids[2:]
    assert running.tmp_dir.is_dir()
    assert latest_run_dir(tmp_path).name == ids[3]


def test_retention_never_removes_the_run_it_just_published_even_when_older(tmp_path):
    ids = sorted(new_run_id() for _ in range(3))
    publish(finished(tmp_path, ids[1]))
    publish(finished(tmp_path, ids[2]))
    publish(finished(tmp_path, ids[0]), keep_runs=1)
    assert ids[0] in complete_runs(tmp_path)  # still being logged by its run
    assert latest_run_dir(tmp_path).name == ids[2]


def test_many_runs_published_at_once_all_survive_and_latest_names_the_newest(tmp_path):
    folders = [finished(tmp_path, text=str(i)) for i in range(8)]
    errors: list[BaseException] = []

    def go(folder: RunFolder) -> None:
        try:
            publish(folder)
        except BaseException as exc:
            errors.append(exc)

    threads = [threading.Thread(target=go, args=(f,)) for f in folders]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert errors == []
    assert complete_runs(tmp_path) == sorted(f.run_id for f in folders)
    assert latest_run_dir(tmp_path).name == max(f.run_id for f in folders)


def test_why_no_latest_names_the_reason(tmp_path):
    assert "no run yet" in why_no_latest(tmp_path / "never")
    killed = RunFolder.create(tmp_path / "killed")
    assert killed.tmp_dir.name in why_no_latest(tmp_path / "killed")
    assert "incomplete" in why_no_latest(tmp_path / "killed")
    old = tmp_path / "old"
    old.mkdir()
    (old / "cells.csv").write_text("")
    assert "old layout" in why_no_latest(old)
    gone = tmp_path / "gone"
    run = publish(finished(gone))
    for child in run.iterdir():
        child.unlink()
    run.rmdir()
    assert latest_run_dir(gone) is None
    assert "does not exist" in why_no_latest(gone)


def owned_by(folder: RunFolder, **record) -> RunFolder:
    """`folder`'s owner file rewritten as if another process wrote it."""
    folder.owner_file.write_text(json.dumps({**this_process(), **record}))
    return folder


GONE = 2**31 - 1  # a PID no process has (above any pid_max)


def test_a_folder_whose_process_is_gone_is_removed_and_no_other(tmp_path):
    gone = owned_by(RunFolder.create(tmp_path), pid=GONE)
    running = RunFolder.create(tmp_path)  # this process: alive
    elsewhere = owned_by(RunFolder.create(tmp_path), pid=GONE, host="another-machine")
    container = owned_by(RunFolder.create(tmp_path), pid=GONE, pid_namespace="pid:[1]")
    old = RunFolder.create(tmp_path)
    old.owner_file.unlink()  # a runner that wrote no owner file
    assert remove_abandoned(tmp_path) == [gone.tmp_dir]
    assert not gone.tmp_dir.exists() and not gone.owner_file.exists()
    kept = [running, elsewhere, container, old]
    assert incomplete_runs(tmp_path) == sorted(f.tmp_dir for f in kept)


def test_the_owner_file_goes_with_the_folder_when_published_or_discarded(tmp_path):
    done = finished(tmp_path)
    assert done.owner_file.exists() and json.loads(done.owner_file.read_text())["pid"] > 0
    publish(done)
    failed = RunFolder.create(tmp_path)
    failed.discard()
    assert not done.owner_file.exists() and not failed.owner_file.exists()
    assert not (done.run_dir / done.owner_file.name).exists()
    assert sorted(p.name for p in (tmp_path / "runs").iterdir()) == [done.run_id]
