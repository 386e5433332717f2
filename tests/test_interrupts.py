"""SIGTERM / SIGHUP raised as `Terminated` while inside, and only where they are ours."""

from __future__ import annotations

import signal
import threading

import pytest

from runner.interrupts import SIGNALS, Terminated, signals_as_interrupts


@pytest.fixture(autouse=True)
def default_actions():
    """Each test starts from the default actions and leaves the handlers as it found them:
    an earlier test in this process may have left one (``ray.init`` installs a SIGTERM
    handler that ``ray.shutdown`` keeps), and a signal raised here must never reach it."""
    before = {sig: signal.getsignal(sig) for sig in SIGNALS}
    for sig in SIGNALS:
        signal.signal(sig, signal.SIG_DFL)
    yield
    for sig, handler in before.items():
        signal.signal(sig, signal.SIG_DFL if handler is None else handler)


def test_a_sigterm_inside_raises_terminated_with_the_shell_exit_code():
    with pytest.raises(Terminated) as stopped, signals_as_interrupts():
        signal.raise_signal(signal.SIGTERM)
    assert stopped.value.signum == signal.SIGTERM and stopped.value.exit_code == 143
    assert isinstance(stopped.value, KeyboardInterrupt)  # handled as Ctrl-C is
    assert str(stopped.value) == "stopped by SIGTERM"
    assert signal.getsignal(signal.SIGTERM) is signal.SIG_DFL  # restored


def test_a_second_signal_does_not_cut_the_cleanup_short():
    with pytest.raises(Terminated), signals_as_interrupts():
        try:
            signal.raise_signal(signal.SIGHUP)
        finally:
            signal.raise_signal(signal.SIGTERM)  # ignored while the first one unwinds


def test_a_handler_someone_else_installed_is_left_alone():
    seen = []
    theirs = signal.signal(signal.SIGHUP, lambda signum, frame: seen.append(signum))
    try:
        with signals_as_interrupts():
            assert signal.getsignal(signal.SIGTERM) is not signal.SIG_DFL
            signal.raise_signal(signal.SIGHUP)
        assert seen == [signal.SIGHUP]
    finally:
        signal.signal(signal.SIGHUP, theirs)


def test_a_handler_installed_during_the_run_stays():
    def later(signum, frame):
        pass

    with signals_as_interrupts():
        signal.signal(signal.SIGTERM, later)  # as ray.init does
    try:
        assert signal.getsignal(signal.SIGTERM) is later
        assert signal.getsignal(signal.SIGHUP) is signal.SIG_DFL
    finally:
        signal.signal(signal.SIGTERM, signal.SIG_DFL)


def test_outside_the_main_thread_nothing_changes():
    seen = {}

    def body():
        with signals_as_interrupts():
            seen.update({s: signal.getsignal(s) for s in SIGNALS})

    worker = threading.Thread(target=body)
    worker.start()
    worker.join()
    assert all(handler is signal.SIG_DFL for handler in seen.values()) and len(seen) == 2
