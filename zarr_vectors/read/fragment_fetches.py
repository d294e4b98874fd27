"""Fetching and decoding the fragment blobs of one level's chunks.

Methods of :class:`~zarr_vectors.read.reader.LevelReader` (bound there by name): the first
request wave of a read (blobs of chunks with their own shard, or the shard indexes of shared
shards, with the shard indexes of the row columns read next), the blobs of shared shards in
one batch of byte ranges decoded together, and the blobs held decoded but unparsed
(:class:`~zarr_vectors.read.held_blobs.HeldBlobs`).
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import TYPE_CHECKING

import numpy as np

from zarr_vectors.errors import CorruptChunkError, FragmentIndexError, MetadataError
from zarr_vectors.format.fragment_decoding import decode_dense_ranges
from zarr_vectors.read.blob_batches import StoredSpans, decode_blobs, stored_spans
from zarr_vectors.read.held_blobs import HeldBlob, held_blobs
from zarr_vectors.read.shard_indexes import chunk_array
from zarr_vectors.store.io import ByteRange
from zarr_vectors.store.native_blocks import decode_dense_blob_shards
from zarr_vectors.store.shards import RowLayout, ShardIndex, shard_key

__all__ = [
    "blob_ranges_of",
    "blob_layout",
    "decode_blob",
    "decode_chunk_blob",
    "fetch_held",
    "fetch_ranges",
    "first_wave",
    "get_grouped",
    "listed_blobs",
    "sharded_blobs",
]

if TYPE_CHECKING:
    from zarr_vectors.read.reader import LevelReader

_MISSING = 2**64 - 1


def blob_ranges_of(blob: np.ndarray, where: str) -> tuple[np.ndarray, np.ndarray]:
    """The fragment ranges of a chunk's decoded blob (spec §6).

    Raises
    ------
    CorruptChunkError
        When the blob is not a fragment index (``where``: its shard key).
    """
    try:
        return decode_dense_ranges(blob)
    except FragmentIndexError as exc:
        raise CorruptChunkError(f"{where}: {exc}") from exc


def _decode_blobs(
    layout: RowLayout,
    found: list[tuple[str, list[list[int]], tuple[int, int]]],
    payloads: list[bytes],
) -> list[np.ndarray]:
    """The blobs of several chunks in shared shards, decoded by one call of
    :meth:`~zarr_vectors.store.shards.RowLayout.decode_blocks_at` (one native kernel call
    where possible) instead of one call per row block.

    ``found`` holds each chunk's shard key, shard index entries and fetched byte span,
    ``payloads`` the bytes of each span. A chunk stores its first ``stored`` blocks.

    Raises
    ------
    CorruptChunkError
        When a block is missing, lies outside its chunk's bytes or fails a check.
    """
    total = sum(len(payload) for payload in payloads)
    numbers: list[int] = []
    keys: list[str] = []
    starts: list[int] = []
    lengths: list[int] = []
    counts: list[int] = []
    at = 0
    for (key, entries, span), payload in zip(found, payloads, strict=True):
        stored = sum(1 for e in entries if e[0] != _MISSING)
        blocks = range(stored)
        for b, (start, nbytes) in zip(
            blocks, layout.locate_blocks(len(payload), span[0], entries, blocks, key), strict=True
        ):
            numbers.append(b)
            keys.append(key)
            starts.append(at + start if start >= 0 else total)  # outside: the kernel refuses
            lengths.append(nbytes)
        counts.append(stored)
        at += len(payload)
    r = layout.rows_per_block
    out = np.zeros(len(numbers) * r, dtype=np.uint8)
    if numbers:
        layout.decode_blocks_at(
            np.frombuffer(b"".join(payloads), dtype=np.uint8),
            np.array(starts, dtype=np.int64),
            np.array(lengths, dtype=np.int64),
            np.arange(len(numbers), dtype=np.int64),
            out,
            lambda i: (numbers[i], keys[i]),
        )
    bounds = np.cumsum([0, *counts]) * r
    return [out[a:b] for a, b in zip(bounds[:-1].tolist(), bounds[1:].tolist(), strict=True)]


def first_wave(
    self: LevelReader,
    path: str,
    missing: list[tuple[int, ...]],
    index_columns: Sequence[str],
    indexed: list[tuple[int, ...]],
) -> list[bytes | None]:
    """Fetch in one batch the blobs of the ``missing`` chunks in the blob array at
    ``path`` when each has its own shard, else their shard indexes, with the shard
    indexes of ``index_columns`` for the ``indexed`` chunks (cached); the blobs
    fetched (none for shared shards: :meth:`_sharded_blobs` fetches them)."""
    layout = self._blob_layout(path) if missing else None  # fail before fetching shards
    sharded = layout is not None and layout.chunks_per_shard > 1
    blob_requests: list[tuple[str, ByteRange]] = [
        (shard_key(path, np.asarray(chunk), 0), None) for chunk in missing if not sharded
    ]
    index_chunks = chunk_array(indexed, self.grid.ndim)  # one array for every column
    columns = [
        (self.paths[column], column_layout)
        for column in index_columns
        if (column_layout := self.layouts.get(column)) is not None
    ]
    index_requests = self.indexes.column_requests(columns, index_chunks)
    if sharded and layout is not None:
        index_requests += self.indexes.chunk_requests(path, layout, missing)
    raws = self.io.get_many(blob_requests + [(r[1], r[2]) for r in index_requests])
    self.indexes.keep(index_requests, raws[len(blob_requests) :], strict=False)
    return raws[: len(blob_requests)]


def fetch_ranges(
    self: LevelReader,
    name: str,
    missing: list[tuple[int, ...]],
    index_columns: Sequence[str],
    indexed: list[tuple[int, ...]],
    dense_fragments: int | None,
) -> None:
    """Fetch and cache the fragment ranges of a point cloud's blob array ``name``
    for the ``missing`` chunks (see :meth:`blob_ranges`)."""
    path = f"{self.base}/{name}"
    found = self._first_wave(path, missing, index_columns, indexed)
    if not missing:
        return
    layout = self._blob_layout(path)
    if layout.chunks_per_shard > 1:  # few chunks a box: chunk by chunk
        for chunk, (where, blob) in zip(
            missing, self._listed_blobs(path, layout, missing), strict=True
        ):
            self._ranges[(name, chunk)] = blob_ranges_of(blob, where)
        return
    shard_keys = [shard_key(path, np.asarray(chunk), 0) for chunk in missing]
    dense: list[tuple[np.ndarray, np.ndarray] | None] = [None] * len(found)
    if dense_fragments is not None:
        dense = decode_dense_blob_shards(layout, found, shard_keys, dense_fragments)
    for chunk, where, raw, ranges in zip(missing, shard_keys, found, dense, strict=True):
        if ranges is None:
            ranges = blob_ranges_of(self._decode_chunk_blob(path, where, raw), where)
        self._ranges[(name, chunk)] = ranges


def fetch_held(
    self: LevelReader,
    name: str,
    chunks: list[tuple[int, ...]],
    index_columns: Sequence[str],
    indexed: list[tuple[int, ...]],
    with_missing: Sequence[str] = (),
) -> None:
    """Fetch the blobs of array ``name`` of the ``chunks`` not held yet and hold them
    decoded from their codecs but not parsed (:attr:`held`), the shard indexes of
    ``index_columns`` for the ``indexed`` chunks fetched in the same batch, and those
    of ``with_missing`` too when some blob is fetched (a repeated read plans no more
    than before)."""
    missing = self.held.missing(name, chunks)
    path = f"{self.base}/{name}"
    if missing:
        index_columns = [*index_columns, *with_missing]
    found = self._first_wave(path, missing, index_columns, indexed)
    if not missing:
        return
    layout = self._blob_layout(path)
    if layout.chunks_per_shard == 1:
        keys = [shard_key(path, np.asarray(chunk), 0) for chunk in missing]
        listed = [
            (where, self._decode_chunk_blob(path, where, raw))
            for where, raw in zip(keys, found, strict=True)
        ]
    else:
        batch = self._sharded_blobs(path, layout, missing)
        if batch is not None:
            blobs, bounds, keys = batch
            edges = bounds.tolist()
            self.held.keep(name, missing, held_blobs(blobs, edges[:-1], edges[1:], keys))
            return
        listed = self._listed_blobs(path, layout, missing)
    self.held.keep(name, missing, [HeldBlob(b, 0, b.shape[0], k) for k, b in listed])


def sharded_blobs(
    self: LevelReader, path: str, layout: RowLayout, chunks: list[tuple[int, ...]]
) -> tuple[np.ndarray, np.ndarray, list[str]] | None:
    """The blobs of chunks in shared shards, fetched in one batch of byte ranges and
    decoded together (:func:`~zarr_vectors.read.blob_batches.decode_blobs`): the bytes,
    each chunk's bounds in them and its shard key; None when some chunk does not store
    exactly its first blocks (:meth:`_listed_blobs` then names the fault)."""
    coords = chunk_array(chunks, len(layout.shard_chunks))
    shard_keys, index, slot, local = self.indexes.shard_table(path, layout, coords)
    entries = index.reshape(index.shape[0], -1, layout.n_blocks, 2)[slot, local]
    spans = stored_spans(entries)
    if spans is None:
        return None
    fetched, lengths = _read_spans(self, shard_keys, slot, spans)
    keys = [shard_keys[s] for s in slot.tolist()]
    blobs, bounds = decode_blobs(layout, keys, entries, spans, fetched, lengths)
    return blobs, bounds, keys


def _read_spans(
    self: LevelReader, shard_keys: list[str], slot: np.ndarray, spans: StoredSpans
) -> tuple[np.ndarray, np.ndarray]:
    """The bytes of every chunk's span back to back and each chunk's count of them, read
    straight into one buffer (:meth:`~zarr_vectors.store.io.StoreIO.read_spans_into`: the
    spans of a local shard in a few ``preadv``). When a shard is missing or shorter than a
    span, the spans are fetched again one by one (:func:`_fetch_spans`), which names
    the fault or leaves the short bytes to the decoder's checks.
    """
    lengths = spans.end - spans.start
    owner, start, end = slot, spans.start, spans.end
    if not spans.end.all():  # chunks storing no block: no span asked of them
        lengths[spans.end == 0] = 0
        asked = np.flatnonzero(spans.end)
        owner, start, end = slot[asked], start[asked], end[asked]
    fetched = np.empty(int(lengths.sum()), dtype=np.uint8)
    if not owner.shape[0] or self.io.read_spans_into(shard_keys, owner, start, end, fetched) < 0:
        return fetched, lengths
    payloads = _fetch_spans(self, shard_keys, slot.tolist(), spans)
    found = np.fromiter(map(len, payloads), dtype=np.int64, count=len(payloads))
    return np.frombuffer(b"".join(payloads), dtype=np.uint8), found


def _fetch_spans(
    self: LevelReader, shard_keys: list[str], slot: list[int], spans: StoredSpans
) -> list[bytes]:
    """The bytes of each chunk's span (``b""`` when empty) in the shards ``shard_keys``
    (chunk ``i`` in ``shard_keys[slot[i]]``), fetched shard by shard in one batch.

    Raises
    ------
    CorruptChunkError
        When a shard holding a non-empty span is missing.
    """
    ranges: list[list[ByteRange]] = [[] for _ in shard_keys]
    owners: list[list[int]] = [[] for _ in shard_keys]
    for i, (s, start, end) in enumerate(
        zip(slot, spans.start.tolist(), spans.end.tolist(), strict=True)
    ):
        if end:
            ranges[s].append((start, end))
            owners[s].append(i)
    asked = [s for s, spans_of in enumerate(ranges) if spans_of]
    found = self.io.get_ranges([(shard_keys[s], ranges[s]) for s in asked])
    payloads = [b""] * len(slot)
    for s, parts in zip(asked, found, strict=True):
        if parts is None:
            raise CorruptChunkError(f"{shard_keys[s]}: shard disappeared while reading")
        for i, part in zip(owners[s], parts, strict=True):
            payloads[i] = part
    return payloads


def listed_blobs(
    self: LevelReader, path: str, layout: RowLayout, chunks: list[tuple[int, ...]]
) -> list[tuple[str, np.ndarray]]:
    """The shard key and decoded blob of every chunk in shared shards, fetched in one
    batch of byte ranges, planned chunk by chunk (see :meth:`_sharded_blobs`)."""
    requests: list[tuple[str, ByteRange]] = []
    found: list[tuple[str, list[list[int]], tuple[int, int]]] = []
    for chunk in chunks:
        key, entries = self.indexes.entries(path, layout, chunk, "fragment index")
        stored = sum(1 for e in entries if e[0] != _MISSING)
        span = layout.block_span(entries, 0, stored, key) if stored else (0, 0)
        found.append((key, entries, span))
        requests.append((key, span))
    fetched = iter(self._get_grouped([r for r, f in zip(requests, found, strict=True) if f[2][1]]))
    payloads = []
    for key, _entries, span in found:
        raw = next(fetched) if span[1] else b""
        if raw is None:
            raise CorruptChunkError(f"{key}: shard disappeared while reading")
        payloads.append(raw)
    blobs = _decode_blobs(layout, found, payloads)
    return [(key, blob) for (key, _entries, _span), blob in zip(found, blobs, strict=True)]


def get_grouped(self: LevelReader, requests: list[tuple[str, ByteRange]]) -> list[bytes | None]:
    """:meth:`StoreIO.get_many` of ``requests``, asked key by key: a shard of several
    chunks (spec §9.0.1) is opened once for all its chunks' ranges (locally), or its
    nearby ranges fetched together (object storage)."""
    by_key: dict[str, list[int]] = {}
    for i, (key, _) in enumerate(requests):
        by_key.setdefault(key, []).append(i)
    found = self.io.get_ranges([(key, [requests[i][1] for i in at]) for key, at in by_key.items()])
    out: list[bytes | None] = [None] * len(requests)
    for at, parts in zip(by_key.values(), found, strict=True):
        for i, part in zip(at, parts or (), strict=False):  # None: the shard is missing
            out[i] = part
    return out


def decode_chunk_blob(self: LevelReader, path: str, where: str, raw: bytes | None) -> np.ndarray:
    if raw is None:
        raise CorruptChunkError(f"{where}: fragment index of an occupied chunk is missing")
    layout = self._blob_layout(path)
    return decode_blob(layout, where, layout.decode_index(raw, where), raw, 0)


def decode_blob(
    layout: RowLayout, where: str, entries: ShardIndex, payload: bytes, base: int
) -> np.ndarray:
    """A chunk's blob (stored blocks decoded), from its entries and its blocks' bytes."""
    index = np.asarray(entries, dtype=np.uint64).reshape(-1, 2)
    present = index[:, 0] != np.uint64(_MISSING)
    stored = int(np.count_nonzero(present))
    r = layout.rows_per_block
    blob = np.zeros(stored * r, dtype=np.uint8)
    if stored and not present[:stored].all():
        layout.block_span(entries, 0, stored, where)  # raises: a block is missing
    for b, (offset, nbytes) in enumerate(index[:stored].tolist()):
        raw = payload[offset - base : offset - base + nbytes]
        layout.decode_block_into(raw, b, where, blob[b * r : (b + 1) * r])
    return blob


def blob_layout(self: LevelReader, path: str) -> RowLayout:
    if path not in self._blob_layouts:
        meta = self.array_metadata(path)
        layout = RowLayout.from_array_metadata(meta, self.grid.ndim, path, placed=self.placed)
        if layout is None:
            raise MetadataError(f"{path}: unsupported codec pipeline for fragment blobs")
        self._blob_layouts[path] = layout
    return self._blob_layouts[path]
