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
