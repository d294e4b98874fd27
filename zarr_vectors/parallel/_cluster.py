"""The cluster a parallel write runs on, and waiting for its tasks so that failures are loud.

A write uses the ``distributed.Client`` it is given, else connects to a scheduler address,
else starts a :class:`distributed.LocalCluster` of worker processes and closes it at the end.

Every stage is waited for as a whole (:meth:`Tasks.run`): its results are used only when all
of its tasks finished, and a failure is raised only once no task of the stage still runs, so
nothing writes into a destination after the write has given up and cleaned it. A worker that
dies makes the scheduler run its tasks again elsewhere (up to
``distributed.scheduler.allowed-failures`` times); the tasks are idempotent — a chunk writer
run twice writes the same bytes to the same keys — so such a retry is safe. A stage's tasks
are released once it is over, so none of them runs again after the write has moved on.
"""

from __future__ import annotations

import uuid
from collections.abc import Callable, Iterator, Sequence
from contextlib import contextmanager
from types import ModuleType
from typing import Any

from zarr_vectors._optional import require
from zarr_vectors._progress import Progress
from zarr_vectors.errors import InvalidInputError, ParallelWriteError

__all__ = ["Tasks", "cluster_client", "distributed", "write_tasks"]

_LARGE_GRAPH = "distributed.admin.large-graph-warning-threshold"


def distributed() -> ModuleType:
    """The ``distributed`` package, or the error naming the extra that installs it."""
    return require("distributed", extra="distributed", purpose="parallel writes")


@contextmanager
def cluster_client(client: Any, scheduler_address: str | None, n_workers: int) -> Iterator[Any]:
    """Yield the client to run a write on (created and closed here unless ``client`` is given).

    Parameters
    ----------
    client
        A ``distributed.Client`` to use, or None.
    scheduler_address
        Without ``client``: the address of a running scheduler (``"tcp://host:8786"``).
    n_workers
        Without either: worker processes of the temporary ``LocalCluster``.

    Raises
    ------
    InvalidInputError
        When both ``client`` and ``scheduler_address`` are given, or ``n_workers < 1``.
    MissingDependencyError
        Without the ``distributed`` extra.
    """
    dist = distributed()
    if client is not None:
        if scheduler_address is not None:
            raise InvalidInputError("give client or scheduler_address, not both")
        yield client
        return
    if scheduler_address is not None:
        with dist.Client(scheduler_address) as connected:
            yield connected
        return
    if int(n_workers) < 1:
        raise InvalidInputError(f"n_workers must be at least 1, got {n_workers}")
    with (
        dist.LocalCluster(
            n_workers=int(n_workers),
            threads_per_worker=1,
            processes=True,
            dashboard_address=":0",  # any free port: never collide with another cluster
        ) as cluster,
        dist.Client(cluster) as local,
    ):
        yield local


class Tasks:
    """The tasks of one write: submitted under names unique to it, waited for by stage.

    Parameters
    ----------
    client
        The ``distributed.Client``.
    progress
        Called as ``progress(stage, tasks done, tasks)`` while :meth:`run` waits.
    """

    def __init__(self, client: Any, progress: Progress | None = None) -> None:
        self.client = client
        self.progress = progress
        self.token = uuid.uuid4().hex[:12]
        self.futures: list[Any] = []

    @property
    def workers(self) -> int:
        """Worker threads the scheduler knows now (at least 1): how many tasks run at once."""
        return max(1, int(sum(self.client.nthreads().values())))

    def submit(self, name: str, function: Callable[..., Any], *args: Any) -> Any:
        """Start ``function(*args)`` (futures among ``args`` are waited for) as task ``name``.

        Arguments travel inside the task, so the scheduler can run it again after a worker
        died (data scattered to a worker would die with it). That is deliberate, so
        distributed's advice to scatter large arguments is turned off for these tasks.
        """
        dask = require("dask", extra="distributed", purpose="parallel writes")
        with dask.config.set({_LARGE_GRAPH: "1 PiB"}):
            future = self.client.submit(function, *args, key=f"zv-{name}-{self.token}")
        self.futures.append(future)
        return future

    def put(self, name: str, value: Any) -> Any:
        """Place ``value`` on a worker as task ``name`` (its dependants fetch it from there)."""
        return self.submit(name, _held, value)

    def compute(self, collections: list[Any]) -> list[Any]:
        """Start computing dask collections (blocks of a dask array, partitions of a frame)."""
        futures = list(self.client.compute(collections))
        self.futures += futures
        return futures

    def run(self, futures: Sequence[Any], stage: str) -> list[Any]:
        """Wait until every task of a stage has ended, then return the results in order.

        Parameters
        ----------
        futures
            The stage's futures.
        stage
            What the stage does, for messages (``"binning partitions"``).

        Raises
        ------
        InvalidInputError
            Raised by a task for bad input (a partition that is not valid): re-raised as is.
        ParallelWriteError
            For any other task failure, a worker lost for good (``KilledWorker``) or a
            cancelled task, chained to the cluster's exception.
        """
        dist = distributed()
        unsettled = list(futures)
        while unsettled:
            dist.wait(
                unsettled,
                return_when="ALL_COMPLETED" if self.progress is None else "FIRST_COMPLETED",
            )
            # a result lost with its worker after the task ended is computed again
            unsettled = [f for f in unsettled if f.status in ("pending", "lost")]
            if self.progress is not None:
                self.progress(stage, len(futures) - len(unsettled), len(futures))
        for future in futures:
            _raise_failure(dist, future, stage)
        return list(self.client.gather(list(futures)))

    def release(self, futures: Sequence[Any] | None = None) -> None:
        """Let the cluster drop results (default: all of the write's) once nothing needs them.

        Only this write's hold is dropped: a result that a later task still needs stays
        (and can be computed again) until that task has run, and a dask collection the
        caller persisted keeps its blocks. Released tasks are not run again when their
        result is lost with a worker, so a stage whose writes are done is released before
        anything is committed: no retried writer can then write after the commit.
        """
        dropped = self.futures if futures is None else list(futures)
        for future in dropped:
            future.release()
        kept = {id(f) for f in dropped}
        self.futures = [f for f in self.futures if id(f) not in kept]


@contextmanager
def write_tasks(client: Any, progress: Progress | None = None) -> Iterator[Tasks]:
    """Yield the :class:`Tasks` of a write; their results are released at the end, even on
    error (a raised exception's traceback would otherwise keep them, and their data on the
    workers, alive). ``progress`` is told of the tasks each stage has done."""
    tasks = Tasks(client, progress)
    try:
        yield tasks
    finally:
        tasks.release()


def _held(value: Any) -> Any:
    """A task's value, held by a worker for the tasks that depend on it."""
    return value


def _raise_failure(dist: ModuleType, future: Any, stage: str) -> None:
    """Raise the error of a task that did not finish (see :meth:`Tasks.run`)."""
    if future.status == "finished":
        return
    if future.status != "error":
        raise ParallelWriteError(
            f"{stage}: task {future.key} ended as {future.status!r}; nothing was committed"
        )
    error = future.exception()
    if isinstance(error, InvalidInputError):
        raise error
    if isinstance(error, dist.KilledWorker):
        raise ParallelWriteError(
            f"{stage}: workers died running task {future.key} more often than the "
            f"scheduler retries; nothing was committed ({error})"
        ) from error
    raise ParallelWriteError(
        f"{stage}: task {future.key} failed on the cluster: "
        f"{type(error).__name__}: {error}; nothing was committed"
    ) from error
