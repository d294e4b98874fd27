"""Neuroglancer's sharded format (``neuroglancer_uint64_sharded_v1``) for an index of ids.

A sharded index puts the files of many uint64 ids into a few *shard* files. With the
``"identity"`` hash, an id's bits are, low to high: ``preshift_bits`` (ids that share the
rest go to the same minishard), ``minishard_bits`` (the minishard) and ``shard_bits`` (the
shard, file ``<shard in lowercase hex, zero padded to ceil(shard_bits / 4) digits>.shard``).
When the ids are ``0 … total - 1`` (:func:`sharding_for` chooses the bits from ``total``),
shard ``s`` holds exactly the ids ``[s·2^(p+m), (s+1)·2^(p+m))``: a contiguous range.

A shard file is the *shard index* (per minishard a uint64le ``[start, end)`` of its
minishard index), then every id's data (minishard by minishard, ids ascending), then the
minishard indexes: each a C-order ``[3, n]`` uint64le array of the ids (delta encoded), the
data offsets (delta encoded from the end of the previous id's data) and the data sizes.
Offsets count from the end of the shard index. The minishard indexes are gzip compressed
(consecutive ids of one size: 24 bytes an id shrink to a fraction of a byte); the data are
raw.
"""

from __future__ import annotations

import gzip
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

import numpy as np

__all__ = [
    "MINISHARD_BITS",
    "PER_SHARD_BITS",
    "PRESHIFT_BITS",
    "UNSHARDED_MAX",
    "ShardingSpec",
    "encode_shard",
    "sharding_for",
    "sharding_for_objects",
]

UNSHARDED_MAX = 4096
"""Annotation sources of more annotations write their by-id index sharded."""
PER_SHARD_BITS = 16
"""A shard holds at most ``2^16`` ids (65,536 annotations, about 1-2 MB of points)."""
PRESHIFT_BITS = 10
"""A minishard holds runs of ``2^10`` consecutive ids: its index (24 KB) is one fetch."""
MINISHARD_BITS = 6
"""Ids keyed by object (:func:`sharding_for_objects`): at most 64 minishards a shard."""


@dataclass(frozen=True, slots=True)
class ShardingSpec:
    """The bits of an identity-hashed sharded index (see the module).

    Examples
    --------
    >>> from zarr_vectors.precomputed.sharding import ShardingSpec
    >>> spec = ShardingSpec(preshift_bits=2, minishard_bits=1, shard_bits=5)
    >>> spec.shard_name(10), spec.id_range(10)
    ('0a.shard', (80, 88))
    >>> spec.info()["@type"]
    'neuroglancer_uint64_sharded_v1'
    """

    preshift_bits: int
    minishard_bits: int
    shard_bits: int

    @property
    def per_shard(self) -> int:
        """How many ids a shard can hold."""
        return 1 << (self.preshift_bits + self.minishard_bits)

    def info(self) -> dict[str, Any]:
        """The ``sharding`` member of an ``info`` document."""
        return {
            "@type": "neuroglancer_uint64_sharded_v1",
            "hash": "identity",
            "preshift_bits": self.preshift_bits,
            "minishard_bits": self.minishard_bits,
            "shard_bits": self.shard_bits,
            "minishard_index_encoding": "gzip",
            "data_encoding": "raw",
        }

    def shard_name(self, shard: int) -> str:
        """The file name of shard ``shard``."""
        return format(shard, "x").zfill(-(-self.shard_bits // 4)) + ".shard"

    def shard_count(self, total: int) -> int:
        """How many shards hold some of the ids ``0 … total - 1``."""
        return -(-total // self.per_shard)

    def id_range(self, shard: int) -> tuple[int, int]:
        """The ids ``[first, stop)`` shard ``shard`` holds."""
        return shard * self.per_shard, (shard + 1) * self.per_shard


def sharding_for(total: int) -> ShardingSpec:
    """The bits for the ids ``0 … total - 1``: shards of at most ``2^PER_SHARD_BITS`` ids
    (the shards past the last id, up to ``2^shard_bits``, hold none).

    Examples
    --------
    >>> from zarr_vectors.precomputed.sharding import sharding_for
    >>> sharding_for(1_000_000)
    ShardingSpec(preshift_bits=10, minishard_bits=6, shard_bits=4)
    >>> sharding_for(100)
    ShardingSpec(preshift_bits=7, minishard_bits=0, shard_bits=0)
    """
    bits = max(total - 1, 0).bit_length()
    inside = min(PER_SHARD_BITS, bits)
    preshift = min(PRESHIFT_BITS, inside)
    return ShardingSpec(preshift, inside - preshift, bits - inside)


def sharding_for_objects(count: int, items: int, shift: int = 32) -> ShardingSpec:
    """The bits for ids ``(row << shift) | j`` (item ``j`` of row ``0 … count - 1``; about
    ``items`` in all): a shard holds ``2^q`` whole rows, ``q`` the largest whose rows hold at
    most ``2^PER_SHARD_BITS`` items on average (rows may hold less than one: object ids
    spread over a large range).

    Examples
    --------
    >>> from zarr_vectors.precomputed.sharding import sharding_for_objects
    >>> spec = sharding_for_objects(1000, 200_000)  # 200 lines an object: 256 a shard
    >>> spec, spec.id_range(1) == (256 << 32, 512 << 32)
    (ShardingSpec(preshift_bits=34, minishard_bits=6, shard_bits=2), True)
    >>> sharding_for_objects(1 << 20, 100_000, shift=0).per_shard  # ids 0 ... 2^20 - 1
    524288
    """
    row_bits = max(count - 1, 0).bit_length()
    per_row = max(items, 1) / max(count, 1)  # below 1 for sparse rows (object ids)
    q = min(row_bits, max(int(np.floor(np.log2((1 << PER_SHARD_BITS) / per_row))), 0))
    minishard = min(q, MINISHARD_BITS)
    return ShardingSpec(shift + q - minishard, minishard, row_bits - q)


def encode_shard(spec: ShardingSpec, ids: np.ndarray, data: np.ndarray | Sequence[bytes]) -> bytes:
    """One shard file of the ids ``ids`` (of that shard) and their data.

    Parameters
    ----------
    spec
        The sharding.
    ids
        The ids, ascending.
    data
        Each id's bytes: the rows of a ``(len(ids), size)`` uint8 array, or one ``bytes``
        each.

    Examples
    --------
    >>> import numpy as np
    >>> from zarr_vectors.precomputed.sharding import ShardingSpec, encode_shard
    >>> spec = ShardingSpec(preshift_bits=1, minishard_bits=1, shard_bits=0)
    >>> data = np.arange(8, dtype=np.uint8).reshape(4, 2)
    >>> shard = encode_shard(spec, np.arange(4), data)
    >>> shard[32:40]  # after the shard index (2 x 16 bytes): the data
    b'\\x00\\x01\\x02\\x03\\x04\\x05\\x06\\x07'
    >>> encode_shard(spec, np.arange(4), [b"a", b"", b"bc", b"d"])[32:36]
    b'abcd'
    """
    ids = np.asarray(ids, dtype=np.uint64)
    minishard = (ids >> np.uint64(spec.preshift_bits)) & np.uint64((1 << spec.minishard_bits) - 1)
    order = np.argsort(minishard, kind="stable")
    ids, minishard = ids[order], minishard[order]
    if isinstance(data, np.ndarray):
        rows = np.ascontiguousarray(data, dtype=np.uint8)
        sizes = np.full(ids.size, rows.shape[1] if ids.size else 0, dtype=np.int64)
        blob = rows[order].tobytes()
    else:
        sizes = np.array([len(data[i]) for i in order.tolist()], dtype=np.int64)
        blob = b"".join(data[i] for i in order.tolist())
    starts = np.cumsum(sizes) - sizes
    count = 1 << spec.minishard_bits
    bounds = np.searchsorted(minishard, np.arange(count + 1, dtype=np.uint64))
    indexes, index_bounds = [], np.zeros((count, 2), dtype="<u8")
    at = len(blob)  # minishard indexes follow the data
    for j in range(count):
        lo, hi = int(bounds[j]), int(bounds[j + 1])
        if hi > lo:
            table = np.zeros((3, hi - lo), dtype="<u8")
            table[0] = np.diff(ids[lo:hi], prepend=np.uint64(0))
            table[1, 0] = starts[lo]  # the data of a minishard is contiguous: later deltas 0
            table[2] = sizes[lo:hi]
            index = gzip.compress(table.tobytes(), compresslevel=6, mtime=0)
            indexes.append(index)
            index_bounds[j] = at, at + len(index)
            at += len(index)
        else:
            index_bounds[j] = at, at
    return index_bounds.tobytes() + blob + b"".join(indexes)
