"""Sharded sequences of rows: the row arrays of the object-ordered copy (spec §9.15).

A row sequence is a Zarr v3 array of shape ``(n, *row_shape)`` whose regular chunk grid
has shards of ``S`` rows, each encoded with the ``sharding_indexed`` codec into inner row
blocks of ``R`` rows, place record and index at the end (the bytes of a per-chunk array's
shard, spec §9.0, §9.0.2, for one run of ``S`` rows). Shard ``s`` holds rows
``[s·S, (s+1)·S)``; its blocks past the last row are missing. This module writes such
shards and reads row ranges of several sequences in two request waves: the shard indexes
(kept by the caller between reads), then the row blocks holding the rows.
"""

from __future__ import annotations

from collections.abc import Iterator, Sequence
from dataclasses import dataclass
from typing import Any

import numpy as np

from zarr_vectors.errors import CorruptChunkError
from zarr_vectors.format.dimensions import named_array_json
from zarr_vectors.format.object_order import sequence_problems
from zarr_vectors.kernels.ranges import concat_ranges
from zarr_vectors.store.arrays import row_sequence_metadata
from zarr_vectors.store.io import StoreIO
from zarr_vectors.store.shards import RowLayout

__all__ = ["RowSequence", "read_sequences"]

_MISSING = 2**64 - 1


@dataclass(frozen=True, slots=True)
class RowSequence:
    """One sharded row sequence: where it is, how many rows, how they are laid out.

    Parameters
    ----------
    path
        The array's path relative to the store root (``0/object_order/vertices``).
    n_rows
        ``n``, its rows.
    layout
        The row layout of its shards: ``n_max`` is ``S``, the rows of a shard.

    Examples
    --------
    >>> import numpy as np
    >>> from zarr_vectors.store.io import StoreIO, scratch_store
    >>> layout = RowLayout(np.dtype("int64"), (), 4, 8, None)
    >>> seq = RowSequence("0/object_order/rows", 10, layout)
    >>> io = StoreIO(scratch_store())
    >>> io.set_many(list(seq.files(np.arange(10) * 3, {"zv_array": "object_order_rows"})))
    >>> seq.shard_key(1)
    '0/object_order/rows/c/1'
    >>> read_sequences(io, [seq], np.array([2, 7]), np.array([4, 10]), {})[0].tolist()
    [6, 9, 21, 24, 27]
    """

    path: str
    n_rows: int
    layout: RowLayout

    def shard_key(self, shard: int) -> str:
        """The storage key of shard ``shard`` (relative to the store root)."""
        return f"{self.path}/c/{shard}" + "/0" * len(self.layout.row_shape)

    def files(self, rows: np.ndarray, attributes: dict[str, Any]) -> Iterator[tuple[str, bytes]]:
        """The array's files for ``rows`` (all ``n`` of them): its ``zarr.json``, then every
        shard, one at a time (the caller writes them in batches)."""
        yield self.metadata_file(attributes)
        yield from self.shard_files(rows, 0)

    def metadata_file(self, attributes: dict[str, Any]) -> tuple[str, bytes]:
        """The array's ``zarr.json``: key and bytes."""
        key = f"{self.path}/zarr.json"
        doc = row_sequence_metadata(self.n_rows, self.layout, attributes)
        return key, named_array_json(key, doc, ())  # the names a plain store's arrays carry

    def shard_files(self, rows: np.ndarray, first: int) -> Iterator[tuple[str, bytes]]:
        """The shards holding ``rows``, rows ``[first, first + len(rows))`` of the array,
        one at a time; ``first`` is a multiple of ``S``, and ``rows`` end at a shard's end
        or at the array's."""
        size = self.layout.n_max
        for start in range(0, rows.shape[0], size):
            key = self.shard_key((first + start) // size)
            yield key, self.layout.encode_shard(rows[start : start + size], key)

    @classmethod
    def from_metadata(cls, meta: dict[str, Any], path: str, *, placed: bool) -> RowSequence:
        """The sequence a ``zarr.json`` describes.

        Raises
        ------
        CorruptChunkError
            When the document is not that of a row sequence (spec §9.15).
        """
        problems = sequence_problems(meta)
        if problems:
            raise CorruptChunkError(f"{path}: {problems[0]}; the object-ordered copy is damaged")
        shape = [int(s) for s in meta["shape"]]
        conf = meta["codecs"][0]["configuration"]
        inner = conf["codecs"]
        blosc = None
        if len(inner) == 3:
            settings = inner[1].get("configuration", {})
            blosc = {k: settings[k] for k in ("cname", "clevel", "shuffle")}
        fill = meta.get("fill_value", 0)
        layout = RowLayout(
            dtype=np.dtype(meta["data_type"]),
            row_shape=tuple(shape[1:]),
            rows_per_block=int(conf["chunk_shape"][0]),
            n_max=int(meta["chunk_grid"]["configuration"]["chunk_shape"][0]),
            blosc=blosc,
            fill=int(fill) if isinstance(fill, int) and not isinstance(fill, bool) else 0,
            placed=placed,
        )
        return cls(path, shape[0], layout)


def read_sequences(
    io: StoreIO,
    sequences: Sequence[RowSequence],
    starts: np.ndarray,
    stops: np.ndarray,
    indexes: dict[str, np.ndarray],
) -> list[np.ndarray]:
    """Rows ``[starts[i], stops[i])`` of every sequence, range after range.

    Two request waves: the indexes of the shards holding the rows that ``indexes`` does not
    hold yet (added to it), then every row block holding the rows, of every sequence at once.

    Parameters
    ----------
    io
        The store.
    sequences
        The sequences read (the same rows of each).
    starts, stops
        ``(k,)`` int64 row ranges within ``[0, n)``.
    indexes
        Decoded shard indexes by key, read before and kept by the caller.

    Raises
    ------
    CorruptChunkError
        When a shard is missing or damaged, or a block it needs is missing or damaged.
    """
    plans = [_blocks(seq, starts, stops) for seq in sequences]
    _read_indexes(io, sequences, plans, indexes)
    keys: list[str] = []
    spans = []
    for seq, blocks in zip(sequences, plans, strict=True):
        spans.append(_block_spans(seq, blocks, indexes, len(keys)))
        keys.extend(seq.shard_key(s) for s in np.unique(blocks // _per_shard(seq)).tolist())
    owner = np.concatenate([s[0] for s in spans]) if spans else np.empty(0, np.int64)
    begin = np.concatenate([s[1] for s in spans]) if spans else np.empty(0, np.int64)
    end = np.concatenate([s[2] for s in spans]) if spans else np.empty(0, np.int64)
    buffer = np.empty(int((end - begin).sum()), dtype=np.uint8)
    failed = io.read_spans_into(keys, owner, begin, end, buffer)
    if failed >= 0:
        raise CorruptChunkError(f"{keys[failed]}: the shard is missing or shorter than its index")
    rows = concat_ranges(starts, stops - starts)
    out, at = [], 0
    for seq, blocks, (_, first, last) in zip(sequences, plans, spans, strict=True):
        lengths = last - first
        decoded = _decode(seq, blocks, buffer, at + np.cumsum(lengths) - lengths, lengths)
        at += int(lengths.sum())
        r = seq.layout.rows_per_block
        out.append(decoded[np.searchsorted(blocks, rows // r) * r + rows % r])
    return out


def _per_shard(seq: RowSequence) -> int:
    return seq.layout.n_max // seq.layout.rows_per_block


def _blocks(seq: RowSequence, starts: np.ndarray, stops: np.ndarray) -> np.ndarray:
    """The global numbers of the row blocks holding rows ``[starts, stops)``, ascending."""
    keep = stops > starts
    r = seq.layout.rows_per_block
    first = starts[keep] // r
    return np.unique(concat_ranges(first, (stops[keep] - 1) // r - first + 1))


def _read_indexes(
    io: StoreIO,
    sequences: Sequence[RowSequence],
    plans: Sequence[np.ndarray],
    indexes: dict[str, np.ndarray],
) -> None:
    """Fetch and decode the indexes of the shards ``plans`` need that ``indexes`` lacks."""
    wanted: list[tuple[str, RowLayout]] = []
    for seq, blocks in zip(sequences, plans, strict=True):
        for shard in np.unique(blocks // _per_shard(seq)).tolist():
            key = seq.shard_key(shard)
            if key not in indexes:
                wanted.append((key, seq.layout))
    tails = io.get_many([(key, -layout.tail_nbytes) for key, layout in wanted])
    for (key, layout), tail in zip(wanted, tails, strict=True):
        if tail is None:
            raise CorruptChunkError(f"{key}: a shard of the object-ordered copy is missing")
        indexes[key] = layout.decode_index(tail, key).astype(np.int64)  # 2**64-1 becomes -1


def _block_spans(
    seq: RowSequence, blocks: np.ndarray, indexes: dict[str, np.ndarray], first_key: int
) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """Where each of ``blocks`` lies: the number of its shard's key (counted from
    ``first_key``), its first and its end byte in the shard."""
    per = _per_shard(seq)
    shards, owner = np.unique(blocks // per, return_inverse=True)
    table = np.stack([indexes[seq.shard_key(s)] for s in shards.tolist()]) if shards.size else None
    if table is None:
        return (np.empty(0, np.int64),) * 3
    entries = table[owner, blocks % per]
    if np.any(entries < 0):
        bad = int(blocks[np.flatnonzero(np.any(entries < 0, axis=1))[0]])
        raise CorruptChunkError(
            f"{seq.path}: row block {bad} is missing; the object-ordered copy is damaged"
        )
    return owner.astype(np.int64) + first_key, entries[:, 0], entries[:, 0] + entries[:, 1]


def _decode(
    seq: RowSequence, blocks: np.ndarray, buffer: np.ndarray, at: np.ndarray, lengths: np.ndarray
) -> np.ndarray:
    """The rows of ``blocks`` decoded back to back from their bytes in ``buffer``."""
    layout = seq.layout
    out = np.empty(
        (blocks.shape[0] * layout.rows_per_block, *layout.row_shape),
        dtype=layout.dtype.newbyteorder("<"),
    )
    per = _per_shard(seq)

    def describe(i: int) -> tuple[int, str]:
        return int(blocks[i] % per), seq.shard_key(int(blocks[i] // per))

    slots = np.arange(blocks.shape[0], dtype=np.int64)
    layout.decode_blocks_at(buffer, at.astype(np.int64), lengths, slots, out, describe)
    return out
