"""TEST-ONLY builder of object stores with a level above 0, until the object writers build
levels (point clouds get theirs from ``zv.write_points(levels=...)``).

:func:`add_copy_level` adds a byte copy of level 0 as a level with ``bin_ratio`` 1 (a valid
trivial level of any kind), lists it in the root ``multiscales[0].datasets``, writes its
group metadata with a ``coarsening`` key and declares format 1.3 (spec §3.3: a store with
levels). The result passes ``zv.validate(level=5)``.
"""

from __future__ import annotations

import json
from typing import Any

from zarr_vectors.format.place import place_record
from zarr_vectors.store.io import StoreIO, resolve_store


def _io(store: Any) -> StoreIO:
    return StoreIO(resolve_store(store, mode="w"))


def _write_json(io: StoreIO, key: str, doc: Any) -> None:
    io.set(key, json.dumps(doc).encode())


def _declare(io: StoreIO, level: int, attrs: dict[str, Any]) -> None:
    """Write ``level``'s group documents and list it in the root ``multiscales`` block."""
    _write_json(
        io, f"{level}/zarr.json", {"zarr_format": 3, "node_type": "group", "attributes": attrs}
    )
    mirrored = io.get(".zattrs") is not None  # formats 1.0 to 1.2 (spec §2.3)
    if mirrored:
        _write_json(io, f"{level}/.zattrs", attrs)
    root = io.read_json("zarr.json")
    datasets = root["attributes"]["multiscales"][0]["datasets"]
    entry = dict(datasets[0], path=str(level), level=level, bin_ratio=attrs["bin_ratio"])
    entry["object_sparsity"] = attrs["object_sparsity"]
    datasets[:] = [d for d in datasets if d["level"] != level] + [entry]
    if root["attributes"]["zarr_vectors_version"] in ("1.0", "1.1", "1.2"):
        root["attributes"]["zarr_vectors_version"] = "1.3"  # a store with levels (spec §3.3)
    _write_json(io, "zarr.json", root)
    if mirrored:
        _write_json(io, ".zattrs", root["attributes"])


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
    records = [k for k in keys if k.startswith("0/fragment_records/")]
    keys = [k for k in keys if k not in records]
    values = io.get_many([(k, None) for k in keys])
    io.set_many(
        [
            (f"{level}/{k[2:]}", _moved(io, k, f"{level}/{k[2:]}", v))
            for k, v in zip(keys, values, strict=True)
            if v is not None
        ]
    )
    if records:
        _blob_arrays_of_records(io, level)
    attrs = io.read_json("0/zarr.json")["attributes"]
    _declare(io, level, attrs | {"level": level, "coarsening": {"method": "copy"}})


def _blob_arrays_of_records(io: StoreIO, level: int) -> None:
    """Level ``level`` of a copy of a 1.6 object store: ``vertex_fragments``,
    ``link_fragments`` and ``fragment_attributes/object_id`` rebuilt from level 0's
    fragment records (spec §6.9), since a coarse level has those arrays, not records."""
    import numpy as np

    from zarr_vectors.format.fragment_counts import encode_counts_ragged
    from zarr_vectors.format.metadata import RootMetadata
    from zarr_vectors.read.reader import LevelReader
    from zarr_vectors.store.arrays import group_metadata
    from zarr_vectors.store.shards import RowLayout
    from zarr_vectors.write import WriteOptions, blob_layout, round_up
    from zarr_vectors.write._level_writer import write_chunk_array

    root = RootMetadata.from_json(io.read_json("zarr.json")["attributes"])
    reader = LevelReader(io, root, 0)
    coords, _ = reader.occupied_chunks(None, None)
    options = WriteOptions().with_kind_defaults(root.geometry_type)
    records = RowLayout.from_array_metadata(
        reader.array_metadata("0/fragment_records"),
        reader.grid.ndim,
        "0/fragment_records",
        placed=True,
    )
    assert records is not None
    shards = records.shard_chunks
    base = str(level)
    for name in ("vertex_fragments", "link_fragments"):
        counts = [c for _, c in reader.blob_ranges(name, coords)]
        bounds = np.concatenate([[0], np.cumsum([c.shape[0] for c in counts])])
        blobs = encode_counts_ragged(np.concatenate(counts), bounds)
        layout = blob_layout(max(b.shape[0] for b in blobs), None, options.blob_blosc())
        tag = {"zv_array": name, "encoding": "fragment_index_v1"}
        write_chunk_array(
            io, f"{base}/{name}", reader.grid, coords, blobs, layout, tag, shard_chunks=shards
        )
    owners = reader.fragment_owners(coords)
    r = options.block_rows
    longest = round_up(max(o.shape[0] for o in owners), r)
    layout = RowLayout(np.dtype(np.int64), (), r, longest, options.blosc("fragment_attributes"))
    if io.get(f"{base}/fragment_attributes/zarr.json") is None:
        io.set(f"{base}/fragment_attributes/zarr.json", group_metadata({}))
    write_chunk_array(
        io,
        f"{base}/fragment_attributes/object_id",
        reader.grid,
        coords,
        owners,
        layout,
        {"zv_array": "fragment_attribute", "name": "object_id"},
        shard_chunks=shards,
    )
