"""SIGTERM and SIGHUP during a run become an exception the run cleans up after, as Ctrl-C.

Why: a scheduler, a container runtime or a closed terminal stops a process with SIGTERM or
SIGHUP, whose default action ends it on the spot: its MLflow run stays RUNNING for ever
and its hidden ``runs/.<id>.tmp`` folder stays behind. Raised as `Terminated` (a
`KeyboardInterrupt`, so everything that treats Ctrl-C as "stop now" does the same), the
pipeline removes the folder, the tracking layer ends the run KILLED with the error, and
the CLI exits with 128 + the signal's number, the shell's convention.

Only a signal still at its default action is taken over: a handler someone else installed
(submitit's, which lets Slurm's SIGTERM pass so its requeue handler can act; a Ray
worker's; ``nohup``'s ignored SIGHUP) is theirs to keep. Only the main thread can install
handlers, so elsewhere (a launcher's thread) nothing changes. The previous handlers come
back when the run ends, unless someone replaced ours meanwhile (``ray.init`` installs its
own): theirs stays.
"""

from __future__ import annotations

import contextlib
import signal
import threading
from collections.abc import Iterator
from types import FrameType

SIGNALS = tuple(getattr(signal, name) for name in ("SIGTERM", "SIGHUP") if hasattr(signal, name))
"""The signals a run turns into `Terminated` (SIGHUP does not exist on Windows)."""


class Terminated(KeyboardInterrupt):
    """The run was stopped by `signum`; the CLI exits with `exit_code` (128 + signum)."""

    def __init__(self, signum: int) -> None:
        super().__init__(f"stopped by {signal.Signals(signum).name}")
        self.signum = signum

    @property
    def exit_code(self) -> int:
        """128 + the signal's number: what a shell reports for a process the signal ended."""
        return 128 + self.signum


class _Handler:
    """Raises `Terminated` on the first signal; later ones wait for the cleanup it starts
    (a second SIGTERM must not cut the removal of the folder or the KILLED mark short)."""

    def __init__(self) -> None:
        self.raised = False

    def __call__(self, signum: int, frame: FrameType | None) -> None:
        if not self.raised:
            self.raised = True
            raise Terminated(signum)


@contextlib.contextmanager
def signals_as_interrupts() -> Iterator[None]:
    """While inside, SIGTERM and SIGHUP at their default action raise `Terminated`."""
    if threading.current_thread() is not threading.main_thread():
        yield
        return
    handler = _Handler()
    previous = {
        sig: signal.signal(sig, handler)
        for sig in SIGNALS
        if signal.getsignal(sig) is signal.SIG_DFL
    }
    try:
        yield
    finally:
        for sig, before in previous.items():
            if signal.getsignal(sig) is handler:
                signal.signal(sig, before)
