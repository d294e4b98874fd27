"""Checks of the object-to-chunks index of a point cloud with object ids (spec §9.14):
``L1.object_chunks_nodes``, ``L2.object_chunks_meta`` and ``L3.object_chunks_exact``."""

from __future__ import annotations

from typing import Any

import numpy as np

from zarr_vectors.errors import FormatError
from zarr_vectors.format.metadata import RootMetadata
from zarr_vectors.format.names import (
    ATTRIBUTES,
    OBJECT_CHUNKS,
    OBJECT_CHUNKS_ARRAYS,
    OBJECT_ID_ATTRIBUTE,
    POINT_CLOUD,
)
from zarr_vectors.format.version import OBJECT_CHUNKS_VERSION, parse_version
from zarr_vectors.geometry import stored_object_chunks
from zarr_vectors.read import LevelReader
from zarr_vectors.validate.context import Context

__all__ = ["check_consistency", "check_metadata", "check_structure"]

_PATH = f"0/{OBJECT_CHUNKS}"
_TAGS = {
    "ids": "object_chunks_ids",
    "offsets": "object_chunks_offsets",
    "entries": "object_chunks_entries",
}


def _levels_with_index(ctx: Context) -> list[int]:
    return [level for level in ctx.facts.levels if OBJECT_CHUNKS in ctx.children(str(level))]


def check_structure(ctx: Context) -> None:
    """L1.object_chunks_nodes: the index only at level 0 of a point cloud whose points
    carry ``attributes/object_id``, a group holding the arrays ``ids``, ``offsets`` and
    ``entries``.

    Examples
    --------
    >>> import pathlib, tempfile
    >>> import zarr_vectors as zv
    >>> path = pathlib.Path(tempfile.mkdtemp()) / "cells.zarr"
    >>> zv.write_points(path, [[1.0, 1.0], [9.0, 9.0]], object_ids=[4, 7], chunk_shape=5.0)
    >>> "L1.object_chunks_nodes" in zv.validate(path, level=3).checks_run
    True
    """
    ctx.mark("L1.object_chunks_nodes")
    for level in _levels_with_index(ctx):
        path = f"{level}/{OBJECT_CHUNKS}"
        if ctx.facts.kind != POINT_CLOUD:
            ctx.fail("L1.object_chunks_nodes", path, f"{path}: only point clouds have the index")
            continue
        if level != 0:
            ctx.fail("L1.object_chunks_nodes", path, f"{path}: only level 0 has the index")
            continue
        if OBJECT_ID_ATTRIBUTE not in ctx.children(f"0/{ATTRIBUTES}"):
            ctx.fail(
                "L1.object_chunks_nodes",
                path,
                f"{path} exists but the points carry no 0/{ATTRIBUTES}/{OBJECT_ID_ATTRIBUTE}",
            )
        if not ctx.node(path).is_group:
            ctx.fail("L1.object_chunks_nodes", path, f"{path} is not a group")
        for name in OBJECT_CHUNKS_ARRAYS:
            if not ctx.node(f"{path}/{name}").is_array:
                ctx.fail("L1.object_chunks_nodes", f"{path}/{name}", f"{path}/{name} is missing")


def check_metadata(ctx: Context) -> None:
    """L2.object_chunks_meta: the group's attributes, the arrays' dtypes, shapes and tags,
    and a store version of at least 1.3.

    Examples
    --------
    >>> import pathlib, tempfile
    >>> import zarr_vectors as zv
    >>> path = pathlib.Path(tempfile.mkdtemp()) / "cells.zarr"
    >>> zv.write_points(path, [[1.0, 1.0], [9.0, 9.0]], object_ids=[4, 7], chunk_shape=5.0)
    >>> "L2.object_chunks_meta" in zv.validate(path, level=3).checks_run
    True
    """
    ctx.mark("L2.object_chunks_meta")
    if 0 not in _levels_with_index(ctx) or ctx.failed("L1.object_chunks_nodes"):
        return
    for where, problem in _meta_problems(ctx):
        ctx.fail("L2.object_chunks_meta", where, problem)


def _meta_problems(ctx: Context) -> list[tuple[str, str]]:
    problems = []
    if ctx.facts.version is not None and ctx.facts.version < parse_version(OBJECT_CHUNKS_VERSION):
        problems.append(("zarr.json", f"a store with {_PATH} declares format 1.3 or later"))
    attrs = ctx.node(_PATH).attributes()
    n: Any = attrs.get("num_objects")
    if attrs.get("zv_array") != OBJECT_CHUNKS or not _count(n):
        problems.append(
            (
                f"{_PATH}/zarr.json",
                'attributes must be {"zv_array": '
                '"object_chunks", "num_objects": n} with n an integer >= 0',
            )
        )
        return problems
    meta = {name: ctx.node(f"{_PATH}/{name}").doc or {} for name in OBJECT_CHUNKS_ARRAYS}
    id_type = (ctx.node(f"0/{ATTRIBUTES}/{OBJECT_ID_ATTRIBUTE}").doc or {}).get("data_type")
    entries: Any = meta["entries"].get("shape")
    expected: dict[str, tuple[Any, Any]] = {
        "ids": (id_type, [n]),
        "offsets": ("int64", [n + 1]),
        "entries": ("int64", [entries[0] if _rows(entries) else -1, 3]),
    }
    for name, (dtype, shape) in expected.items():
        doc = meta[name]
        tag = doc.get("attributes", {}).get("zv_array")
        if doc.get("data_type") != dtype or doc.get("shape") != shape or tag != _TAGS[name]:
            problems.append(
                (
                    f"{_PATH}/{name}/zarr.json",
                    f"must be {dtype} of shape {shape} tagged "
                    f"zv_array {_TAGS[name]!r} (num_objects is {n})",
                )
            )
    return problems


def _count(value: Any) -> bool:
    return isinstance(value, int) and not isinstance(value, bool) and value >= 0


def _rows(shape: Any) -> bool:
    return isinstance(shape, list) and len(shape) == 2 and _count(shape[0])


def check_consistency(ctx: Context) -> None:
    """L3.object_chunks_exact: the index is exactly the one the stored object ids of level 0
    imply (spec §9.14): its ids, offsets and entries, value for value.

    Examples
    --------
    >>> import pathlib, tempfile
    >>> import zarr_vectors as zv
    >>> path = pathlib.Path(tempfile.mkdtemp()) / "cells.zarr"
    >>> zv.write_points(path, [[1.0, 1.0], [9.0, 9.0]], object_ids=[4, 7], chunk_shape=5.0)
    >>> "L3.object_chunks_exact" in zv.validate(path, level=3).checks_run
    True
    """
    ctx.mark("L3.object_chunks_exact")
    if 0 not in _levels_with_index(ctx) or ctx.failed("L2.object_chunks_meta"):
        return
    try:
        reader = LevelReader(ctx.io, RootMetadata.from_json(ctx.root_attrs()), 0)
        stored = reader.read_globals([f"{OBJECT_CHUNKS}/{a}" for a in OBJECT_CHUNKS_ARRAYS])
        implied = stored_object_chunks(reader)
    except FormatError as exc:  # a damaged level is reported by the other checks
        ctx.fail("L3.object_chunks_exact", _PATH, f"{_PATH} cannot be compared: {exc}")
        return
    assert implied is not None  # L1 checked that the points carry object ids
    problem = _difference(stored, implied)
    if problem is not None:
        ctx.fail("L3.object_chunks_exact", _PATH, f"{_PATH}: {problem}")


def _difference(stored: list[np.ndarray], implied: Any) -> str | None:
    """The first difference between the stored index and the implied one, or None."""
    for name, got, want in zip(OBJECT_CHUNKS_ARRAYS, stored, implied, strict=True):
        if got.shape != want.shape:
            return f"{name} has shape {got.shape}, the stored object ids give {want.shape}"
        if not got.size:  # an empty store's index: nothing to compare
            continue
        wrong = np.flatnonzero(np.any((got != want).reshape(got.shape[0], -1), axis=1))
        if wrong.size:
            return (
                f"{name} row {int(wrong[0])} is {got[wrong[0]].tolist()}, the stored object "
                f"ids give {want[wrong[0]].tolist()}"
            )
    return None
