"""Sharded row arrays: one Zarr shard per spatial chunk, written and read row block by row block.

Every per-chunk array of a store (``vertices``, ``attributes/<name>``, ``vertex_fragments``...)
is a Zarr v3 array of logical shape ``(*G, N_max, *row_shape)`` whose regular chunk grid has
one chunk per spatial chunk, encoded with the ``sharding_indexed`` codec into inner chunks
("row blocks") of ``R`` rows (spec §9.0). This module builds those shard bytes directly and
decodes them, so a chunk holding ``n`` rows costs ``ceil(n / R)`` row blocks whatever ``N_max``
is; the bytes are exactly what zarr-python reads and writes for the same metadata.
"""

from __future__ import annotations

import functools
import itertools
import math
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from typing import Any

import google_crc32c
import numpy as np
from numcodecs import Blosc, blosc

from zarr_vectors.errors import CorruptChunkError, MetadataError, MisplacedChunkError
from zarr_vectors.format.jsonutil import as_int_list
from zarr_vectors.format.layout import sharding_problems
from zarr_vectors.format.place import PLACE_NBYTES, data_type_name, place_problem, place_record
from zarr_vectors.kernels.row_blocks import CRC_RESIDUE, decode_blocks
from zarr_vectors.store import native_blocks
from zarr_vectors.store.zstd_contexts import zstd_context

__all__ = [
    "RowLayout",
    "ShardIndex",
    "decode_plain_chunks",
    "plain_chunk_keys",
    "shard_key",
]

ShardIndex = np.ndarray | Sequence[Sequence[int]]
"""A decoded shard index: the ``(n_blocks, 2)`` array or its ``tolist()`` (faster to index)."""

_MISSING = np.uint64(2**64 - 1)
_MISSING_INT = 2**64 - 1
_BLOSC_SHUFFLE = {
    "noshuffle": Blosc.NOSHUFFLE,
    "shuffle": Blosc.SHUFFLE,
    "bitshuffle": Blosc.BITSHUFFLE,
}
_CRC_BYTES = 4
_CRC_RESIDUE = CRC_RESIDUE
_BLOSC_HEADER_BYTES = 16


@dataclass(frozen=True, slots=True)
class RowLayout:
    """How the rows of one per-chunk array are laid out in its shards (spec §9.0).

    Parameters
    ----------
    dtype
        Element dtype (stored little-endian).
    row_shape
        Shape of one row: ``(D,)`` for vertices, ``()`` for scalar attributes.
    rows_per_block
        ``R``, the number of rows of an inner chunk.
    n_max
        ``N_max``, the rows of a shard; a multiple of ``R``.
    blosc
        Blosc configuration ``{"cname", "clevel", "shuffle"}`` of the inner chunks, or None
        for uncompressed row blocks.
    fill
        The array's fill value, written into the unused rows of the last row block.
    shard_chunks
        Spatial chunks per shard along each axis (spec §9.0.1, format 1.1); empty (the
        default) for one shard per spatial chunk.
    placed
        Whether every shard holds a place record before its index (spec §9.0.2, format
        1.2; the default): written by the encoders, verified by :meth:`decode_index`.
        False for the arrays of a store of format 1.0 or 1.1.

    Attributes
    ----------
    n_blocks : int
        Row blocks per shard (``N_max / R``).
    row_nbytes : int
        Bytes of one decoded row.
    chunks_per_shard : int
        Spatial chunks one shard holds (1 unless ``shard_chunks`` is set).
    index_nbytes : int
        Bytes of the shard index at the end of every shard (with its CRC32C).
    tail_nbytes : int
        Bytes at the end of every shard that are not row blocks: the place record (when
        ``placed``) and the shard index. Read these to decode the index.
    type_name : str
        The ``data_type`` of the array (``dtype.name``), which place records name.
    """

    dtype: np.dtype[Any]
    row_shape: tuple[int, ...]
    rows_per_block: int
    n_max: int
    blosc: dict[str, Any] | None
    fill: int = 0
    shard_chunks: tuple[int, ...] = ()
    placed: bool = True

    n_blocks: int = field(init=False, repr=False, compare=False)
    row_nbytes: int = field(init=False, repr=False, compare=False)
    chunks_per_shard: int = field(init=False, repr=False, compare=False)
    index_nbytes: int = field(init=False, repr=False, compare=False)
    tail_nbytes: int = field(init=False, repr=False, compare=False)
    type_name: str = field(init=False, repr=False, compare=False)

    def __post_init__(self) -> None:
        """The sizes derived from the parameters, computed once (a read asks for them per
        shard and per block: properties recomputed them at every use)."""
        n_blocks = self.n_max // self.rows_per_block
        per_shard = math.prod(self.shard_chunks) if self.shard_chunks else 1
        index = 16 * n_blocks * per_shard + _CRC_BYTES
        object.__setattr__(self, "n_blocks", n_blocks)
        object.__setattr__(self, "row_nbytes", self.dtype.itemsize * math.prod(self.row_shape))
        object.__setattr__(self, "chunks_per_shard", per_shard)
        object.__setattr__(self, "index_nbytes", index)
        object.__setattr__(self, "tail_nbytes", index + (PLACE_NBYTES if self.placed else 0))
        object.__setattr__(self, "type_name", data_type_name(self.dtype))

    def _tail(self, index_bytes: bytes, key: str) -> bytes:
        """The bytes after the row blocks of the shard at ``key``: place record, index, CRC."""
        crc: bytes = google_crc32c.value(index_bytes).to_bytes(_CRC_BYTES, "little")
        record = place_record(key, self.type_name) if self.placed else b""
        return b"".join([record, index_bytes, crc])

    def shard_of(self, chunk: np.ndarray | Sequence[int]) -> np.ndarray:
        """Index of the shard holding spatial chunk ``chunk`` (grid index)."""
        g = np.asarray(chunk, dtype=np.int64)
        return g if not self.shard_chunks else g // np.asarray(self.shard_chunks)

    def local_chunk(self, chunk: np.ndarray | Sequence[int]) -> int:
        """Position (C order) of spatial chunk ``chunk`` among the chunks of its shard."""
        if not self.shard_chunks:
            return 0
        position = 0
        for c, s in zip(chunk, self.shard_chunks, strict=True):  # no numpy: called per chunk
            position = position * s + int(c) % s
        return position

    def chunk_entries(self, index: np.ndarray, chunk: np.ndarray | Sequence[int]) -> np.ndarray:
        """The ``(n_blocks, 2)`` index entries of spatial chunk ``chunk`` in its shard's index.

        Entries hold offsets into the whole shard, so every method taking an index works
        on them unchanged.
        """
        first = self.local_chunk(chunk) * self.n_blocks
        return index[first : first + self.n_blocks]

    def encode_shard(self, rows: np.ndarray, key: str) -> bytes:
        """Encode rows ``[0, n)`` of one spatial chunk as shard bytes (one chunk per shard).

        Parameters
        ----------
        rows
            Array of shape ``(n, *row_shape)`` with ``0 < n <= N_max``.
        key
            The store key the shard is written to (relative to the store root), bound into
            its place record.

        Returns
        -------
        bytes
            The shard: the encoded row blocks covering ``[0, n)`` back to back, the place
            record (when :attr:`placed`), then the shard index (``uint64`` offset and
            length per block, ``2**64-1`` for blocks not stored) and its little-endian
            CRC32C.
        """
        if self.chunks_per_shard != 1:
            raise ValueError("encode_shard is for one chunk per shard; use assemble_shard")
        packed = self._encode_natively(rows)
        if packed is None:
            return self.assemble_shard([(0, self.encode_blocks(rows))], key)
        body, lengths = packed
        index = np.full((self.n_blocks, 2), _MISSING, dtype="<u8")
        ends = np.cumsum(lengths)
        index[: lengths.shape[0], 0] = ends - lengths
        index[: lengths.shape[0], 1] = lengths
        return body + self._tail(index.tobytes(), key)

    def encode_blocks(self, rows: np.ndarray) -> list[bytes]:
        """Encode rows ``[0, n)`` of one spatial chunk as its stored row blocks.

        Each block is ``R`` rows (the last padded with the fill value), compressed when
        the layout has a codec, followed by its CRC32C.
        """
        packed = self._encode_natively(rows)
        if packed is not None:
            body, lengths = packed
            ends = np.cumsum(lengths).tolist()
            return [body[a:b] for a, b in zip([0, *ends[:-1]], ends, strict=True)]
        n = rows.shape[0]
        r = self.rows_per_block
        data = np.ascontiguousarray(rows, dtype=self.dtype.newbyteorder("<"))
        settings = self.blosc
        compress = (
            None
            if settings is None
            else _blosc_compressor(settings["cname"], settings["clevel"], settings["shuffle"])
        )
        items = self._items()
        blocks: list[bytes] = []
        for b in range(-(-n // r)):
            block = data[b * r : (b + 1) * r]
            if block.shape[0] < r:
                block = _pad_rows(block, r, self.fill)
            encoded = block.tobytes() if compress is None else compress(block.view(items))
            blocks.append(encoded + google_crc32c.value(encoded).to_bytes(_CRC_BYTES, "little"))
        return blocks

    def encode_chunks_blocks(self, chunks: Sequence[np.ndarray]) -> list[list[bytes]]:
        """:meth:`encode_blocks` of several spatial chunks' rows (the same bytes), by one
        native kernel call over their blocks when there are several chunks.

        Examples
        --------
        >>> import numpy as np
        >>> layout = RowLayout(np.dtype("<f4"), (3,), 8, 4, {"cname": "lz4", "clevel": 5,
        ...     "shuffle": "shuffle"})
        >>> chunks = [np.ones((5, 3), "<f4"), np.zeros((2, 3), "<f4")]
        >>> layout.encode_chunks_blocks(chunks) == [layout.encode_blocks(c) for c in chunks]
        True
        """
        packed = self._encode_chunks_natively(chunks) if len(chunks) > 1 else None
        if packed is None:
            return [self.encode_blocks(rows) for rows in chunks]
        body, lengths, counts = packed
        ends = np.cumsum(lengths).tolist()
        blocks = [body[a:b] for a, b in zip([0, *ends[:-1]], ends, strict=True)]
        firsts = np.cumsum([0, *counts.tolist()]).tolist()
        return [blocks[a:b] for a, b in itertools.pairwise(firsts)]

    def encode_chunks_shard(self, chunks: Sequence[tuple[int, np.ndarray]], key: str) -> bytes:
        """The shard at ``key`` from its spatial chunks' rows, by one native kernel call.

        ``chunks`` are ``(local chunk position, rows)`` in ascending position (see
        :meth:`local_chunk`), each with ``0 < n <= N_max`` rows. The bytes are those of
        :meth:`assemble_shard` of their :meth:`encode_blocks`; the shard index is computed
        from the blocks' lengths at once, not block by block.

        Examples
        --------
        >>> import numpy as np
        >>> layout = RowLayout(np.dtype("<f4"), (3,), 4, 8, {"cname": "lz4", "clevel": 5,
        ...     "shuffle": "shuffle"}, shard_chunks=(2,))
        >>> chunks = [(0, np.ones((5, 3), "<f4")), (1, np.zeros((2, 3), "<f4"))]
        >>> blocks = [(local, layout.encode_blocks(rows)) for local, rows in chunks]
        >>> layout.encode_chunks_shard(chunks, "v/c/0/0/0") == layout.assemble_shard(
        ...     blocks, "v/c/0/0/0")
        True
        """
        packed = self._encode_chunks_natively([rows for _, rows in chunks])
        if packed is None:
            encoded = [(local, self.encode_blocks(rows)) for local, rows in chunks]
            return self.assemble_shard(encoded, key)
        body, lengths, counts = packed
        firsts = np.cumsum(counts) - counts
        locals_ = np.fromiter((local for local, _ in chunks), np.int64, len(chunks))
        slots = np.arange(lengths.shape[0]) + np.repeat(locals_ * self.n_blocks - firsts, counts)
        index = np.full((self.chunks_per_shard * self.n_blocks, 2), _MISSING, dtype="<u8")
        index[slots, 0] = np.cumsum(lengths) - lengths
        index[slots, 1] = lengths
        return body + self._tail(index.tobytes(), key)

    def _encode_chunks_natively(
        self, chunks: Sequence[np.ndarray]
    ) -> tuple[bytes, np.ndarray, np.ndarray] | None:
        """The row blocks of several chunks' rows back to back (each chunk's last block
        padded with the fill value), their lengths and the blocks per chunk, by one native
        kernel call; None without the native functions."""
        native = native_blocks.native_encode_functions()
        if native is None:
            return None
        r = self.rows_per_block
        counts = np.fromiter((-(-rows.shape[0] // r) for rows in chunks), np.int64, len(chunks))
        data = np.empty((int(counts.sum()) * r, *self.row_shape), self.dtype.newbyteorder("<"))
        at = 0
        for rows, k in zip(chunks, counts.tolist(), strict=True):
            n = rows.shape[0]
            data[at : at + n] = rows
            data[at + n : at + k * r] = self.fill
            at += k * r
        packed = native_blocks.encode_natively(data, r, data[:0], self._codec(), native)
        return None if packed is None else (*packed, counts)

    def _codec(self) -> tuple[int, int, str, int] | None:
        """``(clevel, shuffle code, compressor name, typesize)`` for the native kernel (a
        typesize of 0: the item size), None for raw blocks."""
        settings = self.blosc
        if settings is None:
            return None
        shuffle = _BLOSC_SHUFFLE[settings["shuffle"]]
        return settings["clevel"], shuffle, settings["cname"], settings.get("typesize", 0)

    def _items(self) -> np.dtype[Any]:
        """The dtype Blosc sees a row block as: items of the layout's ``typesize`` (the
        bytes of 8-byte items for compressed fragment blobs, spec §9.0.4), else the
        array's own (as a flat little-endian view)."""
        typesize = (self.blosc or {}).get("typesize", self.dtype.itemsize)
        return np.dtype(f"<u{typesize}") if typesize != self.dtype.itemsize else self.dtype

    def _encode_natively(self, rows: np.ndarray) -> tuple[bytes, np.ndarray] | None:
        """The stored row blocks of rows ``[0, n)`` back to back and their lengths, by one
        native kernel call (:func:`~zarr_vectors.store.native_blocks.encode_natively`);
        None without the native functions, or for no rows."""
        native = native_blocks.native_encode_functions()
        if native is None or rows.shape[0] == 0:
            return None
        r = self.rows_per_block
        data = np.ascontiguousarray(rows, dtype=self.dtype.newbyteorder("<"))
        whole = data.shape[0] - data.shape[0] % r
        tail = data[whole:]
        if tail.shape[0]:
            tail = _pad_rows(tail, r, self.fill)
        return native_blocks.encode_natively(data, r, tail, self._codec(), native)

    def assemble_shard(self, chunks: Sequence[tuple[int, list[bytes]]], key: str) -> bytes:
        """Shard bytes from the encoded row blocks of the spatial chunks it holds.

        Parameters
        ----------
        chunks
            ``(local chunk position, blocks)`` per occupied chunk of the shard (see
            :meth:`local_chunk`, :meth:`encode_blocks`); blocks are stored in this order,
            and every block not given is marked missing in the index.
        key
            The store key the shard is written to, bound into its place record.

        Returns
        -------
        bytes
            The row blocks back to back, the place record (when :attr:`placed`), then the
            index (``uint64`` offset and length per (chunk, block) in C order, ``2**64-1``
            for blocks not stored) and its CRC32C.
        """
        index = np.full((self.chunks_per_shard * self.n_blocks, 2), _MISSING, dtype="<u8")
        parts: list[bytes] = []
        offset = 0
        for local, blocks in chunks:
            for b, encoded in enumerate(blocks):
                parts.append(encoded)
                index[local * self.n_blocks + b] = (offset, len(encoded))
                offset += len(encoded)
        parts.append(self._tail(index.tobytes(), key))
        return b"".join(parts)

    def decode_index(self, tail: bytes, where: str) -> np.ndarray:
        """Decode and verify the shard index (and place record) from the last bytes of a shard.

        Parameters
        ----------
        tail
            At least the last :attr:`tail_nbytes` bytes of the shard.
        where
            The key the shard was read from (relative to the store root): the place
            record must name it.

        Returns
        -------
        numpy.ndarray
            ``(chunks_per_shard * n_blocks, 2)`` uint64 array of (offset, nbytes) per (chunk,
            block) in C order; missing blocks hold 2**64-1. With one chunk per shard these
            are the chunk's entries; otherwise take them with :meth:`chunk_entries`.

        Raises
        ------
        CorruptChunkError
            When the shard is too short or its index fails its checksum.
        MisplacedChunkError
            When the layout is :attr:`placed` and the place record is missing, damaged or
            names another key: the file belongs elsewhere.
        """
        if len(tail) < self.tail_nbytes:
            raise CorruptChunkError(
                f"{where}: shard is {len(tail)} bytes, shorter than its "
                f"{self.tail_nbytes}-byte index"
            )
        raw = tail[len(tail) - self.index_nbytes :]
        body, crc = raw[:-_CRC_BYTES], raw[-_CRC_BYTES:]
        if google_crc32c.value(body) != int.from_bytes(crc, "little"):
            raise CorruptChunkError(f"{where}: shard index checksum mismatch")
        if self.placed:
            at = len(tail) - self.tail_nbytes  # >= 0: the length was checked above
            expected = place_record(where, self.type_name)
            if not tail.startswith(expected, at):  # compared in place, without a copy
                problem = place_problem(tail[at : at + PLACE_NBYTES], where, self.type_name)
                raise MisplacedChunkError(f"{where}: the file {problem}")
        return np.frombuffer(body, dtype="<u8").reshape(-1, 2)

    def reindex_shard(self, shard: bytes, to: RowLayout, where: str, key: str) -> bytes:
        """The same shard for a layout with another ``N_max`` (its index resized), stored at
        ``key`` (its place record rewritten).

        Row blocks do not depend on ``N_max`` nor on the key, so only the bytes after them
        change: the result is what :meth:`encode_shard` of ``to`` gives for the same rows
        at ``key``.

        Parameters
        ----------
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
        if self.chunks_per_shard != 1 or to.chunks_per_shard != 1:
            raise ValueError("reindex_shard is for one chunk per shard")
        index = self.decode_index(shard, where)
        if (to.n_blocks, to.placed, key) == (self.n_blocks, self.placed, where):
            return shard
        stored = np.flatnonzero(index[:, 0] != _MISSING)
        if stored.size and int(stored[-1]) >= to.n_blocks:
            raise CorruptChunkError(f"{where}: row block {int(stored[-1])} lies beyond N_max")
        resized = np.full((to.n_blocks, 2), _MISSING, dtype="<u8")
        keep = min(self.n_blocks, to.n_blocks)
        resized[:keep] = index[:keep]
        return bytes(shard[: len(shard) - self.tail_nbytes]) + to._tail(resized.tobytes(), key)

    def placed_shard(self, shard: bytes, key: str) -> bytes:
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
        if self.placed:
            raise ValueError("placed_shard is for a layout without place records")
        self.decode_index(shard, key)  # the index is intact before anything is added
        cut = len(shard) - self.index_nbytes
        return b"".join([shard[:cut], place_record(key, self.type_name), shard[cut:]])

    def chunk_blocks(
        self, shard: bytes, chunk: np.ndarray | Sequence[int], stored: int, where: str
    ) -> list[bytes]:
        """The stored row blocks of one spatial chunk, as bytes, copied out of its shard.

        They go into another shard unchanged (:meth:`assemble_shard`): a row block does not
        depend on ``N_max`` nor on the other chunks of its shard.

        Parameters
        ----------
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
        entries = self.chunk_entries(self.decode_index(shard, where), chunk).tolist()
        wanted = -(-stored // self.rows_per_block)
        present = [b for b, (offset, _) in enumerate(entries) if offset != _MISSING_INT]
        if present != list(range(wanted)):
            raise CorruptChunkError(
                f"{where}: chunk {list(map(int, chunk))} stores row blocks {present}, but "
                f"its {stored} rows need blocks 0 to {wanted - 1}"
            )
        end = len(shard) - self.tail_nbytes
        blocks = []
        for b, (offset, nbytes) in enumerate(entries[:wanted]):
            if offset + nbytes > end:
                raise CorruptChunkError(f"{where}: row block {b} lies beyond the shard's data")
            block = bytes(shard[offset : offset + nbytes])
            if google_crc32c.value(block) != _CRC_RESIDUE:
                raise CorruptChunkError(f"{where}: row block {b} fails its checksum")
            blocks.append(block)
        return blocks

    def block_span(self, index: ShardIndex, first: int, stop: int, where: str) -> tuple[int, int]:
        """Byte span ``[start, end)`` of the shard holding row blocks ``first .. stop-1``.

        Blocks may be stored in any order; the span runs from the lowest offset to the
        highest end among them.

        Parameters
        ----------
        index
            The shard index (:meth:`decode_index`, or its ``tolist()``).

        Raises
        ------
        CorruptChunkError
            When a needed block is missing.
        """
        start, end = _MISSING_INT, 0
        for b in range(first, stop):
            offset, nbytes = int(index[b][0]), int(index[b][1])
            if offset == _MISSING_INT or nbytes == _MISSING_INT:
                raise CorruptChunkError(f"{where}: row block {b} is missing from the shard")
            start, end = min(start, offset), max(end, offset + nbytes)
        return start, end

    def decode_rows_into(
        self,
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
        payload
            Bytes of the shard from byte ``base`` on (see :meth:`block_span`); they must
            cover every block holding the rows.
        index
            The shard index (:meth:`decode_index`, or its ``tolist()``).
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
        r = self.rows_per_block
        first, last = start // r, (stop - 1) // r
        stored = self.dtype.newbyteorder("<")
        if start == first * r and out.dtype == stored and out.flags.c_contiguous:
            # Whole blocks straight into out; a last block of fewer rows through a scratch.
            whole_stop = last + 1 if stop == (last + 1) * r else last
            done = (whole_stop - first) * r
            if done:
                blocks = range(first, whole_stop)
                self.decode_blocks_into(payload, index, base, blocks, out[:done], where)
            if done < out.shape[0]:
                tail = np.empty((r, *self.row_shape), dtype=stored)
                self.decode_blocks_into(payload, index, base, [last], tail, where)
                out[done:] = tail[: out.shape[0] - done]
            return
        blocks = range(first, last + 1)
        whole = np.empty((len(blocks) * r, *self.row_shape), dtype=stored)
        self.decode_blocks_into(payload, index, base, blocks, whole, where)
        out[...] = whole[start - first * r : stop - first * r]

    def decode_blocks_into(
        self,
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
        payload, index, base
            As :meth:`decode_rows_into`.
        blocks
            Block numbers to decode, in the order they go to ``out``.
        out
            Destination, shape ``(len(blocks) * R, *row_shape)``.
        where
            The shard's key, for error messages.
        """
        self.decode_block_groups_into([(payload, base, blocks)], index, out, where)

    def locate_blocks(
        self, nbytes: int, base: int, index: ShardIndex, blocks: Sequence[int], where: str
    ) -> list[tuple[int, int]]:
        """Where row blocks lie in fetched bytes of a shard.

        Parameters
        ----------
        nbytes, base
            The fetched bytes: ``nbytes`` bytes of the shard from byte ``base`` on.
        index
            The shard index (:meth:`decode_index`, or its ``tolist()``).
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
            if offset == _MISSING_INT or size == _MISSING_INT:
                raise CorruptChunkError(f"{where}: row block {b} is missing from the shard")
            start = offset - base
            out.append((start, size) if start >= 0 and start + size <= nbytes else (-1, 0))
        return out

    def decode_block_groups_into(
        self,
        parts: Sequence[tuple[bytes, int, Sequence[int]]],
        index: ShardIndex,
        out: np.ndarray,
        where: str,
    ) -> None:
        """Decode the row blocks of several fetched byte ranges of one shard back to back
        into ``out``, by one native call where possible (:meth:`decode_blocks_at`).

        Parameters
        ----------
        parts
            ``(payload, base, blocks)``: bytes of the shard from byte ``base`` on, and the
            numbers of the whole row blocks they hold, in the order they go to ``out``.
        index
            The shard index (:meth:`decode_index`, or its ``tolist()``).
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
                blocks, self.locate_blocks(len(payload), base, index, blocks, where), strict=True
            ):
                numbers.append(b)
                starts.append(at + start if start >= 0 else total)  # outside: the kernel refuses
                lengths.append(nbytes)
            at += len(payload)
        joined = parts[0][0] if len(parts) == 1 else b"".join(p for p, _, _ in parts)
        self.decode_blocks_at(
            np.frombuffer(joined, dtype=np.uint8),
            np.array(starts, dtype=np.int64),
            np.array(lengths, dtype=np.int64),
            np.arange(len(numbers), dtype=np.int64),
            out,
            lambda i: (numbers[i], where),
        )

    def decode_block_into(self, raw: bytes, b: int, where: str, out: np.ndarray) -> None:
        """Decode one stored row block (exactly its bytes, CRC32C included) into ``out``.

        The checksum is verified over the whole stored block (the CRC32C of data followed
        by its own little-endian CRC32C is a fixed residue), so the body is never copied.

        Parameters
        ----------
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
        if len(raw) < _CRC_BYTES:
            raise CorruptChunkError(
                f"{where}: row block {b}: {len(raw)} bytes, too short for its checksum"
            )
        if google_crc32c.value(raw) != _CRC_RESIDUE:
            raise CorruptChunkError(
                f"{where}: row block {b}: checksum mismatch (the stored bytes are damaged)"
            )
        body = memoryview(raw)[:-_CRC_BYTES]
        expected = self.rows_per_block * self.row_nbytes
        if self.blosc is None:
            if len(body) != expected:
                raise CorruptChunkError(
                    f"{where}: row block {b} holds {len(body)} bytes, expected {expected}"
                )
            out.reshape(-1).view(np.uint8)[:] = np.frombuffer(body, dtype=np.uint8)
            return
        _check_blosc_header(body, expected, where, b)
        try:
            blosc.decompress(body, out)
        except (RuntimeError, ValueError, TypeError) as exc:
            raise CorruptChunkError(f"{where}: row block {b} does not decode ({exc})") from exc

    def decode_blocks_at(
        self,
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
        check is decoded by :meth:`decode_block_into`, which raises its precise error. A
        large batch is shared with a helper thread when a CPU is idle.

        Parameters
        ----------
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
        flat = out.reshape(-1).view(np.uint8)
        size = self.rows_per_block * self.row_nbytes
        first = 0
        native = native_blocks.native_block_functions()
        if native is not None:
            compressed = self.blosc is not None
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
            self.decode_block_into(raw, number, where, target)

    @classmethod
    def from_array_metadata(
        cls, meta: dict[str, Any], grid_ndim: int, where: str, *, placed: bool
    ) -> RowLayout | None:
        """Read the layout from an array's ``zarr.json``; None if it is not one we decode.

        Parameters
        ----------
        meta
            The parsed ``zarr.json`` of the array.
        grid_ndim
            ``D``, the number of leading chunk-grid dimensions.
        where
            The array's path, for error messages.
        placed
            Whether the store's format version puts place records in shards
            (:func:`~zarr_vectors.format.version.has_place_records`).

        Returns
        -------
        RowLayout or None
            None for arrays that are valid Zarr but use another codec pipeline inside their
            shards; the caller reads those through zarr-python instead.

        Raises
        ------
        MetadataError
            When the grid, shard or row block shapes, the shard index codecs or the chunk
            key encoding are not those of a per-chunk array (spec §9.0, L2.sharding_layout):
            a row block of 0 rows, an ``N_max`` the blocks do not divide, a shard index
            without its checksum... were read as garbage or crashed before.
        """
        try:
            codecs = meta["codecs"]
            shard_shape = [int(s) for s in meta["chunk_grid"]["configuration"]["chunk_shape"]]
            dtype = np.dtype(meta["data_type"])
        except (KeyError, TypeError, ValueError) as exc:
            raise MetadataError(f"{where}: unreadable zarr.json ({exc})") from exc
        _check_sharding(meta, grid_ndim, where)  # the grid, shard and index are the spec's
        conf = codecs[0]["configuration"]
        names = [c.get("name") if isinstance(c, dict) else None for c in conf["codecs"]]
        if names not in (["bytes", "crc32c"], ["bytes", "blosc", "crc32c"]):
            return None
        inner = [int(s) for s in conf["chunk_shape"]]
        blosc = None
        if names == ["bytes", "blosc", "crc32c"]:
            bconf = conf["codecs"][1]["configuration"]
            blosc = {k: bconf[k] for k in ("cname", "clevel", "shuffle")}
            if bconf.get("typesize", dtype.itemsize) != dtype.itemsize:
                blosc["typesize"] = int(bconf["typesize"])
        fill = meta.get("fill_value", 0)
        per_axis = tuple(shard_shape[:grid_ndim])
        return cls(
            shard_chunks=per_axis if any(s != 1 for s in per_axis) else (),
            fill=int(fill) if isinstance(fill, int | float) and not isinstance(fill, bool) else 0,
            dtype=dtype,
            row_shape=tuple(shard_shape[grid_ndim + 1 :]),
            rows_per_block=inner[grid_ndim],
            n_max=shard_shape[grid_ndim],
            blosc=blosc,
            placed=placed,
        )


def _check_sharding(meta: dict[str, Any], grid_ndim: int, where: str) -> None:
    """Raise MetadataError when ``meta`` is not the sharded layout of a per-chunk array."""
    shape = as_int_list(meta.get("shape"))
    if shape is None or any(n < 0 for n in shape):
        problems = [f"shape {meta.get('shape')!r} is not a list of lengths"]
    else:
        problems = sharding_problems(meta, tuple(shape), grid_ndim)
    if problems:
        raise MetadataError(
            f"{where}/zarr.json: {'; '.join(problems)}. The array's metadata was edited or "
            "damaged; run zarr-vectors validate, and restore or rewrite the store"
        )


@functools.cache
def _blosc_compressor(cname: str, clevel: int, shuffle: str) -> Callable[[np.ndarray], bytes]:
    """Blosc compression of one row block: the bytes of ``Blosc(...).encode``, called
    directly (without the codec's per-call buffer checks; blocks are contiguous arrays).
    Safe from several threads: numcodecs compresses with a private context off the main
    thread."""
    return functools.partial(
        blosc.compress,
        cname=cname.encode("ascii"),
        clevel=clevel,
        shuffle=_BLOSC_SHUFFLE[shuffle],
        blocksize=0,
    )


def _check_blosc_header(body: bytes | memoryview, expected: int, where: str, block: int) -> None:
    """Refuse a Blosc frame whose header disagrees with its length or the block size."""
    if len(body) < _BLOSC_HEADER_BYTES:
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


def plain_chunk_keys(meta: dict[str, Any], path: str) -> list[str] | None:
    """Keys of every chunk, in order, of a plain array whose grid cuts only its first axis;
    None for any other array.

    Plain means what :func:`decode_plain_chunks` decodes: a regular grid whose chunks span
    every axis but the first whole, the default ``/`` chunk keys, and the codecs ``bytes``
    (little endian) alone, or followed by ``crc32c`` or by ``blosc`` and ``crc32c``. Global
    arrays are stored so (spec §9.8); a large one (an object index) in several chunks.

    Examples
    --------
    >>> meta = {"shape": [5, 2], "data_type": "int64", "codecs": [{"name": "bytes"}],
    ...         "chunk_grid": {"name": "regular", "configuration": {"chunk_shape": [2, 2]}},
    ...         "chunk_key_encoding": {"name": "default", "configuration": {"separator": "/"}}}
    >>> plain_chunk_keys(meta, "a")
    ['a/c/0/0', 'a/c/1/0', 'a/c/2/0']
    """
    try:
        shape = [int(n) for n in meta["shape"]]
        grid = meta["chunk_grid"]
        chunks = [int(n) for n in grid["configuration"]["chunk_shape"]]
        encoding = meta["chunk_key_encoding"]
        names = [c["name"] for c in meta["codecs"]]
        endian = meta["codecs"][0].get("configuration", {}).get("endian", "little")
        np.dtype(meta["data_type"])
    except (KeyError, TypeError, ValueError, AttributeError, IndexError):
        return None
    if (
        not isinstance(grid, dict)
        or grid.get("name") != "regular"
        or not shape
        or len(chunks) != len(shape)
        or chunks[1:] != shape[1:]
        or (chunks[0] < 1 and chunks != shape)
        or encoding != {"name": "default", "configuration": {"separator": "/"}}
        or names not in (["bytes"], ["bytes", "crc32c"], ["bytes", "blosc", "crc32c"])
        or endian != "little"
        or meta.get("storage_transformers", []) != []
    ):
        return None
    count = 1 if chunks == shape else -(-shape[0] // chunks[0])
    rest = "/0" * (len(shape) - 1)
    return [f"{path}/c/{i}{rest}" for i in range(count)]


def decode_plain_chunks(
    meta: dict[str, Any], raws: Sequence[bytes], keys: Sequence[str]
) -> np.ndarray:
    """The whole plain array (see :func:`plain_chunk_keys`) from the stored bytes of each
    of its chunks, in order: a new array the caller owns.

    Each chunk is decoded straight into its rows of the result (Blosc decompresses into
    them): no chunk is decoded into a buffer of its own and copied again (an object index
    of a megabyte or more, read at a store's first query, paid the copy and the page
    faults of the extra buffer).

    Raises
    ------
    CorruptChunkError
        When a checksum, a Blosc frame or a decoded size is wrong, or when ``raws`` are
        not one per chunk of the array.
    """
    shape = [int(n) for n in meta["shape"]]
    chunk = [int(n) for n in meta["chunk_grid"]["configuration"]["chunk_shape"]]
    count = 1 if chunk == shape else -(-shape[0] // chunk[0])
    if len(raws) != count or len(keys) != count:
        raise CorruptChunkError(
            f"{keys[0] if keys else 'a plain array'}: {len(raws)} chunks read, the array has "
            f"{count}"
        )
    out = np.empty(shape, dtype=_stored_dtype(meta["data_type"]))
    rows = max(chunk[0], 1)
    for j, (raw, key) in enumerate(zip(raws, keys, strict=True)):
        _decode_plain_into(meta, raw, key, chunk, out[j * rows : (j + 1) * rows])
    return out


def _decode_plain_into(
    meta: dict[str, Any], raw: bytes, where: str, shape: Sequence[int], rows: np.ndarray
) -> None:
    """Decode one chunk of ``shape`` of a plain array and write its first ``len(rows)`` rows
    into ``rows`` (all of them, but in a last chunk that the array's shape cuts short)."""
    expected = math.prod(shape) * rows.dtype.itemsize
    if len(meta["codecs"]) == 3 and rows.nbytes == expected and _decoded_natively(raw, rows):
        return
    body = memoryview(raw)
    if len(meta["codecs"]) > 1:
        if len(raw) < _CRC_BYTES or google_crc32c.value(raw) != _CRC_RESIDUE:
            raise CorruptChunkError(f"{where}: checksum mismatch (the stored bytes are damaged)")
        body = body[:-_CRC_BYTES]
    if len(meta["codecs"]) == 3:
        if len(body) < _BLOSC_HEADER_BYTES or int.from_bytes(body[4:8], "little") != expected:
            raise CorruptChunkError(f"{where}: Blosc header disagrees with the array's size")
        whole = rows.nbytes == expected
        try:  # a whole chunk is decompressed in place, a cut one through a buffer
            found = blosc.decompress(body, rows) if whole else blosc.decompress(body)
        except (RuntimeError, ValueError, TypeError) as exc:
            raise CorruptChunkError(f"{where}: does not decode ({exc})") from exc
        if whole:
            return
        body = memoryview(found)
    if len(body) != expected:
        raise CorruptChunkError(f"{where}: holds {len(body)} bytes, expected {expected}")
    stored = np.frombuffer(body, dtype=rows.dtype).reshape(tuple(shape))
    rows[...] = stored[: rows.shape[0]]


def _decoded_natively(raw: bytes, rows: np.ndarray) -> bool:
    """Whether the Blosc frame and CRC32C of a whole chunk (``raw``) were checked and
    decompressed into ``rows`` by the native row-block decoder: one Blosc thread, where
    numcodecs' ``decompress`` of a large chunk in the main thread starts Blosc's own threads
    (a megabyte-sized object index took 10-20 ms of wall time instead of 2-3 on a busy
    2-core machine). False when the native functions are not available or any check fails
    (the caller then decodes the chunk itself, and names the fault)."""
    native = native_blocks.native_block_functions()
    if native is None or not rows.nbytes or not rows.flags.c_contiguous:
        return False
    failed = decode_blocks(
        np.frombuffer(raw, dtype=np.uint8),
        np.zeros(1, dtype=np.int64),
        np.full(1, len(raw), dtype=np.int64),
        rows.reshape(-1).view(np.uint8),
        np.zeros(1, dtype=np.int64),
        rows.nbytes,
        True,
        *native,
        *zstd_context(),
    )
    return failed < 0


def _stored_dtype(name: str) -> np.dtype[Any]:
    """The little-endian dtype ``name``, as zarr-python gives it: one-byte types keep numpy's
    own object (``newbyteorder`` would copy it; trx-python tests ``dtype is np.dtype(bool)``)."""
    dtype = np.dtype(name)
    return dtype if dtype.byteorder == "|" else dtype.newbyteorder("<")


def _pad_rows(block: np.ndarray, rows: int, fill: int) -> np.ndarray:
    padded = np.empty((rows, *block.shape[1:]), dtype=block.dtype)
    padded[: block.shape[0]] = block
    padded[block.shape[0] :] = fill
    return padded


def shard_key(path: str, chunk: np.ndarray, row_ndim: int) -> str:
    """Key of the shard of spatial chunk ``chunk`` in the row array at ``path`` (spec §2)."""
    parts = [str(int(c)) for c in chunk] + ["0"] * (1 + row_ndim)
    return f"{path}/c/" + "/".join(parts)
