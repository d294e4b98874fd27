"""TEST-ONLY builders of stores with levels above 0, until the real level writers land.

:func:`add_point_levels` writes coarse point levels with the low-level writer
(``write_point_level``): level N keeps, in each coarse bin of ``base_bin_shape * ratio``,
the first ``per_bin`` vertices of level N-1 in its storage order (nested, deterministic; not
the spec's ``"sample"`` hashing). :func:`add_copy_level` adds a byte copy of level 0 as a
level with ``bin_ratio`` 1 (a valid trivial level of any kind). Both then list the level in
the root ``multiscales[0].datasets`` and write its group metadata with a ``coarsening`` key.
The lead will switch the tests to the library's level builder.
"""

from __future__ import annotations

import dataclasses
import json
from collections.abc import Sequence
from typing import Any

import numpy as np

import zarr_vectors as zv
from zarr_vectors.format.grid import bins_per_chunk
from zarr_vectors.format.metadata import LevelMetadata
from zarr_vectors.format.place import place_record
from zarr_vectors.store.io import StoreIO, resolve_store
from zarr_vectors.write import WriteOptions, write_point_level

_OPTIONS = WriteOptions().with_kind_defaults("point_cloud")


def _io(store: Any) -> StoreIO:
    return StoreIO(resolve_store(store, mode="w"))


def _write_json(io: StoreIO, key: str, doc: Any) -> None:
    io.set(key, json.dumps(doc).encode())


def _declare(io: StoreIO, level: int, attrs: dict[str, Any]) -> None:
    """Write ``level``'s group documents and list it in the root ``multiscales`` block."""
    _write_json(
        io, f"{level}/zarr.json", {"zarr_format": 3, "node_type": "group", "attributes": attrs}
    )
    _write_json(io, f"{level}/.zattrs", attrs)
    root = io.read_json("zarr.json")
    datasets = root["attributes"]["multiscales"][0]["datasets"]
    entry = dict(datasets[0], path=str(level), level=level, bin_ratio=attrs["bin_ratio"])
    entry["object_sparsity"] = attrs["object_sparsity"]
    datasets[:] = [d for d in datasets if d["level"] != level] + [entry]
    _write_json(io, "zarr.json", root)
    _write_json(io, ".zattrs", root["attributes"])


def _coarse_subset(positions: np.ndarray, bin_shape: np.ndarray, per_bin: int) -> np.ndarray:
    """Rows kept: per coarse bin, the first ``per_bin`` rows (in row order)."""
    if positions.shape[0] == 0:
        return np.empty(0, dtype=np.int64)
    cells = np.floor(positions.astype(np.float64) / bin_shape).astype(np.int64)
    _, first, inverse = np.unique(cells, axis=0, return_index=True, return_inverse=True)
    inverse = inverse.reshape(-1)
    order = np.argsort(inverse, kind="stable")
    rank = np.empty_like(order)
    starts = np.searchsorted(inverse[order], np.arange(first.shape[0]))
    rank[order] = np.arange(order.shape[0]) - starts[inverse[order]]
    return np.flatnonzero(rank < per_bin)


def add_point_levels(store: Any, ratios: Sequence[int], per_bin: Sequence[int]) -> None:
    """Add point levels 1, 2, ... with bin ratio ``ratios[i]`` (all axes) and cap
    ``per_bin[i]``; each level a nested subset of the one below (see the module docstring).
    """
    opened = zv.open(store)
    grid = opened._reader.grid
    previous = opened.read()
    io = _io(store)
    for level, (ratio, cap) in enumerate(zip(ratios, per_bin, strict=True), start=1):
        bin_shape = grid.bin_shape * ratio
        coarse = dataclasses.replace(
            grid, bin_shape=bin_shape, bins=bins_per_chunk(grid.chunk_shape, bin_shape)
        )
        keep = _coarse_subset(previous.positions, bin_shape, cap)
        positions = previous.positions[keep]
        attributes = {k: v[keep] for k, v in previous.attributes.items()}
        lo = positions.min(axis=0).astype(np.float64) if keep.size else np.zeros(grid.ndim)
        hi = positions.max(axis=0).astype(np.float64) if keep.size else np.zeros(grid.ndim)
        stats = write_point_level(io, level, (positions, attributes), coarse, _OPTIONS, (lo, hi))
        meta = LevelMetadata(
            level=level,
            bin_ratio=(ratio,) * grid.ndim,
            bin_shape=tuple(float(b) for b in bin_shape),
            vertex_count=stats.vertex_count,
            chunk_count=stats.chunk_count,
        )
        _declare(io, level, meta.to_json() | {"coarsening": {"method": "sample", "per_bin": cap}})
        previous = zv.open(store).read(level=level)


def _moved(io: StoreIO, key: str, new_key: str, value: bytes) -> bytes:
    """``value`` of a shard at ``key`` with its place record (format 1.2) made ``new_key``'s."""
    if "/c/" not in key:
        return value
    meta = io.read_json(f"{key.split('/c/')[0]}/zarr.json")
    old = place_record(key, meta["data_type"])
    at = value.rfind(old)
    if at < 0:
        return value
    new = place_record(new_key, meta["data_type"])
    return value[:at] + new + value[at + len(old) :]


def add_copy_level(store: Any, level: int = 1) -> None:
    """Add a copy of level 0 as ``level`` (``bin_ratio`` 1: a trivial level): the same bytes
    but for the place records, which bind each shard to its key."""
    io = _io(store)
    keys = [k for k in io.list_prefix("0/") if k not in ("0/zarr.json", "0/.zattrs")]
    values = io.get_many([(k, None) for k in keys])
    io.set_many(
        [
            (f"{level}/{k[2:]}", _moved(io, k, f"{level}/{k[2:]}", v))
            for k, v in zip(keys, values, strict=True)
            if v is not None
        ]
    )
    attrs = io.read_json("0/zarr.json")["attributes"]
    _declare(io, level, attrs | {"level": level, "coarsening": {"method": "copy"}})
