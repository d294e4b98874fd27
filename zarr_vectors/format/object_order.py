"""The object-ordered copy of a point cloud with object ids (spec §9.15, format 1.7): its
arrays, their tags and the row layout every writer computes alike.

The copy holds level 0's points again, sorted by object id (within an object in storage
order), so that a read of a few objects scattered over every chunk decodes a few small row
blocks instead of every chunk. Its per-row arrays are one-dimensional sequences of rows (not
per spatial chunk), stored sharded: ``S`` rows per shard, inner row blocks of ``R`` rows.
"""

from __future__ import annotations

from typing import Any, Final

from zarr_vectors.format.jsonutil import as_int_list
from zarr_vectors.format.layout import (
    inner_chunk_shape,
    inner_codecs,
    is_index_chain,
    regular_chunk_shape,
)

__all__ = [
    "ORDER_ROWS_PER_BLOCK",
    "ORDER_SHARD_BYTES",
    "ORDER_TAGS",
    "order_shard_rows",
    "sequence_problems",
]

ORDER_ROWS_PER_BLOCK: Final = 128
"""Library default ``R`` of the copy's row arrays: an object of ~100 points lies in one or two
blocks, so a read of 100 objects decodes ~150 blocks of 128 rows (measured against 64, 256
and 1024 in ``benchmarks/results/object_order.md``)."""

ORDER_SHARD_BYTES: Final = 1 << 24
"""A shard of the copy holds at most this many decoded bytes of its widest row array: few
storage objects, so a read of 100 objects scattered over 10^7 points opens ~40 files instead
of ~300 with 1 MiB shards (warm 6.4 against 8.8 ms CPU, ``benchmarks/results/object_order.md``);
its index (16 bytes per block) is read once per handle."""

ORDER_TAGS: Final = {
    "group": "object_order",
    "ids": "object_order_ids",
    "offsets": "object_order_offsets",
    "rows": "object_order_rows",
    "vertices": "object_order_vertices",
    "attributes": "object_order_attribute",
}
"""The ``zv_array`` tags of the copy's nodes (spec §9.15)."""


def order_shard_rows(n_rows: int, rows_per_block: int, widest_row: int) -> int:
    """``S``, the rows of one shard of the copy's row arrays (spec §9.15).

    ``S`` is ``R`` doubled while a shard of the widest row array (``widest_row`` bytes a row)
    stays within :data:`ORDER_SHARD_BYTES`, and never more than the rows rounded up to whole
    blocks: a function of the stored rows alone, so every write path computes it alike.

    Examples
    --------
    >>> order_shard_rows(10**7, 128, 12)   # 3-D float32 points: 12 MiB shards
    1048576
    >>> order_shard_rows(300, 128, 12)     # a small store: one shard of 3 blocks
    384
    >>> order_shard_rows(0, 128, 12)
    128
    """
    rows = rows_per_block
    while 2 * rows * max(widest_row, 1) <= ORDER_SHARD_BYTES:
        rows *= 2
    whole = rows_per_block * max(1, -(-n_rows // rows_per_block))
    return min(rows, whole)


def sequence_problems(doc: dict[str, Any]) -> list[str]:
    """What is wrong with the sharded layout of a row array of the copy (spec §9.15): shape
    ``(n, *row_shape)``, regular shards of ``S`` rows, inner blocks of ``R`` rows dividing
    ``S``, the shard index ``[bytes little, crc32c]`` at the end, inner codecs ``[bytes,
    crc32c]`` or ``[bytes, blosc, crc32c]``.

    Examples
    --------
    >>> doc = {"shape": [300, 3], "chunk_grid": {"name": "regular",
    ...        "configuration": {"chunk_shape": [384, 3]}}, "codecs": [{"name": "sharding_indexed",
    ...        "configuration": {"chunk_shape": [128, 3], "index_location": "end",
    ...        "index_codecs": [{"name": "bytes", "configuration": {"endian": "little"}},
    ...        {"name": "crc32c"}], "codecs": [{"name": "bytes"}, {"name": "crc32c"}]}}]}
    >>> sequence_problems(doc)
    []
    >>> doc["chunk_grid"]["configuration"]["chunk_shape"] = [200, 3]
    >>> sequence_problems(doc)
    ['inner chunk_shape [128, 3] must be [R, *row_shape] with R dividing the shard rows 200']
    """
    shape = as_int_list(doc.get("shape"))
    shard = regular_chunk_shape(doc)
    inner = inner_chunk_shape(doc)
    if shape is None or len(shape) < 1 or shape[0] < 0:
        return ["shape must be (n, *row_shape)"]
    if shard is None or shard[1:] != shape[1:] or shard[0] < 1:
        return [f"chunk_grid must be regular with chunk_shape [S, *{shape[1:]}]"]
    problems = []
    if inner is None or inner[1:] != shape[1:] or inner[0] < 1 or shard[0] % inner[0]:
        problems.append(
            f"inner chunk_shape {inner} must be [R, *row_shape] with R dividing the shard "
            f"rows {shard[0]}"
        )
    conf = doc["codecs"][0].get("configuration", {}) if inner is not None else {}
    if not is_index_chain(conf.get("index_codecs")) or conf.get("index_location") != "end":
        problems.append("the shard index must be [bytes little, crc32c] at the end")
    names = [c.get("name") if isinstance(c, dict) else None for c in inner_codecs(doc) or []]
    if names not in (["bytes", "crc32c"], ["bytes", "blosc", "crc32c"]):
        problems.append("inner codecs must be [bytes, crc32c] or [bytes, blosc, crc32c]")
    return problems
