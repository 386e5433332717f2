"""Where routed batches are computed: in this process, on forked ones, or on a Ray cluster.

Why several engines behind one generator: the driver (`runner.routing.route.stream.StreamDriver`)
takes routed batches in input order and never knows who routed them, so every engine runs
the same `BatchRouter` on the same planned batches and gives the same decisions, row for
row. The local engine routes in the driving process, or on one forked process per core
(`route_forked`: each inherits the loaded model and reads its own batches). On Ray, each
worker builds the router once (`map_batches` with a callable class: the
registered model is loaded once per worker) and returns each batch pickled; Ray Data keeps
the input order (``preserve_order``), so a kill and a rerun continue the same prefix.
"""

from __future__ import annotations

import gc
import multiprocessing
import os
import pickle
import socket
from collections import deque
from collections.abc import Iterator
from concurrent.futures import ProcessPoolExecutor
from itertools import islice
from typing import Any

from runner.errors import ConfigError
from runner.routing.route.stream import BatchRouter, RoutedBatch, StreamDriver

# what a Ray worker needs of the driver's environment (Ray workers do not inherit it)
WORKER_ENV = (
    "RUNNER_ARTIFACTS_DIR",
    "RUNNER_DATA_DIR",
    "MLFLOW_TRACKING_URI",
    "HF_HUB_OFFLINE",
    "HF_DATASETS_OFFLINE",
    "TRANSFORMERS_OFFLINE",
    "MLFLOW_DISABLE_TELEMETRY",
    "PYTHONPATH",
)


def route_local(
    router_args: dict[str, Any],
    driver: StreamDriver,
    pending: list[int],
    model: Any = None,
    workers: int = 1,
) -> Iterator[RoutedBatch]:
    """Route `pending` batches on this machine, in order, with the run's loaded `model`.

    With one worker, in this process: each batch is admitted by `driver` (repeats,
    ``limit``) when it is read, after the batch before it is stored, and only its admitted
    rows are routed. With more, on forked processes (`route_forked`).
    """
    if not pending:
        return
    if workers > 1:
        yield from route_forked(router_args, driver, pending, model, workers)
        return
    router = BatchRouter(**router_args, model=model)
    for index in pending:
        batch = router.read(index)
        admission = driver.admit(batch)
        yield router.route(admission.apply(batch), admission.last)
        if admission.last:
            return


def local_workers(setting: int | None, verifier: Any, pending: list[int]) -> int:
    """How many processes route the local engine's batches.

    `setting` (``routing.workers``), else one per core this process may use; 1 (the
    driving process alone) with a verifier (a model too heavy to copy per core), where
    ``fork`` is unavailable (the workers inherit the loaded model rather than load it
    again), or for a single batch.
    """
    if verifier is not None or len(pending) < 2:
        return 1
    if "fork" not in multiprocessing.get_all_start_methods():
        return 1
    cores = len(os.sched_getaffinity(0)) if hasattr(os, "sched_getaffinity") else os.cpu_count()
    return max(1, min(setting or cores or 1, len(pending)))


_FORKED: BatchRouter | None = None
"""The router a forked worker routes with (set in the driving process before the fork)."""


def _route_read(index: int) -> tuple[RoutedBatch, Any]:
    """In a worker: read batch `index`, route every valid row, and return the routed batch
    with what `StreamDriver.admit` needs of the read batch (ids, row numbers, problems)."""
    assert _FORKED is not None
    batch = _FORKED.read(index)
    ids = batch.frame[["example_id"]]
    return _FORKED.route(batch), type(batch)(batch.spec, ids, batch.rows, batch.skipped)


def route_forked(
    router_args: dict[str, Any],
    driver: StreamDriver,
    pending: list[int],
    model: Any,
    workers: int,
) -> Iterator[RoutedBatch]:
    """Route `pending` batches on `workers` forked processes; yielded in order.

    Why admit after routing: a worker reads its own batch (the driver reading each one
    first, as the Ray engine does, would make reading serial), routes all its valid rows,
    and the driver then admits the batch in input order (`StreamDriver.admit`: repeated
    ids, ``limit``). A batch admitted whole keeps the worker's decisions; a batch cut by a
    repeated id or the limit (rare: at most the last one, and those with repeats) is
    routed again here on its admitted rows, because a risk's last bits can depend on the
    rows scored beside it (the 1-worker path routes only admitted rows, and the bytes must
    be the same). Only used without a verifier (`local_workers`), whose cost is counted
    per routed row. At most two batches per worker are in flight, so memory stays flat.
    A batch whose reading fails in a worker is read again here, to raise its error as the
    driving process would.

    Before the fork the model scores one row of the first batch (the answer is thrown
    away): what it builds once per process (the TF-IDF vocabulary's fingerprint and
    token index) is then inherited by every worker instead of built by each.
    """
    global _FORKED
    from runner.routing.model import INPUT_FIELDS  # MLflow's pyfunc: only when routing

    router = _FORKED = BatchRouter(**router_args, model=model)
    first = router.read(pending[0]).frame
    if len(first):
        router.model.pyfunc.predict(first.iloc[:1][list(INPUT_FIELDS)].reset_index(drop=True))
    del first
    context = multiprocessing.get_context("fork")
    # Objects made so far are left out of garbage collection (in the workers too), so a
    # worker's collector does not write to, and so copy, every page it inherited.
    gc.freeze()
    try:
        yield from _forked_batches(router, driver, pending, context, workers)
    finally:
        gc.unfreeze()
        _FORKED = None


def _die_with(parent: int) -> None:
    """In a worker: end when the driving process ends, however it ends.

    A worker blocks on its pipe to the driver, and holds a copy of that pipe's other end,
    so a driver killed outright (SIGKILL, out of memory) would leave it waiting for ever.
    Linux ends it with the driver (``PR_SET_PDEATHSIG``); a driver gone already before that
    was set ends it here.
    """
    import ctypes
    import signal

    try:
        ctypes.CDLL(None, use_errno=True).prctl(1, int(signal.SIGKILL))  # PR_SET_PDEATHSIG
    except (OSError, AttributeError):  # not Linux: the driver's normal exit still ends it
        pass
    if os.getppid() != parent:
        os._exit(1)


def _forked_batches(
    router: BatchRouter, driver: StreamDriver, pending: list[int], context: Any, workers: int
) -> Iterator[RoutedBatch]:
    with ProcessPoolExecutor(
        workers, mp_context=context, initializer=_die_with, initargs=(os.getpid(),)
    ) as pool:
        queue = iter(pending)
        flight = deque((i, pool.submit(_route_read, i)) for i in islice(queue, 2 * workers))
        while flight:
            index, future = flight.popleft()
            flight.extend((i, pool.submit(_route_read, i)) for i in islice(queue, 1))
            try:
                routed, read = future.result()
            except Exception:
                router.read(index)  # the driving process's own error, when reading fails
                raise
            admission = driver.admit(read)
            if admission.keep.size != len(read.rows):
                # a batch cut by a repeat or the limit is routed again here on its admitted
                # rows alone: a risk's last bits can depend on the rows scored beside it
                routed = router.route(admission.apply(router.read(index)), admission.last)
            else:
                routed.skipped, routed.last = list(admission.skipped), admission.last
            yield routed
            if admission.last:
                pool.shutdown(cancel_futures=True)
                return


def ray_address(setting: str | None) -> str:
    """The cluster to use: ``routing.ray_address``, else ``$RAY_ADDRESS``, else an error."""
    address = setting or os.environ.get("RAY_ADDRESS")
    if not address:
        raise ConfigError(
            "routing.engine=ray needs a Ray cluster: set RAY_ADDRESS=HOST:PORT (`make services` "
            "starts one and writes it to artifacts/services/services.env) or "
            "routing.ray_address"
        )
    return address


CONNECT_TIMEOUT_S = 3.0
"""How long the cluster at ``routing.ray_address`` has to accept a connection and answer
gRPC's handshake (`probe`) before the run stops."""


def probe(address: str, timeout: float = CONNECT_TIMEOUT_S) -> None:
    """Raise `ConfigError` unless something at `address` answers as a gRPC server in time.

    Why before ``ray.init``: Ray 2.60 retries a silent GCS for minutes (20 tries of about
    40 s, three console warnings each: 834 s and 60 warnings measured here against a port
    that accepts and never answers; it also rewrites 127.0.0.1 to this machine's address),
    and shortening that would mean tuning Ray's internal ``RAY_*`` settings process-wide.
    The GCS (and a ``ray://`` client server) is a gRPC server, so a TCP connect and the
    HTTP/2 handshake gRPC opens every channel with (``grpc.channel_ready_future``) tell,
    within `timeout`, a closed port (refused at once) and a port that accepts and never
    answers (timed out) from a cluster, before Ray is touched.
    """
    target = address.removeprefix("ray://")
    host, _, port = target.rpartition(":")
    fix = (
        "start one (`make services`, or `ray start --head`) or fix RAY_ADDRESS / "
        "routing.ray_address"
    )
    if not port.isdigit():
        raise ConfigError(
            f"routing.engine=ray: {address!r} is not HOST:PORT (e.g. 127.0.0.1:6379); fix "
            "RAY_ADDRESS / routing.ray_address"
        )
    try:
        where = (host.strip("[]") or "127.0.0.1", int(port))  # [::1]:6379 is IPv6
        socket.create_connection(where, timeout=timeout).close()
    except OSError as exc:
        raise ConfigError(
            f"routing.engine=ray: no Ray cluster answers at {address} ({exc}); {fix}"
        ) from None
    import grpc

    channel = grpc.insecure_channel(target)
    try:
        grpc.channel_ready_future(channel).result(timeout=timeout)
    except grpc.FutureTimeoutError:
        raise ConfigError(
            f"routing.engine=ray: {address} accepts connections but does not answer as a Ray "
            f"cluster (no gRPC handshake within {timeout:g} s); {fix}"
        ) from None
    finally:
        channel.close()


def connect(setting: str | None) -> str:
    """Join the cluster before any row is read; a clear `ConfigError` when it is not there."""
    address = ray_address(setting)
    if address != "auto":
        probe(address)
    import ray

    if ray.is_initialized():
        return address
    env = {k: os.environ[k] for k in WORKER_ENV if k in os.environ}
    try:
        ray.init(
            address=address,
            runtime_env={"env_vars": env},
            log_to_driver=False,
            configure_logging=False,
        )
    except Exception as exc:  # Ray raises ConnectionError, RuntimeError, ... by version
        raise ConfigError(
            f"routing.engine=ray: cannot join the Ray cluster at {address}: "
            f"{type(exc).__name__}: {exc}"
        ) from None
    return address


class _RayRouter:
    """The callable class Ray Data builds once per worker (see the module docstring)."""

    def __init__(self, router_args: dict[str, Any]) -> None:
        self.router = BatchRouter(**router_args)

    def __call__(self, batch: dict[str, Any]) -> dict[str, Any]:
        indices = [int(i) for i in batch["index"]]
        admissions = [pickle.loads(a) for a in batch["admission"]]
        payloads = [
            pickle.dumps(self.router(i, a), protocol=5)
            for i, a in zip(indices, admissions, strict=True)
        ]
        return {"index": indices, "payload": payloads}


def route_on_ray(
    router_args: dict[str, Any], driver: StreamDriver, pending: list[int], workers: int
) -> Iterator[RoutedBatch]:
    """Route `pending` batches as Ray Data tasks on `workers` actors, yielded in order.

    The driving process first reads the batches in order and admits them (`driver`:
    repeats, ``limit``), so a worker routes only admitted rows and no batch after the
    limit is routed; this reads the input once more than the local engine does.
    """
    if not pending:
        return
    admissions = []
    for index in pending:
        admissions.append(driver.admit(driver.stream.read(driver.specs[index])))
        if admissions[-1].last:
            break
    import ray.data

    context = ray.data.DataContext.get_current()
    context.execution_options.preserve_order = True
    context.enable_progress_bars = False
    items = ray.data.from_items(
        [{"index": a.index, "admission": pickle.dumps(a, protocol=5)} for a in admissions],
        override_num_blocks=len(admissions),
    )
    routed = items.map_batches(
        _RayRouter,
        fn_constructor_kwargs={"router_args": router_args},
        batch_size=1,
        compute=ray.data.ActorPoolStrategy(size=workers),
        num_cpus=1,
        batch_format="numpy",
    )
    for row in routed.iter_rows():
        yield pickle.loads(row["payload"])
