"""Sharded row arrays: one Zarr shard per spatial chunk, written and read row block by row block.

Every per-chunk array of a store (``vertices``, ``attributes/<name>``, ``vertex_fragments``...)
is a Zarr v3 array of logical shape ``(*G, N_max, *row_shape)`` whose regular chunk grid has
one chunk per spatial chunk, encoded with the ``sharding_indexed`` codec into inner chunks
("row blocks") of ``R`` rows (spec §9.0). This module builds those shard bytes directly and
decodes them, so a chunk holding ``n`` rows costs ``ceil(n / R)`` row blocks whatever ``N_max``
is; the bytes are exactly what zarr-python reads and writes for the same metadata.

:class:`RowLayout` holds the layout, where chunks lie in shards and the encoding of row
blocks; its shard index and assembly methods are the functions of
:mod:`~zarr_vectors.store.shard_assembly`, its decoding methods those of
:mod:`~zarr_vectors.store.block_decoding`. Plain (global) arrays are read by
:mod:`~zarr_vectors.store.plain_chunks`, whose names this module also exports.
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

from zarr_vectors.errors import MetadataError
from zarr_vectors.format.jsonutil import as_int_list
from zarr_vectors.format.layout import sharding_problems
from zarr_vectors.format.place import PLACE_NBYTES, data_type_name
from zarr_vectors.store import block_decoding, native_blocks, shard_assembly
from zarr_vectors.store.plain_chunks import decode_plain_chunks, plain_chunk_keys, take_plain_rows
from zarr_vectors.store.shard_assembly import CRC_BYTES, MISSING, shard_tail

__all__ = [
    "RowLayout",
    "ShardIndex",
    "decode_plain_chunks",
    "plain_chunk_keys",
    "shard_key",
    "take_plain_rows",
]

ShardIndex = np.ndarray | Sequence[Sequence[int]]
"""A decoded shard index: the ``(n_blocks, 2)`` array or its ``tolist()`` (faster to index)."""

_BLOSC_SHUFFLE = {
    "noshuffle": Blosc.NOSHUFFLE,
    "shuffle": Blosc.SHUFFLE,
    "bitshuffle": Blosc.BITSHUFFLE,
}


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
        index = 16 * n_blocks * per_shard + CRC_BYTES
        object.__setattr__(self, "n_blocks", n_blocks)
        object.__setattr__(self, "row_nbytes", self.dtype.itemsize * math.prod(self.row_shape))
        object.__setattr__(self, "chunks_per_shard", per_shard)
        object.__setattr__(self, "index_nbytes", index)
        object.__setattr__(self, "tail_nbytes", index + (PLACE_NBYTES if self.placed else 0))
        object.__setattr__(self, "type_name", data_type_name(self.dtype))

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
        index = np.full((self.n_blocks, 2), MISSING, dtype="<u8")
        ends = np.cumsum(lengths)
        index[: lengths.shape[0], 0] = ends - lengths
        index[: lengths.shape[0], 1] = lengths
        return b"".join((body.data, shard_tail(self, index.tobytes(), key)))  # body copied once

    def encode_blocks(self, rows: np.ndarray) -> list[bytes]:
        """Encode rows ``[0, n)`` of one spatial chunk as its stored row blocks.

        Each block is ``R`` rows (the last padded with the fill value), compressed when
        the layout has a codec, followed by its CRC32C.
        """
        packed = self._encode_natively(rows)
        if packed is not None:
            body, lengths = packed[0].tobytes(), packed[1]
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
            blocks.append(encoded + google_crc32c.value(encoded).to_bytes(CRC_BYTES, "little"))
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
        body, lengths, counts = packed[0].tobytes(), packed[1], packed[2]
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
        index = np.full((self.chunks_per_shard * self.n_blocks, 2), MISSING, dtype="<u8")
        index[slots, 0] = np.cumsum(lengths) - lengths
        index[slots, 1] = lengths
        return b"".join((body.data, shard_tail(self, index.tobytes(), key)))  # body copied once

    def _encode_chunks_natively(
        self, chunks: Sequence[np.ndarray]
    ) -> tuple[np.ndarray, np.ndarray, np.ndarray] | None:
        """The row blocks of several chunks' rows back to back (each chunk's last block
        padded with the fill value) as a ``uint8`` array, their lengths and the blocks per
        chunk, by one native kernel call; None without the native functions."""
        native = native_blocks.native_encode_functions()
        if native is None:
            return None
        r = self.rows_per_block
        sizes = np.fromiter((rows.shape[0] for rows in chunks), np.int64, len(chunks))
        fill = _fill_block(self.dtype, self.row_shape, r, self.fill)
        data = np.concatenate(chunks, dtype=fill.dtype, casting="unsafe")  # no padding
        packed = native_blocks.encode_natively(data, r, sizes, fill, self._codec(), native)
        return None if packed is None else (*packed, -(-sizes // r))

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

    def _encode_natively(self, rows: np.ndarray) -> tuple[np.ndarray, np.ndarray] | None:
        """The stored row blocks of rows ``[0, n)`` back to back (a ``uint8`` array) and
        their lengths, by one native kernel call
        (:func:`~zarr_vectors.store.native_blocks.encode_natively`); None without the
        native functions, or for no rows."""
        native = native_blocks.native_encode_functions()
        if native is None or rows.shape[0] == 0:
            return None
        r = self.rows_per_block
        data = np.ascontiguousarray(rows, dtype=self.dtype.newbyteorder("<"))
        fill = _fill_block(self.dtype, self.row_shape, r, self.fill)
        counts = np.array([data.shape[0]], np.int64)
        return native_blocks.encode_natively(data, r, counts, fill, self._codec(), native)

    # The bytes after the row blocks, and shards assembled from stored blocks.
    assemble_shard = shard_assembly.assemble_shard
    decode_index = shard_assembly.decode_index
    reindex_shard = shard_assembly.reindex_shard
    placed_shard = shard_assembly.placed_shard
    chunk_blocks = shard_assembly.chunk_blocks

    # Row blocks decoded from fetched bytes of a shard.
    block_span = block_decoding.block_span
    decode_rows_into = block_decoding.decode_rows_into
    decode_blocks_into = block_decoding.decode_blocks_into
    locate_blocks = block_decoding.locate_blocks
    decode_block_groups_into = block_decoding.decode_block_groups_into
    decode_block_into = block_decoding.decode_block_into
    decode_blocks_at = block_decoding.decode_blocks_at

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
    if shape is None or min(shape, default=0) < 0:
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


@functools.cache
def _fill_block(
    dtype: np.dtype[Any], row_shape: tuple[int, ...], rows: int, fill: int
) -> np.ndarray:
    """``rows`` rows of ``fill`` (little-endian, read-only): what completes a chunk's last
    row block (made once per layout, not per shard)."""
    block = np.full((rows, *row_shape), fill, dtype.newbyteorder("<"))
    block.flags.writeable = False
    return block


def _pad_rows(block: np.ndarray, rows: int, fill: int) -> np.ndarray:
    padded = np.empty((rows, *block.shape[1:]), dtype=block.dtype)
    padded[: block.shape[0]] = block
    padded[block.shape[0] :] = fill
    return padded


def shard_key(path: str, chunk: np.ndarray | Sequence[int], row_ndim: int) -> str:
    """Key of the shard of spatial chunk ``chunk`` in the row array at ``path`` (spec §2).

    Examples
    --------
    >>> shard_key("0/vertices", np.array([1, 0, 2]), 2), shard_key("0/radius", [3, 4], 1)
    ('0/vertices/c/1/0/2/0/0/0', '0/radius/c/3/4/0/0')
    """
    grid = chunk.tolist() if isinstance(chunk, np.ndarray) else [int(c) for c in chunk]
    return f"{path}/c/{'/'.join(map(str, grid))}{'/0' * (1 + row_ndim)}"
