"""The warm CLI the config-mistake tests use (`tests.warm_cli`): each command is a fresh
process, so what one command registers, sets or changes never reaches the next."""

from __future__ import annotations

import os
import subprocess

import pytest
from tests.conftest import ROOT
from tests.warm_cli import NO_DATA_STATUS

pytestmark = pytest.mark.slow  # a server process and a fork per command

HEAD = ["experiment=rq1_cheap_signals", "tracking=off", "progress=false"]


@pytest.fixture
def env(tmp_path):
    return {**os.environ, "RUNNER_ARTIFACTS_DIR": str(tmp_path / "artifacts")}


def test_a_conf_folder_one_command_adds_is_unknown_to_the_next(warm_runner, env, tmp_path):
    conf = tmp_path / "conf"
    (conf / "split").mkdir(parents=True)
    (conf / "split" / "mine.yaml").write_text(
        "defaults:\n  - runner.evaluation.splits.KFold\n  - _self_\nn_splits: 3\n"
    )
    added = warm_runner.run(
        [*HEAD, "split=mine", f"hydra.searchpath=[file://{conf}]"], env=env, no_data=True
    )
    assert added.returncode == NO_DATA_STATUS, added.stderr[-2000:]  # composed, then loading
    again = warm_runner.run([*HEAD, "split=mine"], env=env, no_data=True)
    assert again.returncode == 2
    assert "Could not find 'split/mine'" in again.stderr


def test_the_environment_and_folder_are_the_commands_own(warm_runner, env, tmp_path):
    (tmp_path / "data" / "ragtruth").mkdir(parents=True)
    (tmp_path / "data" / "ragtruth" / "test.parquet").write_text("not parquet")
    done = warm_runner.run(HEAD, env={**env, "RUNNER_DATA_DIR": "data"}, cwd=tmp_path)
    assert done.returncode == 2
    # this command's data folder, relative to this command's working folder
    assert f"error: file {tmp_path / 'data' / 'ragtruth' / 'test.parquet'}:" in done.stderr
    assert done.args[1:3] == ["-m", "runner"]


def test_a_command_past_its_timeout_is_killed_and_raises(warm_runner, env, tmp_path):
    conf = tmp_path / "conf"
    (conf / "dataset").mkdir(parents=True)
    (conf / "dataset" / "blocking.yaml").write_text(
        f"_target_: tests.blocking_loader.load\nready: {tmp_path / 'loading'}\n"
    )
    blocking = [*HEAD, "dataset=blocking", f"hydra.searchpath=[file://{conf}]"]
    with pytest.raises(subprocess.TimeoutExpired):
        warm_runner.run(
            blocking, env={**env, "PYTHONPATH": f"{ROOT / 'src'}{os.pathsep}{ROOT}"}, timeout=5
        )
    assert warm_runner.run([*HEAD, "split=nosuch"], env=env).returncode == 2  # still serves
