"""The bytes of a shard after its row blocks, and shards assembled from stored row blocks.

Every shard of a per-chunk array ends with a place record (spec §9.0.2, format 1.2) and its
shard index: a ``uint64`` offset and length per (chunk, row block), ``2**64-1`` for blocks not
stored, then the index's little-endian CRC32C (spec §9.0). These functions write and verify
those bytes, and move stored row blocks between shards unchanged (a row block depends on
neither ``N_max`` nor the other chunks of its shard). :class:`~zarr_vectors.store.shards.RowLayout`
offers each as a method of the same name.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import TYPE_CHECKING

import google_crc32c
import numpy as np

from zarr_vectors.errors import CorruptChunkError, MisplacedChunkError
from zarr_vectors.format.place import PLACE_NBYTES, place_problem, place_record
from zarr_vectors.kernels.row_blocks import CRC_RESIDUE

if TYPE_CHECKING:
    from zarr_vectors.store.shards import RowLayout

__all__ = [
    "CRC_BYTES",
    "MISSING",
    "MISSING_INT",
    "assemble_shard",
    "chunk_blocks",
    "decode_index",
    "placed_shard",
    "reindex_shard",
    "shard_tail",
]

MISSING = np.uint64(2**64 - 1)
"""The shard index's offset and length of a row block not stored."""
MISSING_INT = 2**64 - 1
""":data:`MISSING` as a Python int (for indexes read with ``tolist()``)."""
CRC_BYTES = 4
"""Bytes of the CRC32C after every row block and after the shard index."""


_ENTRY = np.dtype(("<u8", (2,)))
"""A shard index entry, ``(offset, nbytes)``: read as this type, the index comes out as
``(n, 2)`` little-endian uint64 directly."""


def shard_tail(layout: RowLayout, index_bytes: bytes, key: str) -> bytes:
    """The bytes after the row blocks of the shard at ``key``: place record, index, CRC."""
    crc: bytes = google_crc32c.value(index_bytes).to_bytes(CRC_BYTES, "little")
    record = place_record(key, layout.type_name) if layout.placed else b""
    return b"".join([record, index_bytes, crc])


def assemble_shard(layout: RowLayout, chunks: Sequence[tuple[int, list[bytes]]], key: str) -> bytes:
    """Shard bytes from the encoded row blocks of the spatial chunks it holds.

    Parameters
    ----------
    layout
        The row layout of the shard's array.
    chunks
        ``(local chunk position, blocks)`` per occupied chunk of the shard (see
        :meth:`RowLayout.local_chunk`, :meth:`RowLayout.encode_blocks`); blocks are stored
        in this order, and every block not given is marked missing in the index.
    key
        The store key the shard is written to, bound into its place record.

    Returns
    -------
    bytes
        The row blocks back to back, the place record (when :attr:`RowLayout.placed`), then the
        index (``uint64`` offset and length per (chunk, block) in C order, ``2**64-1``
        for blocks not stored) and its CRC32C.
    """
    index = np.full((layout.chunks_per_shard * layout.n_blocks, 2), MISSING, dtype="<u8")
    parts: list[bytes] = []
    offset = 0
    for local, blocks in chunks:
        for b, encoded in enumerate(blocks):
            parts.append(encoded)
            index[local * layout.n_blocks + b] = (offset, len(encoded))
            offset += len(encoded)
    parts.append(shard_tail(layout, index.tobytes(), key))
    return b"".join(parts)


def decode_index(layout: RowLayout, tail: bytes, where: str) -> np.ndarray:
    """Decode and verify the shard index (and place record) from the last bytes of a shard.

    Parameters
    ----------
    layout
        The row layout of the shard's array.
    tail
        At least the last :attr:`RowLayout.tail_nbytes` bytes of the shard.
    where
        The key the shard was read from (relative to the store root): the place
        record must name it.

    Returns
    -------
    numpy.ndarray
        ``(chunks_per_shard * n_blocks, 2)`` uint64 array of (offset, nbytes) per (chunk,
        block) in C order; missing blocks hold 2**64-1. With one chunk per shard these
        are the chunk's entries; otherwise take them with :meth:`RowLayout.chunk_entries`.

    Raises
    ------
    CorruptChunkError
        When the shard is too short or its index fails its checksum.
    MisplacedChunkError
        When the layout is :attr:`RowLayout.placed` and the place record is missing, damaged or
        names another key: the file belongs elsewhere.
    """
    if len(tail) < layout.tail_nbytes:
        raise CorruptChunkError(
            f"{where}: shard is {len(tail)} bytes, shorter than its {layout.tail_nbytes}-byte index"
        )
    raw = tail[len(tail) - layout.index_nbytes :]
    body, crc = raw[:-CRC_BYTES], raw[-CRC_BYTES:]
    if google_crc32c.value(body) != int.from_bytes(crc, "little"):
        raise CorruptChunkError(f"{where}: shard index checksum mismatch")
    if layout.placed:
        at = len(tail) - layout.tail_nbytes  # >= 0: the length was checked above
        expected = place_record(where, layout.type_name)
        if not tail.startswith(expected, at):  # compared in place, without a copy
            problem = place_problem(tail[at : at + PLACE_NBYTES], where, layout.type_name)
            raise MisplacedChunkError(f"{where}: the file {problem}")
    return np.frombuffer(body, dtype=_ENTRY)  # (n, 2): the pairs in one step


def reindex_shard(layout: RowLayout, shard: bytes, to: RowLayout, where: str, key: str) -> bytes:
    """The same shard for a layout with another ``N_max`` (its index resized), stored at
    ``key`` (its place record rewritten).

    Row blocks do not depend on ``N_max`` nor on the key, so only the bytes after them
    change: the result is what :meth:`RowLayout.encode_shard` of ``to`` gives for the same rows
    at ``key``.

    Parameters
    ----------
    layout
        The row layout of the shard's array.
    shard
        A shard of this layout.
    to
        The new layout (same dtype, row shape, ``R`` and codec).
    where
        The key the shard was read from (its place record must name it).
    key
        The key the result is written to.

    Raises
    ------
    CorruptChunkError
        When the index does not decode or holds blocks beyond ``to``'s row count.
    MisplacedChunkError
        When the shard's place record does not name ``where``.
    """
    if layout.chunks_per_shard != 1 or to.chunks_per_shard != 1:
        raise ValueError("reindex_shard is for one chunk per shard")
    index = layout.decode_index(shard, where)
    if (to.n_blocks, to.placed, key) == (layout.n_blocks, layout.placed, where):
        return shard
    stored = np.flatnonzero(index[:, 0] != MISSING)
    if stored.size and int(stored[-1]) >= to.n_blocks:
        raise CorruptChunkError(f"{where}: row block {int(stored[-1])} lies beyond N_max")
    resized = np.full((to.n_blocks, 2), MISSING, dtype="<u8")
    keep = min(layout.n_blocks, to.n_blocks)
    resized[:keep] = index[:keep]
    return bytes(shard[: len(shard) - layout.tail_nbytes]) + shard_tail(to, resized.tobytes(), key)


def placed_shard(layout: RowLayout, shard: bytes, key: str) -> bytes:
    """The shard ``shard`` of this layout, which has no place records (format 1.0 or
    1.1), with the place record of ``key`` added before its index (spec §9.0.2).

    The row blocks and the index stay as they are (no index entry points past the row
    blocks), so the result is what the encoders of the same layout with ``placed``
    give for the same rows at ``key``.

    Raises
    ------
    ValueError
        When the layout already has place records.
    CorruptChunkError
        When the shard is too short or its index fails its checksum.
    """
    if layout.placed:
        raise ValueError("placed_shard is for a layout without place records")
    layout.decode_index(shard, key)  # the index is intact before anything is added
    cut = len(shard) - layout.index_nbytes
    return b"".join([shard[:cut], place_record(key, layout.type_name), shard[cut:]])


def chunk_blocks(
    layout: RowLayout, shard: bytes, chunk: np.ndarray | Sequence[int], stored: int, where: str
) -> list[bytes]:
    """The stored row blocks of one spatial chunk, as bytes, copied out of its shard.

    They go into another shard unchanged (:meth:`RowLayout.assemble_shard`): a row block does not
    depend on ``N_max`` nor on the other chunks of its shard.

    Parameters
    ----------
    layout
        The row layout of the shard's array.
    shard
        The whole shard holding ``chunk``.
    chunk
        Grid index of the spatial chunk.
    stored
        Rows the chunk holds: its blocks ``0 .. ceil(stored / R) - 1`` must be stored,
        and no other.
    where
        The shard's key, for error messages.

    Raises
    ------
    CorruptChunkError
        When the index does not decode, the chunk's blocks are not the ones its row
        count needs, or a block fails its checksum.
    """
    entries = layout.chunk_entries(layout.decode_index(shard, where), chunk).tolist()
    wanted = -(-stored // layout.rows_per_block)
    present = [b for b, (offset, _) in enumerate(entries) if offset != MISSING_INT]
    if present != list(range(wanted)):
        raise CorruptChunkError(
            f"{where}: chunk {list(map(int, chunk))} stores row blocks {present}, but "
            f"its {stored} rows need blocks 0 to {wanted - 1}"
        )
    end = len(shard) - layout.tail_nbytes
    blocks = []
    for b, (offset, nbytes) in enumerate(entries[:wanted]):
        if offset + nbytes > end:
            raise CorruptChunkError(f"{where}: row block {b} lies beyond the shard's data")
        block = bytes(shard[offset : offset + nbytes])
        if google_crc32c.value(block) != CRC_RESIDUE:
            raise CorruptChunkError(f"{where}: row block {b} fails its checksum")
        blocks.append(block)
    return blocks
