"""Array rewrites that raise a store of format 1.0 or 1.1 to 1.2 and later (spec §9.0.2,
§9.8.1): place records added to every shard of a per-chunk array, and global arrays
written again with every chunk stored, their chunk table and checksums.

:func:`zarr_vectors.update.upgrade` decides what a store needs and commits it; this module
only moves bytes between a source and a target store.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

import numpy as np

from zarr_vectors.errors import FormatError
from zarr_vectors.format.place import CHUNK_TABLE_KEY
from zarr_vectors.store.arrays import write_global_array
from zarr_vectors.store.io import StoreIO
from zarr_vectors.store.shards import RowLayout

__all__ = ["add_place_records", "rewrite_global_array"]

_BATCH = 256
"""Shards read and written per batch (memory holds one batch of shards)."""


def add_place_records(
    source: StoreIO, target: StoreIO, path: str, meta: dict[str, Any], ndim: int
) -> int:
    """Copy every shard of the per-chunk array at ``path`` from ``source`` to ``target``
    with its place record added (spec §9.0.2); return the number of shards.

    Parameters
    ----------
    source, target
        The store read and the store written (the same one for an in-place change).
    path
        The array's path, e.g. ``"0/vertices"``.
    meta
        Its parsed ``zarr.json`` (a store of format 1.0 or 1.1: shards without records).
    ndim
        ``D``, the store's spatial dimensions.

    Raises
    ------
    FormatError
        When the array's shards use a codec pipeline this library does not write.
    CorruptChunkError
        When a shard's index fails its checksum (nothing of that batch is written).
    """
    layout = RowLayout.from_array_metadata(meta, ndim, path, placed=False)
    if layout is None:
        raise FormatError(
            f"{path}: its shards use codecs this library does not write, so their place "
            "records cannot be added; rewrite the store with its writer instead"
        )
    keys = source.list_prefix(f"{path}/c/")
    for start in range(0, len(keys), _BATCH):
        batch = keys[start : start + _BATCH]
        shards = source.get_many([(key, None) for key in batch])
        target.set_many(
            [
                (key, layout.placed_shard(shard, key))
                for key, shard in zip(batch, shards, strict=True)
                if shard is not None
            ]
        )
    return len(keys)


def rewrite_global_array(
    target: StoreIO, path: str, meta: dict[str, Any], data: np.ndarray
) -> None:
    """Write the global array at ``path`` again, as format 1.2 and later store it (spec
    §9.8.1): its decoded ``data``, chunk shape, fill value, attributes and Blosc settings
    as ``meta`` (its old ``zarr.json``) gives them, every chunk stored and checksummed, and
    its chunk table. Chunks of the old grid are deleted first.
    """
    configuration = meta["chunk_grid"]["configuration"]
    blosc = _blosc_settings(meta["codecs"])
    attributes = {k: v for k, v in (meta.get("attributes") or {}).items() if k != CHUNK_TABLE_KEY}
    target.delete_many(target.list_prefix(f"{path}/c/"))
    write_global_array(
        target,
        path,
        data,
        tuple(int(c) for c in configuration["chunk_shape"]),
        meta.get("fill_value", 0),
        attributes,
        compressed=blosc is not None,
        blosc=blosc,
    )


def _blosc_settings(codecs: Sequence[dict[str, Any]]) -> dict[str, Any] | None:
    """``{"cname", "clevel", "shuffle"}`` of the Blosc codec in ``codecs``, or None."""
    for codec in codecs:
        if isinstance(codec, dict) and codec.get("name") == "blosc":
            conf = codec["configuration"]
            return {key: conf[key] for key in ("cname", "clevel", "shuffle")}
    return None
