"""The quick tier stays quick: a test that starts a process must be marked slow."""

from __future__ import annotations

import subprocess
import sys

import pytest


def test_a_fast_test_that_starts_a_python_process_is_told_to_mark_it():
    with pytest.raises(pytest.fail.Exception, match=r"is not marked @pytest\.mark\.slow"):
        subprocess.run([sys.executable, "-c", "pass"], check=True)


def test_the_quick_tools_a_run_records_stay_allowed():
    done = subprocess.run(["git", "--version"], capture_output=True, text=True, check=True)
    assert done.stdout.startswith("git version")


@pytest.mark.slow
def test_a_slow_test_may_start_any_process():
    subprocess.run([sys.executable, "-c", "pass"], check=True)
