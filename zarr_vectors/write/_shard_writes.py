"""Writing the shards of per-chunk arrays: encoding in worker threads, batched writes, and
assembling shards of several spatial chunks (spec §9.0, §9.0.1).

The level writers (:mod:`zarr_vectors.write._level_writer`) and the merges
(:mod:`zarr_vectors.update.merge_chunks`) hand every chunk's rows to a
:class:`ShardAssembler`, which encodes them and gives whole shards to a :class:`Batcher`.
"""

from __future__ import annotations

import itertools
from collections import deque
from collections.abc import Callable, Iterable, Sequence
from concurrent.futures import Future
from functools import partial
from operator import attrgetter, itemgetter

import numpy as np

from zarr_vectors.kernels import THREADS, shared_pool
from zarr_vectors.store.io import StoreIO
from zarr_vectors.store.shards import RowLayout, shard_key

__all__ = ["Batcher", "ShardAssembler", "shard_major_order", "shards_of"]

_FLUSH_BYTES = 64 * 2**20
_LOCAL_FLUSH_BYTES = 8 * 2**20
"""Local directories are written in smaller batches, so writing overlaps encoding."""
_THREAD_MIN_BYTES = 256 * 2**10
"""Chunks that are shards of their own, encoded from less input, are encoded by the caller:
with many small chunks a task per chunk costs more than it saves."""
_SHARD_THREAD_MIN_BYTES = 4 * 2**10
"""The same for a shard assembled from several chunks (there are few: one per shard and
array). Below 256 KiB such shards used to be encoded by the caller, but even a shard of a
few row blocks costs tens of microseconds per block to compress (C-Blosc makes a codec
context per block), far above a task's cost, and the caller has the next array to prepare
meanwhile (measured: skeleton writes, whose shards are mostly of 10-250 KiB)."""
_PENDING_BYTES = 32 * 2**20
"""Input bytes of shards being encoded at once, at most (about)."""
_ENCODE_THREADS = THREADS
_NBYTES = attrgetter("nbytes")
"""An array's bytes (summed over the chunks of a run by :meth:`ShardAssembler.add_chunks`)."""

_Pending = bytes | Future[bytes] | Future[list[tuple[str, bytes]]]
"""A value the batcher holds: bytes for one key, or a worker's future of them or of whole
files (:meth:`Batcher.add_files`)."""


class Batcher:
    """Collects encoded shards and writes them in concurrent batches.

    Large shards can be encoded in worker threads (:meth:`add_encoded`): compression
    releases the GIL, so it runs beside the caller, which keeps preparing chunks and does
    all the writing itself, in the order the shards were given. A value given ready
    (:meth:`add`) takes its turn behind the shards still being encoded; the caller does
    not wait for them. A worker only computes bytes; if the caller stops on an error,
    nothing is written behind its back.
    """

    def __init__(self, io: StoreIO) -> None:
        self.io = io
        self.items: list[tuple[str, bytes]] = []
        self.nbytes = 0
        self.pending: deque[tuple[str, _Pending, int]] = deque()
        self.pending_nbytes = 0
        self.local = io.is_local
        self.parents: set[str] = set()

    def _make_parents_soon(self, key: str) -> None:
        """Have the directory of ``key`` made now, in a helper thread, rather than when the
        batch is written (:meth:`StoreIO.make_parents_soon`)."""
        parent = key.rpartition("/")[0]
        if parent not in self.parents:
            self.parents.add(parent)
            self.io.make_parents_soon([key])

    def add(self, key: str, value: bytes) -> None:
        """Write ``value`` at ``key`` (after the shards given before it)."""
        self._make_parents_soon(key)
        if self.pending:
            self._hold(key, value, len(value))
        else:
            self._collect(key, value)

    def add_encoded(
        self,
        key: str,
        encode: Callable[[], bytes],
        nbytes: int,
        min_bytes: int | None = None,
    ) -> None:
        """Write ``encode()`` at ``key``, encoding it in a worker thread when it is large.

        ``nbytes`` is the size of the input ``encode`` reads (the bound on work in flight);
        with less than ``min_bytes`` (default :data:`_THREAD_MIN_BYTES`) the caller encodes
        it.
        """
        self._make_parents_soon(key)
        if nbytes < (_THREAD_MIN_BYTES if min_bytes is None else min_bytes) or _ENCODE_THREADS < 2:
            self.add(key, encode())
            return
        pool = shared_pool("zv-encode", _ENCODE_THREADS)
        self._hold(key, pool.submit(encode), nbytes)

    def add_files(self, encode: Callable[[], list[tuple[str, bytes]]], nbytes: int) -> None:
        """Write the files ``encode()`` gives (keys and bytes: a whole global array, say),
        computed in a worker thread unless ``nbytes`` (the input it reads) is small, after
        everything given before."""
        if nbytes < _THREAD_MIN_BYTES or _ENCODE_THREADS < 2:
            for key, value in encode():
                self.add(key, value)
            return
        pool = shared_pool("zv-encode", _ENCODE_THREADS)
        self._hold("", pool.submit(encode), nbytes)

    def _hold(self, key: str, value: _Pending, nbytes: int) -> None:
        """Queue ``value`` (bytes, or a worker's future of them or of whole files) behind
        the pending shards, collecting the oldest while more than :data:`_PENDING_BYTES`
        are held."""
        self.pending.append((key, value, nbytes))
        self.pending_nbytes += nbytes
        while self.pending_nbytes > _PENDING_BYTES and len(self.pending) > 1:
            self._settle(1)

    def _settle(self, count: int) -> None:
        """Collect the ``count`` oldest pending shards, in order."""
        for _ in range(count):
            key, value, nbytes = self.pending.popleft()
            self.pending_nbytes -= nbytes
            found = value.result() if isinstance(value, Future) else value
            for file_key, file_value in [(key, found)] if isinstance(found, bytes) else found:
                self._collect(file_key, file_value)

    def _collect(self, key: str, value: bytes) -> None:
        self.items.append((key, value))
        self.nbytes += len(value)
        if self.nbytes >= (_LOCAL_FLUSH_BYTES if self.local else _FLUSH_BYTES):
            self._write()

    def _write(self) -> None:
        self.io.set_many(self.items)
        self.items, self.nbytes = [], 0

    def flush(self) -> None:
        """Write everything given so far."""
        self._settle(len(self.pending))
        self._write()


def shard_major_order(
    chunks: np.ndarray, shard_chunks: tuple[int, ...], *, descending: bool = False
) -> np.ndarray:
    """Order of ``chunks`` (``(m, D)`` grid indices) that visits them shard by shard.

    Shards come in C order of their index (reversed if ``descending``: a store changed in
    place then never loses a shard before it is read), and the chunks of a shard in C order
    of their position inside it (spec §9.0.1). With one chunk per shard (``()``) the given
    order.
    """
    if not shard_chunks:
        return np.arange(len(chunks))
    chunks = np.asarray(chunks, dtype=np.int64).reshape(len(chunks), len(shard_chunks))
    per = np.asarray(shard_chunks, dtype=np.int64)
    shards = -(chunks // per) if descending else chunks // per
    keys = np.concatenate([shards, chunks % per], axis=1)
    return np.lexsort(keys.T[::-1])


def shards_of(chunks: np.ndarray, shard_chunks: tuple[int, ...]) -> list[tuple[int, ...]]:
    """The shard index of each of ``chunks`` (``(m, D)`` grid indices) with ``shard_chunks``
    chunks per shard along each axis, as tuples (spec §9.0.1)."""
    per = np.asarray(shard_chunks, dtype=np.int64)
    grid = np.asarray(chunks, dtype=np.int64).reshape(-1, per.shape[0])
    return [tuple(s) for s in (grid // per).tolist()]


class ShardAssembler:
    """Encodes the chunks of one per-chunk array and hands whole shards to a batcher.

    With one chunk per shard every chunk is a shard of its own. With several (spec §9.0.1)
    the rows of a shard's chunks (or their row blocks, already encoded) are held until a
    chunk of another shard arrives, so the chunks must come shard by shard
    (:func:`shard_major_order`); at most one shard per array is held at a time. The
    held rows are then encoded together (one kernel call for the shard's blocks, in a
    worker thread when they are large: :meth:`Batcher.add_encoded`).

    Rows :meth:`add` holds for a shard of several chunks are copied, since the caller may
    reuse its arrays while the shard is assembled. A chunk that is a shard of its own is
    encoded from the rows as given, possibly in a worker thread after :meth:`add` returns,
    and :meth:`add_chunks` never copies: those rows must stay unchanged until the batcher
    is flushed (the writers give arrays made for the chunk and never touched again).
    """

    def __init__(self, batcher: Batcher, path: str, layout: RowLayout) -> None:
        self.batcher, self.path, self.layout = batcher, path, layout
        self.shard: tuple[int, ...] | None = None
        self.parts: list[tuple[int, list[bytes] | np.ndarray]] = []
        self.nbytes = 0
        self.written: set[tuple[int, ...]] = set()
        self.shape = tuple(layout.shard_chunks or (1,))
        self.strides = tuple(int(np.prod(self.shape[d + 1 :])) for d in range(len(self.shape)))

    def add(self, chunk: np.ndarray, rows: np.ndarray) -> None:
        """Encode the ``n > 0`` rows of spatial chunk ``chunk`` (grid index); with one
        chunk per shard, ``rows`` must stay unchanged until the batcher is flushed."""
        if self.layout.chunks_per_shard == 1:
            self._add_single(chunk, rows)
            return
        self._hold(*self._place(chunk), np.array(rows, copy=True))  # the caller may reuse rows

    def add_chunks(self, chunks: np.ndarray, rows: Iterable[np.ndarray]) -> None:
        """Encode the rows of each of ``chunks`` (``(m, D)`` grid indices, shard by shard),
        as :meth:`add` of each chunk with rows would: the same shards, but the shard and
        place of every chunk computed at once, and the rows not copied (they must stay
        unchanged until the batcher is flushed). ``rows`` may be computed as they are
        taken, one chunk after another; chunks without rows store nothing."""
        if self.layout.chunks_per_shard == 1:
            for chunk, values in zip(chunks, rows, strict=True):
                if len(values):
                    self._add_single(chunk, values)
            return
        grid = np.asarray(chunks, dtype=np.int64).reshape(-1, len(self.shape))
        shape = np.asarray(self.shape, dtype=np.int64)
        shards = grid // shape
        places = ((grid % shape) @ np.asarray(self.strides, dtype=np.int64)).tolist()
        # the chunks of one shard come together: held run by run, not chunk by chunk
        bounds = [0, *(np.flatnonzero((shards[1:] != shards[:-1]).any(axis=1)) + 1).tolist()]
        given = iter(rows)
        for first, stop in itertools.pairwise([*bounds, len(places)]):
            taken = list(itertools.islice(given, stop - first))
            if len(taken) != stop - first:
                raise ValueError(f"{self.path}: fewer rows than chunks")
            parts = [(p, v) for p, v in zip(places[first:stop], taken, strict=True) if len(v)]
            if parts:
                self._hold_many(tuple(shards[first].tolist()), parts, sum(map(_NBYTES, taken)))
        if next(given, None) is not None:
            raise ValueError(f"{self.path}: more rows than chunks")

    def add_blocks(self, chunk: np.ndarray, blocks: list[bytes]) -> None:
        """Store spatial chunk ``chunk`` from its row blocks, already encoded (an append
        moves a chunk it does not change this way, see :meth:`RowLayout.chunk_blocks`)."""
        self._hold(*self._place(chunk), blocks)

    def _place(self, chunk: np.ndarray | Sequence[int]) -> tuple[tuple[int, ...], int]:
        """The shard of spatial chunk ``chunk`` and its position (C order) in the shard."""
        g = chunk.tolist() if isinstance(chunk, np.ndarray) else list(chunk)
        shard = tuple(v // n for v, n in zip(g, self.shape, strict=True))
        local = sum((v % n) * s for v, n, s in zip(g, self.shape, self.strides, strict=True))
        return shard, local

    def _add_single(self, chunk: np.ndarray, rows: np.ndarray) -> None:
        """Encode a chunk that is a shard of its own (rows read when it is encoded)."""
        layout = self.layout
        key = shard_key(self.path, chunk, len(layout.row_shape))
        self.batcher.add_encoded(key, partial(layout.encode_shard, rows, key), rows.nbytes)

    def _hold(self, shard: tuple[int, ...], local: int, part: list[bytes] | np.ndarray) -> None:
        """Keep a chunk's rows or encoded blocks (at ``local`` in ``shard``) until its shard
        is complete."""
        self._hold_many(shard, [(local, part)])

    def _hold_many(
        self,
        shard: tuple[int, ...],
        parts: Sequence[tuple[int, list[bytes] | np.ndarray]],
        nbytes: int | None = None,
    ) -> None:
        """:meth:`_hold` of several chunks of ``shard`` (``(local, rows or blocks)``);
        ``nbytes``, when given, the bytes of their rows."""
        if shard != self.shard:
            self.flush()
            if shard in self.written:
                raise ValueError(f"{self.path}: chunks of shard {shard} did not come together")
            self.shard = shard
        self.parts.extend(parts)
        if nbytes is None:
            nbytes = sum(part.nbytes for _, part in parts if isinstance(part, np.ndarray))
        self.nbytes += nbytes

    def flush(self) -> None:
        """Hand the shard being assembled to the batcher."""
        if self.shard is None or not self.parts:
            return
        parts = sorted(self.parts, key=itemgetter(0))
        key = shard_key(self.path, np.asarray(self.shard), len(self.layout.row_shape))
        encode = partial(_assemble, self.layout, parts, key)
        self.batcher.add_encoded(key, encode, self.nbytes, _SHARD_THREAD_MIN_BYTES)
        self.written.add(self.shard)
        self.shard, self.parts, self.nbytes = None, [], 0


def _assemble(
    layout: RowLayout, parts: list[tuple[int, list[bytes] | np.ndarray]], key: str
) -> bytes:
    """The bytes of the shard at ``key`` from its chunks' rows or encoded blocks."""
    rows = [(local, part) for local, part in parts if isinstance(part, np.ndarray)]
    if len(rows) == len(parts):
        return layout.encode_chunks_shard(rows, key)
    blocks = [(local, part) for local, part in parts if not isinstance(part, np.ndarray)]
    encoded = layout.encode_chunks_blocks([part for _, part in rows])
    blocks += [(local, found) for (local, _), found in zip(rows, encoded, strict=True)]
    blocks.sort(key=lambda part: part[0])
    return layout.assemble_shard(blocks, key)
