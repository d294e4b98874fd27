"""A zarr store wrapper that delays every request and records it, to count round-trip waves.

:class:`LatencyStore` wraps any zarr-python 3 store. Each request (``get``, each range of
``get_partial_values``, ``exists``, a listing, ``set``, ``delete``...) first sleeps
``latency`` seconds on the event loop, as a request to object storage waits for its round
trip, then runs on the inner store. Every request is logged with its start and end.

A request's *wave* is one more than the highest wave among the requests that had finished
before it started (the first requests are wave 1). Requests issued together (one
``asyncio.gather``) share a wave; a request that could only be issued once an earlier answer
had arrived starts a new one. With a latency ``L`` the wall time of a read is then about
``waves * L`` plus the transfer, so the number of waves, not of requests, is what a read
over object storage pays in round trips. Waves are counted from the order of events, not
from clock times, so they are the same with ``latency=0`` (useful in fast tests).
"""

from __future__ import annotations

import asyncio
import threading
import time
from collections.abc import AsyncGenerator, AsyncIterator, Iterable
from dataclasses import dataclass, field

from zarr.abc.buffer import Buffer
from zarr.abc.store import ByteRequest, Store
from zarr.core.buffer import BufferPrototype
from zarr.storage import WrapperStore

__all__ = ["LatencyStore", "Request", "RequestLog", "Summary"]


@dataclass
class Request:
    """One request made through a :class:`LatencyStore`.

    Attributes
    ----------
    op
        ``"get"``, ``"exists"``, ``"list_dir"``, ``"list_prefix"``, ``"list"``, ``"set"``,
        ``"delete"``, ``"is_empty"``, ``"getsize"``...
    key
        The key (or prefix) it named.
    wave
        Its wave (see the module docstring).
    started, ended
        ``time.perf_counter()`` at its start and end (``ended`` is None while in flight).
    nbytes
        Bytes returned (``get``) or sent (``set``).
    """

    op: str
    key: str
    wave: int
    started: float
    ended: float | None = None
    nbytes: int = 0


@dataclass(frozen=True)
class Summary:
    """Totals of a request log: requests, waves and bytes moved."""

    requests: int
    waves: int
    nbytes: int
    by_op: dict[str, int]


@dataclass
class RequestLog:
    """The requests of one or more :class:`LatencyStore` objects, in start order.

    Thread-safe: requests are logged on zarr's event-loop thread and read from the caller's.
    """

    requests: list[Request] = field(default_factory=list)
    _finished_wave: int = 0
    _lock: threading.Lock = field(default_factory=threading.Lock)

    def begin(self, op: str, key: str) -> Request:
        """Log the start of a request; its wave follows from the requests already finished."""
        with self._lock:
            request = Request(op, key, self._finished_wave + 1, time.perf_counter())
            self.requests.append(request)
            return request

    def end(self, request: Request, nbytes: int = 0) -> None:
        """Log the end of ``request``, which makes later requests depend on it."""
        with self._lock:
            request.ended = time.perf_counter()
            request.nbytes = nbytes
            self._finished_wave = max(self._finished_wave, request.wave)

    def reset(self) -> None:
        """Forget every request (waves count from 1 again)."""
        with self._lock:
            self.requests = []
            self._finished_wave = 0

    def summary(self) -> Summary:
        """Requests, waves and bytes of the requests logged since the last :meth:`reset`."""
        with self._lock:
            done = list(self.requests)
        by_op: dict[str, int] = {}
        for r in done:
            by_op[r.op] = by_op.get(r.op, 0) + 1
        return Summary(
            requests=len(done),
            waves=max((r.wave for r in done), default=0),
            nbytes=sum(r.nbytes for r in done),
            by_op=by_op,
        )

    def keys_by_wave(self) -> dict[int, list[str]]:
        """``op key`` of every request, grouped by wave (for reading what a read did)."""
        with self._lock:
            done = list(self.requests)
        out: dict[int, list[str]] = {}
        for r in done:
            out.setdefault(r.wave, []).append(f"{r.op} {r.key}")
        return out


class LatencyStore(WrapperStore[Store]):
    """A store that waits ``latency`` seconds before every request and logs it.

    Parameters
    ----------
    store
        The inner store (``MemoryStore``, ``LocalStore``, ``FsspecStore``...).
    latency
        Seconds added to every request (0 still yields to the event loop once, so requests
        issued together overlap).
    log
        Where requests are recorded; a fresh :class:`RequestLog` by default.
    """

    def __init__(self, store: Store, latency: float = 0.0, log: RequestLog | None = None) -> None:
        super().__init__(store)
        self.latency = latency
        self.log = RequestLog() if log is None else log

    def _with_store(self, store: Store) -> LatencyStore:
        return type(self)(store, self.latency, self.log)

    def __repr__(self) -> str:
        return f"LatencyStore({self._store!r}, latency={self.latency})"

    def __str__(self) -> str:
        return f"latency-{self.latency}s-{self._store}"

    async def _delay(self, op: str, key: str) -> Request:
        request = self.log.begin(op, key)
        await asyncio.sleep(self.latency)
        return request

    async def get(
        self, key: str, prototype: BufferPrototype, byte_range: ByteRequest | None = None
    ) -> Buffer | None:
        request = await self._delay("get", key)
        try:
            buf = await self._store.get(key, prototype, byte_range)
        finally:
            self.log.end(request)
        request.nbytes = 0 if buf is None else len(buf)
        return buf

    async def get_partial_values(
        self,
        prototype: BufferPrototype,
        key_ranges: Iterable[tuple[str, ByteRequest | None]],
    ) -> list[Buffer | None]:
        return list(
            await asyncio.gather(*(self.get(key, prototype, rng) for key, rng in key_ranges))
        )

    async def _get_many(
        self, requests: Iterable[tuple[str, BufferPrototype, ByteRequest | None]]
    ) -> AsyncGenerator[tuple[str, Buffer | None], None]:
        for key, prototype, byte_range in requests:
            yield key, await self.get(key, prototype, byte_range)

    async def exists(self, key: str) -> bool:
        request = await self._delay("exists", key)
        try:
            return await self._store.exists(key)
        finally:
            self.log.end(request)

    async def is_empty(self, prefix: str) -> bool:
        request = await self._delay("is_empty", prefix)
        try:
            return await self._store.is_empty(prefix)
        finally:
            self.log.end(request)

    async def getsize(self, key: str) -> int:
        request = await self._delay("getsize", key)
        try:
            return await self._store.getsize(key)
        finally:
            self.log.end(request)

    async def set(self, key: str, value: Buffer) -> None:
        request = await self._delay("set", key)
        try:
            await self._store.set(key, value)
        finally:
            self.log.end(request, len(value))

    async def set_if_not_exists(self, key: str, value: Buffer) -> None:
        request = await self._delay("set", key)
        try:
            await self._store.set_if_not_exists(key, value)
        finally:
            self.log.end(request, len(value))

    async def delete(self, key: str) -> None:
        request = await self._delay("delete", key)
        try:
            await self._store.delete(key)
        finally:
            self.log.end(request)

    async def _listing(self, op: str, prefix: str, keys: AsyncIterator[str]) -> AsyncIterator[str]:
        request = await self._delay(op, prefix)
        try:
            async for key in keys:
                yield key
        finally:
            self.log.end(request)

    def list(self) -> AsyncIterator[str]:
        return self._listing("list", "", self._store.list())

    def list_prefix(self, prefix: str) -> AsyncIterator[str]:
        return self._listing("list_prefix", prefix, self._store.list_prefix(prefix))

    def list_dir(self, prefix: str) -> AsyncIterator[str]:
        return self._listing("list_dir", prefix, self._store.list_dir(prefix))
