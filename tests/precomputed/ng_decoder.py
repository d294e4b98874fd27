"""A small decoder of Neuroglancer's precomputed annotation files, written from the format's
documentation (``neuroglancer_annotations_v1``: single and multiple annotation encodings),
independent of the library's encoder."""

from __future__ import annotations

import gzip
import struct
from typing import Any

SIZES = {"float32": ("<f", 4), "uint32": ("<I", 4), "int32": ("<i", 4), "uint16": ("<H", 2)}
SIZES |= {"int16": ("<h", 2), "uint8": ("<B", 1), "int8": ("<b", 1)}


def decode_one(data: bytes, at: int, info: dict[str, Any]) -> tuple[tuple[Any, ...], int]:
    """One annotation (geometry, then the properties in the order 4-, 2-, 1-byte, then
    padding to 4 bytes) from ``data`` at ``at``; the values and the next offset."""
    rank = len(info["dimensions"])
    n = rank * (2 if info["annotation_type"] == "line" else 1)
    values: list[Any] = list(struct.unpack_from(f"<{n}f", data, at))
    at += 4 * n
    props = info["properties"]
    for width in (4, 2, 1):
        for prop in props:
            kind = prop["type"]
            if kind in ("rgb", "rgba"):
                size = 3 if kind == "rgb" else 4
                if width == 1:
                    values.append(tuple(data[at : at + size]))
                    at += size
                continue
            fmt, size = SIZES[kind]
            if size == width:
                values.append(struct.unpack_from(fmt, data, at)[0])
                at += size
    at += -at % 4
    return tuple(values), at


def decode_list(data: bytes, info: dict[str, Any]) -> list[tuple[int, tuple[Any, ...]]]:
    (count,) = struct.unpack_from("<Q", data, 0)
    at, rows = 8, []
    for _ in range(count):
        row, at = decode_one(data, at, info)
        rows.append(row)
    ids = struct.unpack_from(f"<{count}Q", data, at)
    assert at + 8 * count == len(data)
    return list(zip(ids, rows, strict=True))


def decode_by_id(data: bytes, info: dict[str, Any]) -> tuple[tuple[Any, ...], list[list[int]]]:
    row, at = decode_one(data, 0, info)
    related = []
    for _ in info["relationships"]:
        (n,) = struct.unpack_from("<I", data, at)
        related.append(list(struct.unpack_from(f"<{n}Q", data, at + 4)))
        at += 4 + 8 * n
    assert at == len(data)
    return row, related


def sharded_lookup(read: Any, sharding: dict[str, Any], chunk_id: int) -> bytes | None:
    """The data of ``chunk_id`` in a sharded index (``neuroglancer_uint64_sharded_v1``, raw
    data, raw or gzip minishard indexes), from the shard files ``read(name)`` returns; None
    when it is absent.

    Follows the format's documentation step by step: hash, shard and minishard numbers, the
    shard index entry, the delta-decoded minishard index, the data byte range."""
    assert sharding["@type"] == "neuroglancer_uint64_sharded_v1"
    assert sharding["hash"] == "identity"
    gzipped = sharding.get("minishard_index_encoding", "raw") == "gzip"
    assert sharding.get("data_encoding", "raw") == "raw"
    hashed = chunk_id >> sharding["preshift_bits"]
    minishard = hashed & ((1 << sharding["minishard_bits"]) - 1)
    shard = (hashed >> sharding["minishard_bits"]) & ((1 << sharding["shard_bits"]) - 1)
    digits = -(-sharding["shard_bits"] // 4)
    data = read(format(shard, "x").rjust(digits, "0") + ".shard")
    index_end = (1 << sharding["minishard_bits"]) * 16
    start, end = struct.unpack_from("<QQ", data, 16 * minishard)
    index = data[index_end + start : index_end + end]
    index = gzip.decompress(index) if gzipped else index
    n = len(index) // 24
    table = struct.unpack_from(f"<{3 * n}Q", index)
    ident, offset = 0, index_end
    for i in range(n):
        ident += table[i]
        offset += table[n + i]
        size = table[2 * n + i]
        if ident == chunk_id:
            return bytes(data[offset : offset + size])
        offset += size
    return None
