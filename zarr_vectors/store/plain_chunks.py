"""Plain arrays (global arrays, spec §9.8) read without zarr-python: their chunk keys, and the
whole array decoded from its chunks' stored bytes.
"""

from __future__ import annotations

import math
from collections.abc import Mapping, Sequence
from typing import Any

import google_crc32c
import numpy as np
from numcodecs import blosc

from zarr_vectors.errors import CorruptChunkError
from zarr_vectors.kernels.kernel_args import bytes_of
from zarr_vectors.kernels.row_blocks import CRC_RESIDUE, decode_blocks, decode_chunk_blocks
from zarr_vectors.store import native_blocks
from zarr_vectors.store.block_decoding import BLOSC_HEADER_BYTES
from zarr_vectors.store.shard_assembly import CRC_BYTES
from zarr_vectors.store.zstd_contexts import zstd_context

__all__ = ["decode_plain_chunks", "plain_chunk_keys", "take_plain_rows"]


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


def take_plain_rows(
    meta: dict[str, Any], raws: Mapping[int, bytes], keys: Sequence[str], rows: np.ndarray
) -> np.ndarray:
    """``array[rows]`` of a plain array (see :func:`plain_chunk_keys`), from the stored
    bytes of the chunks holding ``rows``, decoding of each only the Blosc blocks that hold
    them where it can (the chunk's checksum is checked whole either way).

    The manifests of 100 objects in an object index of 12.7 MB (100,000 streamlines) were
    read by decoding all of it: ~18 ms of a 34 ms cold read.

    Parameters
    ----------
    meta
        The array's parsed ``zarr.json``.
    raws
        The stored bytes of each chunk holding a row of ``rows``, by chunk number.
    keys
        The keys of every chunk of the array (for error messages).
    rows
        ``(k,)`` row numbers along the first axis, each in ``[0, shape[0])``, any order.

    Raises
    ------
    CorruptChunkError
        When a checksum, a Blosc frame or a decoded size is wrong.

    Examples
    --------
    >>> meta = {"shape": [5], "data_type": "int64", "codecs": [{"name": "bytes"}],
    ...         "chunk_grid": {"name": "regular", "configuration": {"chunk_shape": [2]}}}
    >>> raws = {0: np.arange(2).tobytes(), 2: np.arange(40, 42).tobytes()}
    >>> take_plain_rows(meta, raws, ["a/c/0", "a/c/1", "a/c/2"], np.array([4, 1, 4])).tolist()
    [40, 1, 40]
    """
    shape = [int(n) for n in meta["shape"]]
    chunk = [int(n) for n in meta["chunk_grid"]["configuration"]["chunk_shape"]]
    per_chunk = max(chunk[0], 1)
    dtype = _stored_dtype(meta["data_type"])
    expected = math.prod(chunk) * dtype.itemsize
    which = rows // per_chunk
    for j in np.unique(which).tolist():
        _check_stored_size(meta, raws[j], keys[j], expected)  # before a chunk is allocated
    out = np.empty((rows.shape[0], *shape[1:]), dtype=dtype)
    whole = np.empty(tuple(chunk), dtype=dtype)  # one chunk at a time, its pages reused
    order = np.argsort(which, kind="stable")
    bounds = np.flatnonzero(np.diff(which[order])) + 1
    for picked in np.split(order, bounds) if rows.shape[0] else []:
        j = int(which[picked[0]])
        local = rows[picked] - j * per_chunk
        _decode_rows_into(meta, raws[j], keys[j], whole, local)
        out[picked] = whole[local]
    return out


def _check_stored_size(meta: dict[str, Any], raw: bytes, where: str, expected: int) -> None:
    """Raise CorruptChunkError unless the stored chunk ``raw`` decodes to ``expected`` bytes
    (its Blosc header says so, or its length with its CRC32C): a chunk shape edited in the
    metadata must not make a read allocate what the stored bytes never held."""
    codecs = len(meta["codecs"])
    if codecs == 3 and _frame_holds(raw, expected):
        return
    if codecs < 3 and len(raw) - (CRC_BYTES if codecs == 2 else 0) == expected:
        return
    if codecs > 1 and (len(raw) < CRC_BYTES or google_crc32c.value(raw) != CRC_RESIDUE):
        raise CorruptChunkError(f"{where}: checksum mismatch (the stored bytes are damaged)")
    raise CorruptChunkError(
        f"{where}: holds other than the {expected} bytes of a chunk of the array's metadata "
        "(an edited chunk shape, or a damaged Blosc header): run zarr-vectors validate, and "
        "restore or rewrite the store"
    )


def _decode_rows_into(
    meta: dict[str, Any], raw: bytes, where: str, whole: np.ndarray, local: np.ndarray
) -> None:
    """Decode one chunk of a plain array into ``whole`` (a chunk's shape), at least its
    rows ``local``: only the Blosc blocks holding them when the chunk allows it, else all."""
    wanted = _wanted_blocks(meta, raw, whole, local)
    native = native_blocks.native_block_functions()
    zstd = zstd_context()
    if wanted is not None and native is not None and zstd[0]:
        found = decode_chunk_blocks(
            np.frombuffer(raw, dtype=np.uint8),
            whole.reshape(-1).view(np.uint8),
            wanted,
            native[0],
            *zstd,
        )
        if found == 1:
            return
    _decode_plain_into(meta, raw, where, whole.shape, whole)  # names a damaged chunk's fault


def _wanted_blocks(
    meta: dict[str, Any], raw: bytes, whole: np.ndarray, local: np.ndarray
) -> np.ndarray | None:
    """Which Blosc blocks of the stored chunk ``raw`` (decoding to ``whole``, its size
    checked by :func:`_check_stored_size`) hold the rows ``local``; None when the chunk is
    not compressed or its block size is out of place (it is then decoded whole, which names
    any fault)."""
    if len(meta["codecs"]) != 3:
        return None
    blocksize = int.from_bytes(raw[8:12], "little")
    if not 0 < blocksize <= whole.nbytes:
        return None
    row_nbytes = whole.nbytes // max(whole.shape[0], 1)
    first = local * row_nbytes // blocksize
    last = ((local + 1) * row_nbytes - 1) // blocksize
    n = -(-whole.nbytes // blocksize)
    opened = np.bincount(first, minlength=n + 1) - np.bincount(last + 1, minlength=n + 1)
    return (np.cumsum(opened[:n]) > 0).astype(np.uint8)


def _decode_plain_into(
    meta: dict[str, Any], raw: bytes, where: str, shape: Sequence[int], rows: np.ndarray
) -> None:
    """Decode one chunk of ``shape`` of a plain array and write its first ``len(rows)`` rows
    into ``rows`` (all of them, but in a last chunk that the array's shape cuts short)."""
    expected = math.prod(shape) * rows.dtype.itemsize
    if len(meta["codecs"]) == 3 and _decoded_natively_into(raw, rows, shape, expected):
        return
    body = memoryview(raw)
    if len(meta["codecs"]) > 1:
        if len(raw) < CRC_BYTES or google_crc32c.value(raw) != CRC_RESIDUE:
            raise CorruptChunkError(f"{where}: checksum mismatch (the stored bytes are damaged)")
        body = body[:-CRC_BYTES]
    if len(meta["codecs"]) == 3:
        if len(body) < BLOSC_HEADER_BYTES or int.from_bytes(body[4:8], "little") != expected:
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


def _decoded_natively_into(
    raw: bytes, rows: np.ndarray, shape: Sequence[int], expected: int
) -> bool:
    """:func:`_decoded_natively` of a chunk of ``shape`` (``expected`` bytes) into ``rows``:
    in place when the chunk is whole, else through a buffer of the chunk whose first rows
    are copied (the last chunk of an object index of several, which numcodecs decoded
    with a new Zstandard context per stream: ~0.9-1.0 ms CPU for a 1 MiB chunk, 0.6-0.7
    ms so)."""
    if rows.nbytes == expected:
        return _decoded_natively(raw, rows)
    if rows.nbytes > expected or not _frame_holds(raw, expected):
        return False  # the caller checks the frame again and names the fault
    whole = np.empty(tuple(shape), dtype=rows.dtype)
    if not _decoded_natively(raw, whole):
        return False
    rows[...] = whole[: rows.shape[0]]
    return True


def _frame_holds(raw: bytes, expected: int) -> bool:
    """Whether the Blosc header of a stored chunk (``raw``, CRC32C last) says it decodes to
    ``expected`` bytes: checked before a buffer of the chunk is made, so that a chunk shape
    edited in the metadata cannot make a read allocate what the stored bytes never held."""
    body = raw[:-CRC_BYTES]
    return len(body) >= BLOSC_HEADER_BYTES and int.from_bytes(body[4:8], "little") == expected


_FIRST = np.zeros(1, dtype=np.int64)
"""``[0]``: where a whole chunk's one block starts, and its slot (shared, never written:
writable all the same, as the kernel is compiled for writable arrays)."""


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
        _FIRST,  # one block, from byte 0, into slot 0
        np.array([len(raw)], dtype=np.int64),
        bytes_of(rows),
        _FIRST,
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
