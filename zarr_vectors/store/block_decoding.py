"""Row blocks of a shard decoded into arrays: where they lie in fetched bytes, their checks.

A stored row block is its (possibly Blosc-compressed) ``R`` rows followed by their CRC32C
(spec §9.0). These functions find blocks in bytes fetched from a shard and decode them, by one
native kernel call where possible (:mod:`~zarr_vectors.store.native_blocks`), else one by one
with a precise error for a damaged block. :class:`~zarr_vectors.store.shards.RowLayout` offers
each as a method of the same name.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from typing import TYPE_CHECKING

import google_crc32c
import numpy as np
from numcodecs import blosc

from zarr_vectors.errors import CorruptChunkError
from zarr_vectors.kernels.kernel_args import bytes_of
from zarr_vectors.kernels.row_blocks import CRC_RESIDUE
from zarr_vectors.store import native_blocks
from zarr_vectors.store.shard_assembly import CRC_BYTES, MISSING_INT
from zarr_vectors.store.zstd_contexts import zstd_context

if TYPE_CHECKING:
    from zarr_vectors.store.shards import RowLayout, ShardIndex

__all__ = [
    "BLOSC_HEADER_BYTES",
    "block_span",
    "check_blosc_header",
    "decode_block_groups_into",
    "decode_block_into",
    "decode_blocks_at",
    "decode_blocks_into",
    "decode_rows_into",
    "locate_blocks",
]

BLOSC_HEADER_BYTES = 16
"""Bytes of the header that begins every Blosc frame."""


def block_span(
    layout: RowLayout, index: ShardIndex, first: int, stop: int, where: str
) -> tuple[int, int]:
    """Byte span ``[start, end)`` of the shard holding row blocks ``first .. stop-1``.

    Blocks may be stored in any order; the span runs from the lowest offset to the
    highest end among them.

    Parameters
    ----------
    layout
        The row layout of the shard's array.
    index
        The shard index (:meth:`RowLayout.decode_index`, or its ``tolist()``).

    Raises
    ------
    CorruptChunkError
        When a needed block is missing.
    """
    start, end = MISSING_INT, 0
    for b in range(first, stop):
        offset, nbytes = int(index[b][0]), int(index[b][1])
        if offset == MISSING_INT or nbytes == MISSING_INT:
            raise CorruptChunkError(f"{where}: row block {b} is missing from the shard")
        start, end = min(start, offset), max(end, offset + nbytes)
    return start, end


def decode_rows_into(
    layout: RowLayout,
    payload: bytes,
    index: ShardIndex,
    base: int,
    rows: tuple[int, int],
    out: np.ndarray,
    where: str,
) -> None:
    """Decode rows ``[start, stop)`` of a shard into ``out`` (``stop - start`` rows).

    Parameters
    ----------
    layout
        The row layout of the shard's array.
    payload
        Bytes of the shard from byte ``base`` on (see :meth:`RowLayout.block_span`); they must
        cover every block holding the rows.
    index
        The shard index (:meth:`RowLayout.decode_index`, or its ``tolist()``).
    base
        Offset of ``payload`` in the shard.
    rows
        ``(start, stop)`` row range to decode.
    out
        Destination, shape ``(stop - start, *row_shape)``.
    where
        The shard's key, for error messages.
    """
    start, stop = rows
    if stop <= start:
        return
    r = layout.rows_per_block
    first, last = start // r, (stop - 1) // r
    stored = layout.dtype.newbyteorder("<")
    if start == first * r and out.dtype == stored and out.flags.c_contiguous:
        # Whole blocks straight into out; a last block of fewer rows through a scratch.
        whole_stop = last + 1 if stop == (last + 1) * r else last
        done = (whole_stop - first) * r
        if done:
            blocks = range(first, whole_stop)
            layout.decode_blocks_into(payload, index, base, blocks, out[:done], where)
        if done < out.shape[0]:
            tail = np.empty((r, *layout.row_shape), dtype=stored)
            layout.decode_blocks_into(payload, index, base, [last], tail, where)
            out[done:] = tail[: out.shape[0] - done]
        return
    blocks = range(first, last + 1)
    whole = np.empty((len(blocks) * r, *layout.row_shape), dtype=stored)
    layout.decode_blocks_into(payload, index, base, blocks, whole, where)
    out[...] = whole[start - first * r : stop - first * r]


def decode_blocks_into(
    layout: RowLayout,
    payload: bytes,
    index: ShardIndex,
    base: int,
    blocks: Sequence[int],
    out: np.ndarray,
    where: str,
) -> None:
    """Decode whole row blocks ``blocks`` of a shard back to back into ``out``.

    Parameters
    ----------
    layout
        The row layout of the shard's array.
    payload, index, base
        As :meth:`RowLayout.decode_rows_into`.
    blocks
        Block numbers to decode, in the order they go to ``out``.
    out
        Destination, shape ``(len(blocks) * R, *row_shape)``.
    where
        The shard's key, for error messages.
    """
    layout.decode_block_groups_into([(payload, base, blocks)], index, out, where)


def locate_blocks(
    layout: RowLayout, nbytes: int, base: int, index: ShardIndex, blocks: Sequence[int], where: str
) -> list[tuple[int, int]]:
    """Where row blocks lie in fetched bytes of a shard.

    Parameters
    ----------
    layout
        The row layout of the shard's array.
    nbytes, base
        The fetched bytes: ``nbytes`` bytes of the shard from byte ``base`` on.
    index
        The shard index (:meth:`RowLayout.decode_index`, or its ``tolist()``).
    blocks
        Block numbers.
    where
        The shard's key, for error messages.

    Returns
    -------
    list of (int, int)
        Per block, its start in the fetched bytes and its stored size; ``(-1, 0)`` for
        a block lying outside them.

    Raises
    ------
    CorruptChunkError
        When a block is missing from the index.
    """
    out = []
    for b in blocks:
        offset, size = int(index[b][0]), int(index[b][1])
        if offset == MISSING_INT or size == MISSING_INT:
            raise CorruptChunkError(f"{where}: row block {b} is missing from the shard")
        start = offset - base
        out.append((start, size) if start >= 0 and start + size <= nbytes else (-1, 0))
    return out


def decode_block_groups_into(
    layout: RowLayout,
    parts: Sequence[tuple[bytes, int, Sequence[int]]],
    index: ShardIndex,
    out: np.ndarray,
    where: str,
) -> None:
    """Decode the row blocks of several fetched byte ranges of one shard back to back
    into ``out``, by one native call where possible (:meth:`RowLayout.decode_blocks_at`).

    Parameters
    ----------
    layout
        The row layout of the shard's array.
    parts
        ``(payload, base, blocks)``: bytes of the shard from byte ``base`` on, and the
        numbers of the whole row blocks they hold, in the order they go to ``out``.
    index
        The shard index (:meth:`RowLayout.decode_index`, or its ``tolist()``).
    out
        Destination, shape ``(total blocks * R, *row_shape)``.
    where
        The shard's key, for error messages.

    Raises
    ------
    CorruptChunkError
        When a block is missing from the index, lies outside its bytes, or fails a
        check (checksum, Blosc header, decoded size).
    """
    numbers, starts, lengths = [], [], []
    total = sum(len(payload) for payload, _, _ in parts)
    at = 0
    for payload, base, blocks in parts:
        for b, (start, nbytes) in zip(
            blocks, layout.locate_blocks(len(payload), base, index, blocks, where), strict=True
        ):
            numbers.append(b)
            starts.append(at + start if start >= 0 else total)  # outside: the kernel refuses
            lengths.append(nbytes)
        at += len(payload)
    joined = parts[0][0] if len(parts) == 1 else b"".join(p for p, _, _ in parts)
    layout.decode_blocks_at(
        np.frombuffer(joined, dtype=np.uint8),
        np.array(starts, dtype=np.int64),
        np.array(lengths, dtype=np.int64),
        np.arange(len(numbers), dtype=np.int64),
        out,
        lambda i: (numbers[i], where),
    )


def decode_block_into(layout: RowLayout, raw: bytes, b: int, where: str, out: np.ndarray) -> None:
    """Decode one stored row block (exactly its bytes, CRC32C included) into ``out``.

    The checksum is verified over the whole stored block (the CRC32C of data followed
    by its own little-endian CRC32C is a fixed residue), so the body is never copied.

    Parameters
    ----------
    layout
        The row layout of the shard's array.
    raw
        The block's stored bytes, checksum included.
    b
        The block's number, for error messages.
    where
        The shard's key, for error messages.
    out
        C-contiguous destination of exactly ``R`` rows (``R * row_nbytes`` bytes).

    Raises
    ------
    CorruptChunkError
        When the checksum, the Blosc header or the decoded size is wrong.
    """
    if len(raw) < CRC_BYTES:
        raise CorruptChunkError(
            f"{where}: row block {b}: {len(raw)} bytes, too short for its checksum"
        )
    if google_crc32c.value(raw) != CRC_RESIDUE:
        raise CorruptChunkError(
            f"{where}: row block {b}: checksum mismatch (the stored bytes are damaged)"
        )
    body = memoryview(raw)[:-CRC_BYTES]
    expected = layout.rows_per_block * layout.row_nbytes
    if layout.blosc is None:
        if len(body) != expected:
            raise CorruptChunkError(
                f"{where}: row block {b} holds {len(body)} bytes, expected {expected}"
            )
        out.reshape(-1).view(np.uint8)[:] = np.frombuffer(body, dtype=np.uint8)
        return
    check_blosc_header(body, expected, where, b)
    try:
        blosc.decompress(body, out)
    except (RuntimeError, ValueError, TypeError) as exc:
        raise CorruptChunkError(f"{where}: row block {b} does not decode ({exc})") from exc


def decode_blocks_at(
    layout: RowLayout,
    buffer: np.ndarray,
    starts: np.ndarray,
    lengths: np.ndarray,
    slots: np.ndarray,
    out: np.ndarray,
    describe: Callable[[int], tuple[int, str]],
) -> None:
    """Decode stored row blocks lying in ``buffer`` into their slots of ``out``.

    Blocks are decoded by one native kernel call when the C functions are available
    (:mod:`~zarr_vectors.store.native_blocks`), else one by one; a block failing a
    check is decoded by :meth:`RowLayout.decode_block_into`, which raises its precise error. A
    large batch is shared with a helper thread when a CPU is idle.

    Parameters
    ----------
    layout
        The row layout of the shard's array.
    buffer
        uint8 bytes holding the stored blocks.
    starts, lengths
        ``(k,)`` where each stored block lies in ``buffer`` (checksum included).
    slots
        ``(k,)`` the slot of ``out`` each block decodes to.
    out
        C-contiguous destination: slot ``s`` is rows ``[s*R, (s+1)*R)``.
    describe
        ``describe(i)``: block ``i``'s number and shard key, asked only when it fails a
        check (for the error message).

    Raises
    ------
    CorruptChunkError
        When a block's checksum, Blosc header or decoded size is wrong.
    """
    flat = bytes_of(out)
    size = layout.rows_per_block * layout.row_nbytes
    first = 0
    native = native_blocks.native_block_functions()
    if native is not None:
        compressed = layout.blosc is not None
        failed = native_blocks.decode_natively(
            buffer, starts, lengths, slots, flat, size, compressed, native, zstd_context
        )
        if failed < 0:
            return
        first = failed
    for i in range(first, starts.shape[0]):
        start, slot = int(starts[i]), int(slots[i])
        raw = buffer[start : start + int(lengths[i])].tobytes()
        target = flat[slot * size : (slot + 1) * size]
        number, where = describe(i)
        layout.decode_block_into(raw, number, where, target)


def check_blosc_header(body: bytes | memoryview, expected: int, where: str, block: int) -> None:
    """Refuse a Blosc frame whose header disagrees with its length or the block size."""
    if len(body) < BLOSC_HEADER_BYTES:
        raise CorruptChunkError(
            f"{where}: row block {block}: {len(body)} bytes, too short for a Blosc header"
        )
    nbytes = int.from_bytes(body[4:8], "little")
    cbytes = int.from_bytes(body[12:16], "little")
    if nbytes != expected or cbytes != len(body):
        raise CorruptChunkError(
            f"{where}: row block {block}: Blosc header says {nbytes} bytes from {cbytes}, "
            f"expected {expected} from {len(body)}"
        )
