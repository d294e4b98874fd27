"""Byte and JSON I/O on any zarr-python 3 store, with batched concurrent requests.

This module is the only bridge between zarr_vectors and zarr's asynchronous store API:
every request goes through :class:`StoreIO`, which runs batches of requests
concurrently on zarr's event loop and returns plain ``bytes``.
"""

from __future__ import annotations

import asyncio
import contextlib
import itertools
import json
import os
import threading
import time
from collections.abc import Coroutine, Iterable, Sequence
from concurrent.futures import Future
from pathlib import Path
from typing import Any, TypeVar

import numpy as np
from zarr.abc.store import (
    ByteRequest,
    OffsetByteRequest,
    RangeByteRequest,
    Store,
    SuffixByteRequest,
)
from zarr.storage import FsspecStore, MemoryStore, ZipStore

from zarr_vectors.errors import MetadataError
from zarr_vectors.format.dimensions import named_array_json
from zarr_vectors.format.json_text import indented_json
from zarr_vectors.kernels import results_of, shared_pool
from zarr_vectors.store.links import LocalTree
from zarr_vectors.store.local_files import (
    ByteRange,
    list_local,
    list_local_dir,
    read_fd,
    read_local,
    read_local_files,
    read_local_ranges,
    read_local_spans,
    write_local,
)
from zarr_vectors.store.locations import (
    SafeLocalStore,
    StoreLike,
    access_errors,
    local_destination,
    local_root,
    resolve_store,
)
from zarr_vectors.store.versions import (
    StoreVersion,
    changed_error,
    place_of,
    settled_stamp,
    stamp_of,
)
from zarr_vectors.store.zarr_adapter import (
    default_buffer_prototype,
    sync,
)

__all__ = [
    "ByteRange",
    "SafeLocalStore",
    "StoreIO",
    "StoreLike",
    "access_errors",
    "local_destination",
    "local_root",
    "resolve_store",
]

T = TypeVar("T")


_MAX_CONCURRENCY = 256
"""Requests in flight at once on a non-local store: enough that the shard indexes or the row
ranges of every column of the chunks a query meets go out in one wave."""
_WRITE_THREADS = 4
"""Threads writing the files of one batch to a local directory."""
_THREADED_WRITE_BYTES = 1 << 20
"""Local writes of fewer bytes (or fewer than 4 keys) are made by the calling thread."""

_DIRS_LOCK = threading.Lock()
"""Held while directories are made (:meth:`StoreIO.make_parents_soon` makes them in a
helper thread); process-wide, so that a handle stays picklable."""
_SOON_LOCK = threading.Lock()
"""Guards the keys waiting for the directory helper (:meth:`StoreIO.make_parents_soon`)."""

_MERGE_GAP = 1 << 18
"""Ranges of one key closer than this many bytes are fetched from a non-local store as one
request: a gap this size costs less transfer time than a round trip costs waiting."""


def _read_local_stamped(tree: LocalTree, key: str) -> tuple[bytes | None, tuple[int, ...] | None]:
    """The bytes of a local file and, when it had settled before the read, its stamp
    (:func:`~zarr_vectors.store.versions.settled_stamp`, from the descriptor read)."""
    read_from = time.time_ns()
    opened = tree.open(key)
    if opened is None:
        return None, None
    fd, size = opened
    try:
        return read_fd(fd, size, None), settled_stamp(os.fstat(fd), read_from)
    finally:
        tree.release(key, fd)


def _parse_json(key: str, raw: bytes | None) -> Any:
    if raw is None:
        return None
    try:  # UTF-8, as every document is written: no guess at the encoding (~5 us a document)
        return json.loads(raw.decode())
    except (UnicodeDecodeError, json.JSONDecodeError):
        pass  # parsed again below: the other encodings json reads, or the error to raise
    try:
        return json.loads(raw)
    except (UnicodeDecodeError, json.JSONDecodeError) as exc:
        raise MetadataError(f"{key} is not valid JSON ({exc})") from exc


_Piece = tuple[int, int, int]
"""Where one requested range lies in the fetched ranges: (fetch number, offset, length)."""


def _merge_ranges(ranges: Sequence[ByteRange]) -> tuple[list[ByteRange], list[_Piece | None]]:
    """Ranges to fetch for ``ranges`` of one key, close ``(start, stop)`` ranges merged.

    Returns the ranges to fetch and, per requested range, its piece of a fetched range
    (None: that range is fetched on its own, as the fetched range of the same position).
    """
    fetch: list[ByteRange] = []
    pieces: list[_Piece | None] = [None] * len(ranges)
    spans = sorted(
        (r[0], r[1], i) for i, r in enumerate(ranges) if isinstance(r, tuple) and r[1] > r[0]
    )
    lo = hi = -1
    for start, stop, i in spans:
        if not fetch or start - hi > _MERGE_GAP:
            fetch.append((start, stop))
            lo, hi = start, stop
        else:
            hi = max(hi, stop)
            fetch[-1] = (lo, hi)
        pieces[i] = (len(fetch) - 1, start - lo, stop - start)
    for i, r in enumerate(ranges):
        if pieces[i] is None:
            if isinstance(r, tuple):  # an empty range
                pieces[i] = (len(fetch), 0, 0)
                fetch.append((r[0], r[0]))
            else:
                pieces[i] = (len(fetch), 0, -1)
                fetch.append(r)
    return fetch, pieces


def _to_request(byte_range: ByteRange) -> ByteRequest | None:
    if byte_range is None:
        return None
    if isinstance(byte_range, int):
        return SuffixByteRequest(-byte_range)
    start, stop = byte_range
    return RangeByteRequest(start, stop)


class StoreIO:
    """Synchronous, batched access to the keys of a zarr store.

    Parameters
    ----------
    store
        The zarr store. It is opened on first use if it is not open yet.
    new_files
        Local directories only: write every file as a new file moved into place, never
        through an existing one (needed when the directory holds hard links to another
        store's files).
    staged
        Local directories only: the directory is a write's own staging directory, which
        no one reads before it is committed (or discarded), so JSON documents are written
        in place rather than moved in whole.
    """

    def __init__(self, store: Store, *, new_files: bool = False, staged: bool = False) -> None:
        self.store = store
        self._made: set[Path] = set()
        self._dir_tasks: list[Future[None]] = []
        self._soon: list[str] | None = None  # keys for the helper task at work, if any
        self._new_files = new_files
        self._staged = staged
        self._atomic_json = not staged
        root = local_root(store)  # the store of a handle is never replaced
        self._local = None if root is None else LocalTree(os.fspath(root))
        self._is_local = root is not None  # asked ~11 times a query
        self._root_path = None if root is None else os.fspath(root)  # stat before a read
        self._root_json = None if root is None else os.path.join(root, "zarr.json")
        self._axes: tuple[str, ...] | None = None

    def name_dimensions(self, axes: Sequence[str]) -> None:
        """Give every array ``zarr.json`` written through this handle from now on the
        ``dimension_names`` of format 1.3 (spec §9.0.3), for a store with axes ``axes``.

        A new store's writer calls it, so each document is written once, named (a zip file
        cannot replace a member); the commit names any array still without them.

        Examples
        --------
        >>> io = StoreIO(scratch_store())
        >>> io.name_dimensions(["x", "y"])
        >>> io.set("0/vertex_counts/zarr.json", b'{"node_type": "array", "shape": [2, 3]}')
        >>> io.read_json("0/vertex_counts/zarr.json")["dimension_names"]
        ['chunk.x', 'chunk.y']
        """
        self._axes = tuple(axes)

    def _tree(self) -> LocalTree | None:
        """The opener of a local store's files (spec §12.4 link rule), None for other stores."""
        return self._local

    def files_kept(self) -> contextlib.AbstractContextManager[None]:
        """A scope in which the calling thread's reads of a local store open each data
        file once (:meth:`LocalTree.keeping <zarr_vectors.store.links.LocalTree.keeping>`:
        a shard's index and then its blocks, read by one query); no effect on other
        stores. Every file is closed when the scope ends.

        Examples
        --------
        >>> io = StoreIO(scratch_store())
        >>> with io.files_kept():
        ...     io.get("missing") is None
        True
        """
        return contextlib.nullcontext() if self._local is None else self._local.keeping()

    @property
    def is_local(self) -> bool:
        """Whether the store is a local directory (written with plain file calls)."""
        return self._is_local

    def _run(self, coro: Coroutine[Any, Any, T]) -> T:
        with access_errors(self.store):
            return sync(coro)

    async def _ensure_open(self) -> None:
        if not self.store._is_open:
            await self.store._open()

    async def _gather(self, coros: Sequence[Coroutine[Any, Any, T]]) -> list[T]:
        await self._ensure_open()
        semaphore = asyncio.Semaphore(_MAX_CONCURRENCY)

        async def bounded(coro: Coroutine[Any, Any, T]) -> T:
            async with semaphore:
                return await coro

        return list(await asyncio.gather(*(bounded(c) for c in coros)))

    async def _get(self, key: str, byte_range: ByteRange) -> bytes | None:
        request = _to_request(byte_range)
        if request is None and isinstance(self.store, FsspecStore):
            request = OffsetByteRequest(0)  # one GET: s3fs asks for the size first otherwise
        buf = await self.store.get(key, default_buffer_prototype(), request)
        return None if buf is None else buf.to_bytes()

    def get_many(self, requests: Sequence[tuple[str, ByteRange]]) -> list[bytes | None]:
        """Fetch many keys (or byte ranges of keys), concurrently unless the store is local.

        Local directories are read directly in the calling thread: with the OS page cache
        a file read takes microseconds, far less than a round trip through an event loop.

        Parameters
        ----------
        requests
            ``(key, byte_range)`` pairs; see :data:`ByteRange`.

        Returns
        -------
        list of bytes or None
            One entry per request, None where the key does not exist.
        """
        if not requests:
            return []
        tree = self._tree()
        if tree is not None:
            return [read_local(tree, key, byte_range) for key, byte_range in requests]
        return self._run(self._gather([self._get(k, r) for k, r in requests]))

    def get_ranges(
        self, requests: Sequence[tuple[str, Sequence[ByteRange]]]
    ) -> list[list[bytes] | None]:
        """Fetch several byte ranges (see :data:`ByteRange`) of each of many keys at once.

        A local file is opened once for all its ranges. Other stores fetch every key's
        ranges concurrently, in one batch; ranges of a key that lie close together
        (gaps under 256 KiB) are fetched as one request and split afterwards.

        Returns
        -------
        list
            Per key, its ranges' bytes in order, or None when the key does not exist.
        """
        tree = self._tree()
        if tree is not None:
            return read_local_ranges(tree, requests)
        plans = [_merge_ranges(ranges) for _, ranges in requests]
        flat = self.get_many(
            [
                (key, span)
                for (key, _), (fetch, _) in zip(requests, plans, strict=True)
                for span in fetch
            ]
        )
        out: list[list[bytes] | None] = []
        pos = 0
        for fetch, pieces in plans:
            parts = flat[pos : pos + len(fetch)]
            pos += len(fetch)
            out.append(_cut(parts, pieces))
        return out

    def read_spans_into(
        self,
        keys: Sequence[str],
        span_key: np.ndarray,
        span_start: np.ndarray,
        span_stop: np.ndarray,
        buffer: np.ndarray,
    ) -> int:
        """Read byte spans of keys back to back into ``buffer``.

        Span ``i`` is bytes ``[span_start[i], span_stop[i])`` of key ``keys[span_key[i]]``.
        A local file is opened once for its consecutive spans (of one key, whichever
        ``span_key`` names it) and read straight into the buffer (one ``preadv`` per run of
        spans at most 16 KiB apart: :func:`~zarr_vectors.store.local_files.read_local_spans`);
        other stores fetch every span in one concurrent batch (as :meth:`get_ranges`): the
        spans of one key together, close ones in one request.

        Returns
        -------
        int
            -1 when every span was read whole, else ``span_key`` of a span whose key is
            missing or too short.
        """
        tree = self._tree()
        if tree is not None:
            joined = (span_key, span_start, span_stop)
            return read_local_spans(tree, keys, joined, buffer.data)
        owners, starts, stops = span_key.tolist(), span_start.tolist(), span_stop.tolist()
        ends = list(itertools.accumulate(b - a for a, b in zip(starts, stops, strict=True)))
        groups: dict[str, tuple[int, list[ByteRange], list[int]]] = {}  # spans of one key
        for i, (owner, start, stop) in enumerate(zip(owners, starts, stops, strict=True)):
            group = groups.setdefault(keys[owner], (owner, [], []))
            group[1].append((start, stop))
            group[2].append(i)
        fetched = self.get_ranges([(key, group[1]) for key, group in groups.items()])
        for (owner, spans, where), parts in zip(groups.values(), fetched, strict=True):
            if parts is None:
                return owner
            for span, i, part in zip(spans, where, parts, strict=True):
                assert isinstance(span, tuple)
                size = span[1] - span[0]
                if len(part) != size:
                    return owner
                buffer[ends[i] - size : ends[i]] = np.frombuffer(part, dtype=np.uint8)
        return -1

    def get(self, key: str, byte_range: ByteRange = None) -> bytes | None:
        """Fetch one key, or None when it does not exist."""
        return self.get_many([(key, byte_range)])[0]

    async def _set(self, key: str, value: bytes) -> None:
        await self.store.set(key, default_buffer_prototype().buffer.from_bytes(value))

    def set_many(self, items: Sequence[tuple[str, bytes]]) -> None:
        """Write many keys (each key must appear once), concurrently unless the store is local.

        Local directories are written directly: one ``open``/``write`` per key, directories
        created once, JSON documents replaced atomically. The store's commit order (root
        metadata last, spec §2.4) — not per-file atomicity — is what keeps an interrupted
        write from opening as a complete store.
        """
        if not items:
            return
        if self._axes is not None:
            axes = self._axes
            items = [(key, named_array_json(key, value, axes)) for key, value in items]
        root = local_root(self.store)
        if root is None:
            self._run(self._gather([self._set(k, v) for k, v in items]))
            return
        self._make_parents(root, [key for key, _ in items])
        if len(items) < 4 or sum(len(v) for _, v in items) < _THREADED_WRITE_BYTES:
            self._set_local_many(root, items)
            return
        # File system calls release the GIL: a few threads overlap them, each writing every
        # _WRITE_THREADS-th file (a task per file cost more than a small file's write).
        # All are done when this returns, so no write outlives the call.
        pool = shared_pool("zv-write", _WRITE_THREADS)
        share = [items[k::_WRITE_THREADS] for k in range(_WRITE_THREADS)]
        results_of([pool.submit(self._set_local_many, root, part) for part in share if part])

    def _make_parents(self, root: Path, keys: Iterable[str]) -> None:
        """Create the missing directories of ``keys`` on the calling thread, before their
        files are written (by several threads, which would otherwise each try them)."""
        parents = {key.rpartition("/")[0] for key in keys}
        for parent in sorted(parents):
            directory = root / parent if parent else root
            if directory not in self._made:
                with _DIRS_LOCK:  # a directory helper task may be at work
                    self._make_dirs(root, directory)

    def make_parents_soon(self, keys: Sequence[str]) -> None:
        """Start creating the directories of ``keys``, which will be written later, in a
        helper thread (a write's own staging directory only; otherwise nothing is done).

        A ``mkdir`` waits on the file system far longer than it computes (measured: 20 ms
        of wall for 4.6 ms of CPU for a skeleton write's 61 shard directories at load 4),
        so the writer keeps encoding meanwhile. :meth:`set_many` still makes any that are
        missing when it writes. The writer's target waits for the helper
        (:meth:`wait_for_directories`) before it commits or discards the directory.

        One helper task at a time: keys given while it is at work join its next round,
        so a write's ~60 shard directories cost a few tasks rather than one each.
        """
        root = local_root(self.store)
        if root is None or not self._staged or not keys:
            return
        with _SOON_LOCK:
            if self._soon is not None:  # the helper is at work: it takes them next
                self._soon.extend(keys)
                return
            self._soon = list(keys)
        pool = shared_pool("zv-dirs", 1)
        self._dir_tasks.append(pool.submit(self._make_parents_waiting, root))

    def _make_parents_waiting(self, root: Path) -> None:
        """The helper task: make the directories of the waiting keys until none wait."""
        done = False
        try:
            while not done:
                with _SOON_LOCK:
                    keys = self._soon or []
                    self._soon = [] if keys else None  # None: the next call starts a task
                    done = not keys
                if keys:
                    self._make_parents(root, keys)
        finally:
            if not done:  # failed: a later call starts a new task
                with _SOON_LOCK:
                    self._soon = None

    def __getstate__(self) -> dict[str, Any]:
        """A copy without the directory helper's tasks (futures do not pickle)."""
        return {**self.__dict__, "_dir_tasks": [], "_soon": None}

    def wait_for_directories(self) -> None:
        """Wait until no directory helper task of :meth:`make_parents_soon` is at work.

        A task's failure is not raised: :meth:`set_many` makes (and reports on) any
        directory a write needs.
        """
        tasks, self._dir_tasks = self._dir_tasks, []
        for task in tasks:
            with contextlib.suppress(OSError):
                task.result()

    def _set_local_many(self, root: Path, items: Sequence[tuple[str, bytes]]) -> None:
        """Write files whose directories exist (:meth:`_make_parents`)."""
        base = os.fspath(root)
        for key, value in items:
            atomic = self._new_files or (self._atomic_json and key.endswith((".json", ".zattrs")))
            write_local(f"{base}/{key}", value, atomic=atomic)

    def _make_dirs(self, root: Path, directory: Path) -> None:
        """Create ``directory`` and its missing parents below ``root``, top down.

        Directories made (or found) are remembered, so a parent is never asked for twice
        and each new directory costs one ``mkdir``.
        """
        if root not in self._made:
            root.mkdir(parents=True, exist_ok=True)
            self._made.add(root)
        missing = []
        while directory not in self._made:
            missing.append(directory)
            directory = directory.parent
        for path in reversed(missing):
            with contextlib.suppress(FileExistsError):  # made by another thread, or kept
                os.mkdir(path)
            self._made.add(path)

    def set(self, key: str, value: bytes) -> None:
        """Write one key."""
        self.set_many([(key, value)])

    def delete_many(self, keys: Sequence[str]) -> None:
        """Delete keys (missing ones are ignored)."""
        root = local_root(self.store)
        if root is not None:
            for key in keys:
                (root / key).unlink(missing_ok=True)
            return

        async def delete(key: str) -> None:
            await self.store.delete(key)

        self._run(self._gather([delete(k) for k in keys]))

    def read_json(self, key: str) -> Any:
        """Parse the JSON document at ``key``; None when the key does not exist.

        Raises
        ------
        MetadataError
            When the document is not valid UTF-8 JSON.
        """
        return _parse_json(key, self.get(key))

    def _place(self) -> tuple[int, ...] | None:
        """:attr:`StoreVersion.place` of this store (no I/O unless local or a zip file)."""
        if self._root_path is not None:
            return place_of(self._root_path)
        if isinstance(self.store, ZipStore):
            return place_of(Path(self.store.path))
        return None

    def read_root(self) -> tuple[Any, StoreVersion]:
        """The parsed root ``zarr.json`` (None when missing) and the store's version.

        Raises
        ------
        MetadataError
            When the document is not valid UTF-8 JSON.
        """
        place = self._place()
        tree = self._tree()
        if tree is None:
            raw = self.get("zarr.json")
            return _parse_json("zarr.json", raw), StoreVersion(place, raw)
        raw, stamp = _read_local_stamped(tree, "zarr.json")
        return _parse_json("zarr.json", raw), StoreVersion(place, raw, stamp)

    def _root_stamp(self) -> tuple[int, ...] | None:
        """:func:`~zarr_vectors.store.versions.stamp_of` the local root ``zarr.json`` (not
        following a link), None when it cannot be taken."""
        if self._root_json is None:
            return None
        try:
            return stamp_of(os.lstat(self._root_json))
        except OSError:
            return None

    def check_unchanged(self, opened: StoreVersion, where: str) -> None:
        """Raise :class:`StoreChangedError` when the store is no longer the version ``opened``.

        Meant for the error path of a read (a missing shard, a checksum mismatch, an
        undecodable block): it costs a ``stat`` and a read of the root ``zarr.json``. A
        version without :attr:`StoreVersion.place` (taken in another process, perhaps on
        another machine) is compared by its root ``zarr.json`` only.

        Raises
        ------
        StoreChangedError
            When the store was replaced, changed or removed since ``opened`` was taken.
        """
        place = self._place() if opened.place is not None else None
        if place == opened.place and self.get("zarr.json") == opened.root:
            return
        raise changed_error(self.store, where, gone=place == ())

    def check_version(self, opened: StoreVersion, where: str) -> None:
        """Raise :class:`StoreChangedError` when the store is no longer the version ``opened``.

        The check made after every data read (spec §12.4): the store's identity on the file
        system (local directory or zip file: one ``stat``) and its root ``zarr.json`` (one
        small read; on an object store one GET). Every commit writes a new root (its
        ``commit`` id, spec §3.1) and an in-place change first rewrites it (§2.4), so a read
        that overlapped another writer's commit in any way is caught here. On a local
        directory whose root had settled when it was opened (:attr:`StoreVersion.stamp`), an
        ``lstat`` of the root equal to the stamp stands for the read: the file is the one
        read and unchanged since; any other ``lstat`` has the bytes compared.

        Raises
        ------
        StoreChangedError
            When the store was replaced, changed or removed since ``opened`` was taken.
        """
        place = self._place() if opened.place is not None else None
        if place is not None and opened.place is not None and place[:2] != opened.place[:2]:
            raise changed_error(self.store, where, gone=place == ())
        if opened.stamp is not None and self._root_stamp() == opened.stamp:
            return
        if self.get("zarr.json") != opened.root:
            raise changed_error(self.store, where, gone=False)

    def check_same_directory(self, opened: StoreVersion, where: str) -> None:
        """Raise :class:`StoreChangedError` when a local store's directory was replaced.

        The cheap check made before every read of a local directory: one ``stat`` of the
        store's path (about 2 µs), compared by device and inode, so a replaced store is never
        read through a handle that opened the old one (its cached counts would pick wrong
        rows from the new shards). Other stores: no check (no request is added).

        Raises
        ------
        StoreChangedError
            When the path now names another directory, or nothing.
        """
        if self._root_path is None or opened.place is None:
            return
        place = place_of(self._root_path)
        if place[:2] != opened.place[:2]:
            raise changed_error(self.store, where, gone=place == ())

    def read_metadata(
        self, keys: Sequence[str], dirs: Sequence[str] = ()
    ) -> tuple[list[Any], list[list[str]]]:
        """Parse the JSON documents at ``keys`` and list the children of ``dirs``, at once.

        On a non-local store every request goes out in one concurrent batch (one round
        trip) instead of one after another.

        Returns
        -------
        tuple
            The documents (None where a key does not exist) and, per directory, the sorted
            names of its children (empty when it does not exist).

        Raises
        ------
        MetadataError
            When a document is not valid UTF-8 JSON.
        """
        tree = self._tree()
        if tree is not None:
            listed: dict[str, list[str]] = {}
            for prefix in dirs:  # parents first: a child a listing lacks is not looked at
                listed[prefix] = [] if _absent(prefix, listed) else list_local_dir(tree, prefix)
            present = [key for key in keys if not _absent(key, listed)]
            found = dict(zip(present, read_local_files(tree, present), strict=True))
            raws = [found.get(key) for key in keys]
            listings = [listed[prefix] for prefix in dirs]
        else:
            raws, listings = self._run(self._get_and_list(keys, dirs))
        return [_parse_json(k, raw) for k, raw in zip(keys, raws, strict=True)], listings

    async def _get_and_list(
        self, keys: Sequence[str], dirs: Sequence[str]
    ) -> tuple[list[bytes | None], list[list[str]]]:
        async def listing(prefix: str) -> list[str]:
            return sorted([key async for key in self.store.list_dir(prefix)])

        raws, listings = await asyncio.gather(
            self._gather([self._get(k, None) for k in keys]),
            self._gather([listing(p) for p in dirs]),
        )
        return raws, listings

    def list_prefix(self, prefix: str) -> list[str]:
        """All keys that start with ``prefix``, sorted (local directories are walked directly)."""
        root = local_root(self.store)
        if root is not None:
            return list_local(os.fspath(root), prefix)

        async def collect() -> list[str]:
            await self._ensure_open()
            return [key async for key in self.store.list_prefix(prefix)]

        return sorted(self._run(collect()))

    def list_dir(self, prefix: str) -> list[str]:
        """Names of the direct children of the node at ``prefix`` (no trailing slash), sorted."""
        tree = self._tree()
        if tree is not None:
            return list_local_dir(tree, prefix)

        async def collect() -> list[str]:
            await self._ensure_open()
            return [key async for key in self.store.list_dir(prefix)]

        return sorted(self._run(collect()))

    def usage(self) -> tuple[int, int]:
        """``(bytes, keys)`` the whole store holds: a local directory's files, a zip file's
        size on disk and entries, else the sizes of the listed keys (concurrent requests)."""
        root = local_root(self.store)
        if root is not None:
            sizes = [os.path.getsize(os.path.join(root, key)) for key in list_local(str(root), "")]
            return sum(sizes), len(sizes)
        keys = self.list_prefix("")
        if isinstance(self.store, ZipStore):
            return os.path.getsize(self.store.path), len(keys)
        found = self._run(self._gather([self.store.getsize(key) for key in keys]))
        return sum(found), len(keys)

    def is_empty(self) -> bool:
        """True when the store holds no key at all."""

        async def probe() -> bool:
            await self._ensure_open()
            return await self.store.is_empty("")

        return self._run(probe())

    def clear(self) -> None:
        """Delete every key of the store."""
        if isinstance(self.store, FsspecStore):
            # FsspecStore.clear() stops at the first listed "directory" that an earlier
            # recursive delete already removed (object storage), leaving keys behind.
            self.delete_many(self.list_prefix(""))
            return

        async def wipe() -> None:
            await self._ensure_open()
            await self.store.clear()

        self._run(wipe())

    def close(self) -> None:
        """Close the store when it needs closing (zip files)."""
        if isinstance(self.store, ZipStore) and self.store._is_open:
            self.store.close()


def _absent(key: str, listed: dict[str, list[str]]) -> bool:
    """Whether a directory listed in ``listed`` (names by directory) lacks the next name on
    the way to ``key``, so that nothing can be found at ``key``.

    Examples
    --------
    >>> _absent("0/links/zarr.json", {"0": ["vertices", "zarr.json"]})
    True
    >>> _absent("0/vertices/zarr.json", {"0": ["vertices", "zarr.json"]})
    False
    """
    at = key.find("/")
    while at > 0:
        names = listed.get(key[:at])
        if names is not None:
            end = key.find("/", at + 1)
            if key[at + 1 : end if end > 0 else len(key)] not in names:
                return True
        at = key.find("/", at + 1)
    return False


def _cut(parts: Sequence[bytes | None], pieces: Sequence[_Piece | None]) -> list[bytes] | None:
    """The requested ranges out of the fetched ones; None when the key was missing."""
    out: list[bytes] = []
    for piece in pieces:
        assert piece is not None
        fetched, offset, length = piece
        part = parts[fetched]
        if part is None:
            return None
        out.append(part if length < 0 else part[offset : offset + length])
    return out


def json_bytes(doc: Any) -> bytes:
    """Serialise ``doc`` the way every JSON document of a store is written."""
    return indented_json(doc, allow_nan=False).encode("utf-8")


def scratch_store() -> MemoryStore:
    """A fresh in-memory store for building metadata documents before committing them."""
    return MemoryStore()
