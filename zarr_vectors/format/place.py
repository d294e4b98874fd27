"""Place records: the bytes that bind a stored shard to its key (spec §9.0.2, format 1.2).

A shard of a per-chunk array proves with its row blocks' CRC32C that its bytes are intact,
not that they belong where they lie: a file copied over another chunk's key (a bad copy or
sync, a manual repair) reads as valid data of the wrong chunk. From format 1.2 every such
shard holds, immediately before its shard index, a 12-byte place record, which also binds
the bytes to the ``data_type`` their array declares (an edited ``data_type`` of the same
size read as garbage numbers before):

====== ====== ==========================================================================
Offset Bytes  Content
====== ====== ==========================================================================
0      4      ``b"ZVPL"``
4      4      CRC32C (little-endian) of the shard's store key, relative to the store
              root, a line feed and the array's ``data_type``, UTF-8, e.g.
              ``"0/vertices/c/1/2/3/0/0\nfloat32"``
8      4      CRC32C (little-endian) of bytes 0-7
====== ====== ==========================================================================

The shard index never points into the record, so Zarr readers, which follow the index,
read the arrays as before.
"""

from __future__ import annotations

import functools
from typing import Any

import google_crc32c
import numpy as np

__all__ = [
    "CHUNK_TABLE_KEY",
    "PLACE_MAGIC",
    "PLACE_NBYTES",
    "data_type_name",
    "place_problem",
    "place_record",
]

PLACE_MAGIC = b"ZVPL"
"""The first four bytes of a place record."""

PLACE_NBYTES = 12
"""Bytes of a place record."""

CHUNK_TABLE_KEY = "zv_chunk_crc32c"
"""Attribute of a global array's ``zarr.json`` (format 1.2, spec §9.8.1): the CRC32C each of
its chunks ends with, in C order of its chunk grid, binding every chunk file to its key."""


def _crc(data: bytes) -> bytes:
    return int(google_crc32c.value(data)).to_bytes(4, "little")


@functools.cache
def data_type_name(dtype: np.dtype[Any]) -> str:
    """``dtype.name`` (the Zarr v3 ``data_type`` of a numeric dtype), cached: numpy builds
    the name anew on every access (some microseconds, once per shard index decoded)."""
    return dtype.name


@functools.lru_cache(maxsize=4096)
def place_record(key: str, data_type: str) -> bytes:
    """The place record of the shard stored at ``key`` (relative to the store root) of an
    array of ``data_type`` (its Zarr v3 name, e.g. ``"float32"``); the records of recent
    keys are kept (readers compare one per shard index they decode).

    Examples
    --------
    >>> place_record("0/vertices/c/1/2/3/0/0", "float32")[:4]
    b'ZVPL'
    """
    head = PLACE_MAGIC + _crc(f"{key}\n{data_type}".encode())
    return head + _crc(head)


def place_problem(record: bytes | memoryview, key: str, data_type: str) -> str | None:
    """Why ``record`` is not the place record of a shard at ``key`` of an array of
    ``data_type``, or None if it is.

    Parameters
    ----------
    record
        The :data:`PLACE_NBYTES` bytes before the shard index.
    key
        The key the shard was read from.
    data_type
        The ``data_type`` the array's ``zarr.json`` declares.

    Returns
    -------
    str or None
        A sentence saying what is wrong and what to do.
    """
    raw = bytes(record)
    if len(raw) != PLACE_NBYTES or raw[:4] != PLACE_MAGIC:
        return (
            "has no place record, which its format version (1.2 or later) requires: it was "
            "written by another tool or copied from an older store; restore it from the "
            "source, or rewrite the store"
        )
    if _crc(raw[:8]) != raw[8:]:
        return "has a damaged place record; restore it from the source, or rewrite the store"
    if raw != place_record(key, data_type):
        return (
            f"was written for another place (another chunk or array) or another data type "
            f"than the {data_type} the array's zarr.json declares: a copy, sync or repair "
            "moved it here, or the metadata was edited; restore the file or the metadata "
            "from the source, or rewrite the store"
        )
    return None
