"""Level and root metadata: a level group's ``zarr.json``, the dimension names of new arrays,
and the root commit written last (spec §2, §3.1, §4).
"""

from __future__ import annotations

import datetime as _dt
from typing import Any

from zarr_vectors.format.commits import COMMIT_KEY, next_commit
from zarr_vectors.format.metadata import LevelMetadata, RootMetadata
from zarr_vectors.format.version import is_plain_zarr
from zarr_vectors.store.arrays import group_metadata
from zarr_vectors.store.dimensions import make_plain_zarr
from zarr_vectors.store.io import StoreIO, json_bytes

__all__ = ["commit_root", "name_new_arrays", "write_level_metadata"]


def write_level_metadata(io: StoreIO, level: LevelMetadata) -> None:
    """Write a level group's ``zarr.json`` (spec §4); a store of format 1.2 or older gets
    its ``.zattrs`` mirror at the commit (:func:`commit_root`)."""
    io.set(f"{level.level}/zarr.json", group_metadata(level.to_json()))


def name_new_arrays(io: StoreIO, root: RootMetadata) -> None:
    """Have ``io`` name the dimensions of every array it writes from now on when ``root``
    is of format 1.3 (spec §9.0.3), so a new store writes each ``zarr.json`` once.

    Examples
    --------
    >>> from zarr_vectors.store.io import scratch_store
    >>> root = RootMetadata(
    ...     geometry_type="point_cloud",
    ...     chunk_shape=(1.0,),
    ...     base_bin_shape=(1.0,),
    ...     chunk_grid_origin=(0,),
    ...     axis_names=("x",),
    ...     axis_units=("unknown",),
    ...     bounding_box=None,
    ...     version="1.3",
    ... )
    >>> io = StoreIO(scratch_store())
    >>> name_new_arrays(io, root)
    >>> io.set("0/vertex_counts/zarr.json", b'{"node_type": "array", "shape": [2]}')
    >>> io.read_json("0/vertex_counts/zarr.json")["dimension_names"]
    ['chunk.x']
    """
    if is_plain_zarr(root.version):
        io.name_dimensions(root.axis_names)


def commit_root(
    io: StoreIO,
    root: RootMetadata,
    level: LevelMetadata,
    summary: dict[str, Any],
    *,
    level_written: bool = False,
    named: bool = False,
) -> None:
    """Write level-0 metadata, then the root ``zarr.json`` last.

    The root ``zarr.json`` carries ``zarr_vectors_version``; until it is written the store
    does not open as a Zarr Vectors store (spec §2, commit order). The root metadata records
    a new ``commit`` (spec §3.1): the serial after the one in ``root.extra`` (an append's
    base), and a fresh id. ``level_written``: the level metadata is already written (a
    zip store takes each key once). A store of format 1.3 is made plain Zarr v3 first
    (every array named, no mirror documents, spec §2.3) unless ``named``: every array of
    the store was written through ``io`` after :func:`name_new_arrays` into an empty
    destination, so there is nothing to name or delete (the walk reads every array's
    ``zarr.json`` back); one of an older format (an append
    keeps it) gets the ``.zattrs`` mirrors of level 0 and the root, and ``metadata.json``
    (``summary`` and a timestamp, spec §2.5).
    """
    if not level_written:
        write_level_metadata(io, level)
    root_doc = {**root.to_json(), COMMIT_KEY: next_commit(root.extra.get(COMMIT_KEY))}
    if is_plain_zarr(root.version):
        if not named:
            levels = [0, *(entry.level for entry in root.levels)]
            make_plain_zarr(io, levels, root.axis_names)
    else:
        stamp = _dt.datetime.now(_dt.UTC).isoformat(timespec="seconds")
        io.set_many(
            [
                (f"{level.level}/.zattrs", json_bytes(level.to_json())),
                ("metadata.json", json_bytes({**summary, "creation_timestamp": stamp})),
                (".zattrs", json_bytes(root_doc)),
            ]
        )
    io.set("zarr.json", group_metadata(root_doc))
