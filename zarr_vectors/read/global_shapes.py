"""Shapes of the global arrays of an object level, checked before they are read.

Issue 35, item 3: every size read from metadata is checked against the other metadata and
the bytes stored before anything is allocated. An ``object_attributes`` array one row short
raised numpy's IndexError, ``cross_chunk_links`` one row short lost a link without an
error, and a length of 2**40 exhausted memory.
"""

from __future__ import annotations

from typing import Any

from zarr_vectors.errors import MetadataError
from zarr_vectors.format.names import (
    CROSS_CHUNK_LINK_ATTRIBUTES,
    CROSS_CHUNK_LINKS,
    GROUPINGS,
    GROUPINGS_ATTRIBUTES,
    OBJECT_ATTRIBUTES,
    OBJECT_INDEX,
)
from zarr_vectors.read.reader import LevelReader
from zarr_vectors.store.arrays import ALWAYS_STORED, check_stored_chunks

__all__ = ["check_global_shapes"]


def check_global_shapes(reader: LevelReader, paths: list[str], n_objects: int) -> None:
    """Raise MetadataError unless every global array of ``paths`` has the shape the level
    metadata implies (and, when large, the chunks to hold it).

    Parameters
    ----------
    reader
        The level.
    paths
        Global arrays relative to the level (``object_attributes/w``, ``groupings``...).
    n_objects
        The level's ``object_count``, already checked against ``object_index/offsets``.
    """
    for path in paths:
        full = f"{reader.base}/{path}"
        meta = reader.array_metadata(full)
        problem = _shape_problem(reader, path, meta["shape"], n_objects)
        if problem is not None:
            raise MetadataError(
                f"{full}/zarr.json has shape {meta['shape']!r}, but {problem}: the array's "
                "metadata was edited or damaged; run zarr-vectors validate, and restore or "
                "rewrite the store"
            )
        if path in ALWAYS_STORED:
            check_stored_chunks(reader.io, full, meta)


def _shape_problem(reader: LevelReader, path: str, shape: list[int], n_objects: int) -> str | None:
    """Why ``shape`` is not the shape of global array ``path``, or None."""
    family = path.rsplit("/", 1)[0] if "/" in path else ""
    if path == f"{OBJECT_INDEX}/data":
        return None if len(shape) == 1 else "object_index/data is one-dimensional"
    if path == f"{OBJECT_INDEX}/offsets":
        return None if shape == [n_objects] else f"the level has {n_objects} objects"
    if family == OBJECT_ATTRIBUTES:
        return _rows_problem(shape, n_objects, f"the level has {n_objects} objects")
    if path == CROSS_CHUNK_LINKS:
        links = _links(reader)
        return None if shape == [links, 2] else f"num_links is {links} (rows of 2 ids)"
    if family == CROSS_CHUNK_LINK_ATTRIBUTES:
        return _rows_problem(shape, _links(reader), "one row per cross-chunk link is needed")
    if path == GROUPINGS:
        groups = _attribute(reader, GROUPINGS, "num_groups")
        ok = len(shape) == 2 and shape[0] == groups and 1 <= shape[1] <= max(n_objects, 1)
        return (
            None if ok else f"num_groups is {groups} and a group lists at most {n_objects} objects"
        )
    if family == GROUPINGS_ATTRIBUTES:
        rows = reader.array_metadata(f"{reader.base}/{GROUPINGS}")["shape"][0]
        return _rows_problem(shape, rows, "one row per group is needed")
    return None


def _rows_problem(shape: list[int], rows: int, why: str) -> str | None:
    ok = len(shape) in (1, 2) and shape[0] == rows and (len(shape) == 1 or shape[1] >= 1)
    return None if ok else why


def _attribute(reader: LevelReader, path: str, key: str) -> Any:
    return reader.array_metadata(f"{reader.base}/{path}").get("attributes", {}).get(key)


def _links(reader: LevelReader) -> Any:
    return _attribute(reader, CROSS_CHUNK_LINKS, "num_links")
