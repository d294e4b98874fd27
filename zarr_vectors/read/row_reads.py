"""Row runs of many chunks and columns, read together (spec §8, §9.0).

:func:`read_many` serves :meth:`LevelReader.read_many
<zarr_vectors.read.reader.LevelReader.read_many>`: whole chunks, row runs of chunks
(objects by id, partly covered chunks of object kinds) and the columns that go with them.
A request for every row of a chunk fetches the chunk's shard whole, with no index first;
others fetch the row blocks covering their runs through the shard index (cached by the
reader's :class:`~zarr_vectors.read.shard_indexes.ShardIndexes`).

On a local directory each shard is read by the thread that decodes it, and the shards of a
large read are shared with the decoding helper thread
(:func:`~zarr_vectors.store.native_blocks.in_turns`), so one thread reads while the other
decodes. On object storage every column's byte ranges go out in one batch first.
"""

from __future__ import annotations

import functools
from dataclasses import dataclass, field
from typing import TYPE_CHECKING

import numpy as np

from zarr_vectors.errors import CorruptChunkError
from zarr_vectors.kernels.bin_runs import copy_row_runs
from zarr_vectors.read import _read_plans as read_plans
from zarr_vectors.store.arrays import read_region
from zarr_vectors.store.io import ByteRange, local_root
from zarr_vectors.store.native_blocks import in_turns
from zarr_vectors.store.shards import RowLayout, ShardIndex, shard_key

if TYPE_CHECKING:
    from zarr_vectors.read.reader import LevelReader

__all__ = ["ChunkRows", "read_many"]

_SHARED_SHARD_BYTES = 64 * 2**10
"""Decoded bytes per shard, on average, from which a read's shards are shared with the
helper thread (measured: sharing small shards made skeleton reads slower)."""

_Requests = list[tuple[str, list[ByteRange]]]
"""Per job of a column's plan: its shard key and the byte ranges to fetch of it."""


@dataclass(frozen=True, slots=True)
class ChunkRows:
    """Row runs ``[start, stop)`` wanted from one spatial chunk (zarr chunk index)."""

    chunk: tuple[int, ...]
    runs: np.ndarray  # (k, 2) int64, sorted, non-overlapping


@dataclass(frozen=True, slots=True)
class _Column:
    """One column of a :func:`read_many` call and how its rows are fetched."""

    name: str
    path: str
    layout: RowLayout
    wanted: list[ChunkRows]
    plan: read_plans.RowPlan
    whole: list[bool]  # per request: fetch the chunk's shard whole
    every_row: list[bool]  # per request: every row of the chunk, by its known row count


def read_many(reader: LevelReader, reads: list[tuple[str, list[ChunkRows]]]) -> list[np.ndarray]:
    """Rows of several columns, each for its own requests, fetched together.

    All requests go out at once: the missing shard indexes of every column in one batch,
    then the row blocks of every column in one batch (so on object storage the whole read
    costs two round trips at most, one when the indexes are cached). A request for all
    the rows of a chunk fetches the chunk's shard whole, with no index needed first.
    Columns reading the same requests share one plan of the row blocks. A request with
    one run is decoded straight into the result; the blocks that requests with several
    runs need are decoded once each into a scratch buffer, and their rows are gathered
    from it in one step at the end.

    Parameters
    ----------
    reader
        The level's reader.
    reads
        ``(column name, requests)`` pairs.

    Returns
    -------
    list of numpy.ndarray
        Per pair, the rows of every request, runs and requests concatenated in order.
    """
    columns = _plan_columns(reader, reads)
    reader.fetch_indexes(
        (c.name, c.wanted[i].chunk)
        for c in columns.values()
        for i, *_ in c.plan.jobs
        if not c.whole[i]
    )
    done: dict[int, np.ndarray] = {}
    for batch in _column_batches(reader, columns):
        requests = {k: _column_requests(reader, columns[k]) for k in batch}
        payloads = None  # a local file is read by the turn that decodes it
        if not reader.io.is_local:
            fetched = iter(reader.io.get_ranges([r for rs in requests.values() for r in rs]))
            payloads = {k: [next(fetched) for _ in requests[k]] for k in batch}
        for k in batch:
            fetched_k = None if payloads is None else payloads[k]
            done[k] = _decode_column(reader, columns[k], requests[k], fetched_k)
    return [
        done[k] if k in done else _read_rows_fallback(reader, name, wanted)
        for k, (name, wanted) in enumerate(reads)
    ]


def _plan_columns(
    reader: LevelReader, reads: list[tuple[str, list[ChunkRows]]]
) -> dict[int, _Column]:
    """The columns of ``reads`` we decode ourselves, by position, with their plans."""
    plans: dict[tuple[int, int], read_plans.RowPlan] = {}
    columns: dict[int, _Column] = {}
    for k, (name, wanted) in enumerate(reads):
        layout = reader.layouts[name]
        if layout is None:
            continue
        plan_key = (id(wanted), layout.rows_per_block)
        if plan_key not in plans:
            plans[plan_key] = read_plans.RowPlan.build(wanted, layout.rows_per_block)
        every = [_every_row(reader, name, w) for w in wanted]
        whole = [e and layout.chunks_per_shard == 1 for e in every]
        columns[k] = _Column(
            name, reader.paths[name], layout, wanted, plans[plan_key], whole, every
        )
    return columns


def _column_batches(reader: LevelReader, columns: dict[int, _Column]) -> list[list[int]]:
    """Columns whose rows are fetched together: all of them, but on a local directory.

    A local file read has no round trip to save, and fetching one column at a time holds
    less memory at once (fewer fresh pages to fault in: measurably faster).
    """
    if local_root(reader.io.store) is not None:
        return [[k] for k in columns]
    return [list(columns)]


def _every_row(reader: LevelReader, name: str, want: ChunkRows) -> bool:
    """Whether ``want`` asks for every row the chunk holds in column ``name``, by its known
    row count.

    Such a request of a one-chunk shard fetches the shard whole, with no index first (an
    I/O choice only: rows are decoded through the shard's own index either way; never for a
    shard of several chunks, spec §9.0.1, whose other chunks' blocks are not fetched). Its
    shard must store no row block past the count
    (:meth:`~zarr_vectors.read.reader.LevelReader.check_stored_blocks`).
    """
    if want.runs.shape[0] != 1 or int(want.runs[0, 0]) != 0:
        return False
    stored = reader.known_rows(name, want.chunk)
    return stored is not None and int(want.runs[0, 1]) == stored


def _column_requests(reader: LevelReader, column: _Column) -> _Requests:
    """The byte ranges to fetch for one column: per job, its shard key and ranges."""
    out: _Requests = []
    layout = column.layout
    for i, groups, _, _ in column.plan.jobs:
        chunk = column.wanted[i].chunk
        if column.whole[i]:
            key = shard_key(column.path, np.asarray(chunk), len(layout.row_shape))
            out.append((key, [None]))
            continue
        key, entries = reader.indexes.entries(column.path, layout, chunk)
        out.append((key, [layout.block_span(entries, g[0], g[-1] + 1, key) for g in groups]))
    return out


def _decode_column(
    reader: LevelReader,
    column: _Column,
    requests: _Requests,
    payloads: list[list[bytes] | None] | None,
) -> np.ndarray:
    """Decode a column's row blocks into its rows, in request order.

    ``payloads`` are the fetched bytes of every request, or None to read each request
    (from a local directory) just before decoding it. Each shard decodes into its own
    slice of the result (or of a scratch buffer), so the shards of a large read are shared
    with the helper thread. Only large shards are shared: the Python work per shard holds
    the GIL, and for small shards it outweighs the decoding.
    """
    dtype, row_shape = reader.column_spec(column.name)
    plan = column.plan
    out = np.empty((int(plan.starts[-1]), *row_shape), dtype=dtype)
    rows = plan.blocks.blocks.shape[0] * plan.rows_per_block
    shard_bytes = (out.nbytes + rows * column.layout.row_nbytes) / max(1, len(plan.jobs))
    if shard_bytes < _SHARED_SHARD_BYTES:
        fetched = reader.io.get_ranges(requests) if payloads is None else payloads
        _decode_small_shards(reader, column, requests, fetched, out)
        return out
    scratch = np.empty((rows, *row_shape), dtype=dtype)
    decode = functools.partial(_decode_shard, reader, column, out, scratch, requests, payloads)
    in_turns(len(plan.jobs), decode, (out.shape[0] + rows) // plan.rows_per_block)
    blocks = plan.blocks
    copy_row_runs(scratch, blocks.src, out, blocks.dst, blocks.count)
    return out


def _decode_shard(
    reader: LevelReader,
    column: _Column,
    out: np.ndarray,
    scratch: np.ndarray,
    requests: _Requests,
    payloads: list[list[bytes] | None] | None,
    turn: int,
) -> None:
    """Decode job ``turn`` of the column's plan, one chunk's shard, into ``out`` or
    ``scratch``: ``requests[turn]`` (shard key and byte spans) gives its bytes,
    ``payloads[turn]`` when they are fetched already."""
    key = requests[turn][0]
    parts = reader.io.get_ranges([requests[turn]])[0] if payloads is None else payloads[turn]
    i, groups, rows, slot = column.plan.jobs[turn]
    plan, layout = column.plan, column.layout
    parts, entries, bases = _job_entries(reader, column, i, requests[turn], parts)
    if rows is not None:
        target = out[plan.starts[i] : plan.starts[i + 1]]
        layout.decode_rows_into(parts[0], entries, bases[0], rows, target, key)
        return
    r = plan.rows_per_block
    target = scratch[slot * r : (slot + sum(len(g) for g in groups)) * r]
    layout.decode_block_groups_into(
        list(zip(parts, bases, groups, strict=True)), entries, target, key
    )


def _job_entries(
    reader: LevelReader,
    column: _Column,
    i: int,
    request: tuple[str, list[ByteRange]],
    parts: list[bytes] | None,
) -> tuple[list[bytes], ShardIndex, list[int]]:
    """The fetched ``parts`` of request ``i``'s shard, its index entries, and the shard
    offset of each part; a shard fetched whole has its index decoded and cached here.

    Raises
    ------
    CorruptChunkError
        When the shard is missing, its index does not decode, or (a request of every row)
        it stores row blocks past the chunk's known row count
        (:meth:`~zarr_vectors.read.reader.LevelReader.check_stored_blocks`).
    """
    key, spans = request
    if parts is None:
        what = "is missing" if column.whole[i] else "disappeared while reading"
        raise CorruptChunkError(f"{key}: shard of an occupied chunk {what}")
    chunk, layout = column.wanted[i].chunk, column.layout
    if column.whole[i]:
        reader.indexes.add((column.path, chunk), key, layout.decode_index(parts[0], key))
        bases = [0]
    else:
        bases = [span[0] for span in spans if isinstance(span, tuple)]
    entries = reader.indexes.entries(column.path, layout, chunk)[1]
    if column.every_row[i]:
        reader.check_stored_blocks(column.name, chunk, entries)
    return parts, entries, bases


@dataclass(slots=True)
class _BlockList:
    """The stored row blocks of many shards of one column (of ``layout``), fetched and
    joined into one buffer: per block, where it lies in the buffer, the scratch slot it
    decodes to, and (for error messages) its number and shard key."""

    layout: RowLayout
    starts: list[int] = field(default_factory=list)
    lengths: list[int] = field(default_factory=list)
    slots: list[int] = field(default_factory=list)
    numbers: list[int] = field(default_factory=list)
    keys: list[str] = field(default_factory=list)
    pieces: list[bytes] = field(default_factory=list)
    nbytes: int = 0

    def add(
        self, key: str, payload: bytes, base: int, index: ShardIndex, blocks: list[int], slot: int
    ) -> None:
        """Add the consecutive ``blocks`` of shard ``key``, whose bytes from ``base`` on are
        ``payload``, decoding to the slots from ``slot`` on.

        Raises
        ------
        CorruptChunkError
            When a block is missing from the shard's index.
        """
        located = self.layout.locate_blocks(len(payload), base, index, blocks, key)
        for b, (start, nbytes) in zip(blocks, located, strict=True):
            self.starts.append(self.nbytes + start if start >= 0 else -1)  # outside: refused
            self.lengths.append(nbytes)
            self.slots.append(slot)
            self.numbers.append(b)
            self.keys.append(key)
            slot += 1
        self.pieces.append(payload)
        self.nbytes += len(payload)

    def decode(self, scratch: np.ndarray) -> None:
        """Decode every block into its slot of ``scratch`` by one native call where
        possible (:meth:`RowLayout.decode_blocks_at`)."""
        starts = np.array(self.starts, dtype=np.int64)
        starts[starts < 0] = self.nbytes
        self.layout.decode_blocks_at(
            np.frombuffer(b"".join(self.pieces), dtype=np.uint8),
            starts,
            np.array(self.lengths, dtype=np.int64),
            np.array(self.slots, dtype=np.int64),
            scratch,
            lambda i: (self.numbers[i], self.keys[i]),
        )


def _decode_small_shards(
    reader: LevelReader,
    column: _Column,
    requests: _Requests,
    fetched: list[list[bytes] | None],
    out: np.ndarray,
) -> None:
    """Decode a column's many small shards together: every block by one native call into
    reused scratch (no fresh pages to fault in), then every run of rows copied to ``out``
    by one kernel call.

    Shards holding a few blocks each (skeleton and mesh chunks) cost more in per-shard
    calls, fresh buffers and row gathers than in decoding. The blocks of several-run
    requests take the scratch slots the plan gives them; those of one-run requests follow.
    """
    plan, layout = column.plan, column.layout
    r = plan.rows_per_block
    blocks = _BlockList(layout)
    slot = plan.blocks.blocks.shape[0]
    single: list[tuple[int, int, int]] = []  # (scratch row, out row, rows) per one-run request
    for request, fetched_parts, (i, groups, rows, first_slot) in zip(
        requests, fetched, plan.jobs, strict=True
    ):
        key = request[0]
        parts, entries, bases = _job_entries(reader, column, i, request, fetched_parts)
        if rows is not None:
            first_slot, slot = slot, slot + len(groups[0])
            single.append(
                (
                    first_slot * r + rows[0] - groups[0][0] * r,
                    int(plan.starts[i]),
                    rows[1] - rows[0],
                )
            )
        for payload, base, group in zip(parts, bases, groups, strict=True):
            blocks.add(key, payload, base, entries, group, first_slot)
            first_slot += len(group)
    runs = plan.blocks
    src, dst, count = runs.src, runs.dst, runs.count
    if single:
        more = np.array(single, dtype=np.int64).reshape(-1, 3)
        src, dst, count = (
            np.concatenate([a, b]) for a, b in zip((src, dst, count), more.T, strict=True)
        )
    dtype, row_shape = reader.column_spec(column.name)
    nbytes = slot * r * layout.row_nbytes
    spare = read_plans.SPARE.take(nbytes)  # no fresh pages to fault in on every read
    try:
        scratch = spare[:nbytes].view(dtype).reshape(-1, *row_shape)
        blocks.decode(scratch)
        copy_row_runs(scratch, src, out, dst, count)
    finally:
        read_plans.SPARE.give(spare)


def _read_rows_fallback(reader: LevelReader, name: str, wanted: list[ChunkRows]) -> np.ndarray:
    """Rows through zarr-python, for arrays whose codecs we do not decode ourselves."""
    path = reader.paths[name]
    trailing = tuple(reader.array_meta[name]["shape"][reader.grid.ndim + 1 :])
    parts: list[np.ndarray] = []
    for want in wanted:
        stop = int(want.runs[:, 1].max(initial=0))
        lo = (*want.chunk, 0)
        hi = (*(c + 1 for c in want.chunk), stop)
        region = read_region(reader.io.store, path, lo + (0,) * len(trailing), hi + trailing)
        rows = region.reshape(stop, *trailing)
        parts.extend(rows[a:b] for a, b in want.runs)
    dtype, row_shape = reader.column_spec(name)
    return np.concatenate(parts) if parts else np.empty((0, *row_shape), dtype=dtype)
