"""Checks of the object-ordered copy of a point cloud with object ids (spec §9.15):
``L1.object_order_nodes``, ``L2.object_order_meta`` and ``L3.object_order_exact``."""

from __future__ import annotations

from typing import Any

import numpy as np

from zarr_vectors.errors import FormatError
from zarr_vectors.format.metadata import RootMetadata
from zarr_vectors.format.names import (
    ATTRIBUTES,
    OBJECT_ID_ATTRIBUTE,
    OBJECT_ORDER,
    OBJECT_ORDER_ROWS,
    POINT_CLOUD,
    VERTICES,
)
from zarr_vectors.format.object_order import ORDER_TAGS, order_shard_rows, sequence_problems
from zarr_vectors.format.version import OBJECT_ORDER_VERSION, parse_version
from zarr_vectors.geometry import every_row, object_order_of
from zarr_vectors.read import LevelReader
from zarr_vectors.store.row_sequences import RowSequence, read_sequences
from zarr_vectors.validate.context import Context

__all__ = ["check_consistency", "check_metadata", "check_structure"]

_PATH = f"0/{OBJECT_ORDER}"


def _levels_with_copy(ctx: Context) -> list[int]:
    return [level for level in ctx.facts.levels if OBJECT_ORDER in ctx.children(str(level))]


def _row_arrays(ctx: Context) -> list[str]:
    """The row arrays the copy must hold, by path inside it: ``rows``, ``vertices``,
    ``attributes/object_id`` and one per other attribute of level 0."""
    names = [
        n for n in ctx.children(f"0/{ATTRIBUTES}") if n not in ("zarr.json", OBJECT_ID_ATTRIBUTE)
    ]
    attributes = [OBJECT_ID_ATTRIBUTE, *sorted(names)]
    return [OBJECT_ORDER_ROWS, VERTICES, *(f"{ATTRIBUTES}/{n}" for n in attributes)]


def check_structure(ctx: Context) -> None:
    """L1.object_order_nodes: the copy only at level 0 of a point cloud whose points carry
    ``attributes/object_id``, a group holding ``ids``, ``offsets``, ``rows``, ``vertices``
    and exactly one ``attributes/<name>`` per attribute of level 0 (``object_id`` too).

    Examples
    --------
    >>> import pathlib, tempfile
    >>> import zarr_vectors as zv
    >>> path = pathlib.Path(tempfile.mkdtemp()) / "genes.zarr"
    >>> zv.write_points(path, [[1.0, 1.0], [9.0, 9.0]], object_ids=[4, 7], chunk_shape=5.0,
    ...                 options=zv.WriteOptions(object_order=True))
    >>> report = zv.validate(path, level=3)
    >>> "L1.object_order_nodes" in report.checks_run, report.ok
    (True, True)
    """
    ctx.mark("L1.object_order_nodes")
    for level in _levels_with_copy(ctx):
        path = f"{level}/{OBJECT_ORDER}"
        for problem in _placement_problems(ctx, level, path):
            ctx.fail("L1.object_order_nodes", path, f"{path}{problem}")


def _placement_problems(ctx: Context, level: int, path: str) -> list[str]:
    if ctx.facts.kind != POINT_CLOUD:
        return [": only point clouds have the copy"]
    if level != 0:
        return [": only level 0 has the copy"]
    if OBJECT_ID_ATTRIBUTE not in ctx.children(f"0/{ATTRIBUTES}"):
        return [f" exists but the points carry no 0/{ATTRIBUTES}/{OBJECT_ID_ATTRIBUTE}"]
    if not ctx.node(path).is_group:
        return [" is not a group"]
    wanted = ["ids", "offsets", *_row_arrays(ctx)]
    problems = [f"/{name} is missing" for name in wanted if not ctx.node(f"{path}/{name}").is_array]
    held = {f"{ATTRIBUTES}/{n}" for n in ctx.children(f"{path}/{ATTRIBUTES}") if n != "zarr.json"}
    problems += [f"/{name}: level 0 has no such attribute" for name in sorted(held - set(wanted))]
    return problems


def check_metadata(ctx: Context) -> None:
    """L2.object_order_meta: a store version of at least 1.7; the group's tag; ``ids`` of
    the dtype of ``object_id``, ``offsets`` int64 ``(n + 1,)``; every row array a sharded
    sequence (spec §9.15) of level 0's vertex count of rows, of its column's dtype and row
    shape (``rows`` int64), all of one ``R`` and of the ``S`` those rows give.

    Examples
    --------
    >>> import pathlib, tempfile
    >>> import zarr_vectors as zv
    >>> path = pathlib.Path(tempfile.mkdtemp()) / "genes.zarr"
    >>> zv.write_points(path, [[1.0, 1.0], [9.0, 9.0]], object_ids=[4, 7], chunk_shape=5.0,
    ...                 options=zv.WriteOptions(object_order=True))
    >>> "L2.object_order_meta" in zv.validate(path, level=3).checks_run
    True
    """
    ctx.mark("L2.object_order_meta")
    if 0 not in _levels_with_copy(ctx) or ctx.failed("L1.object_order_nodes"):
        return
    for where, problem in _meta_problems(ctx):
        ctx.fail("L2.object_order_meta", where, problem)


def _meta_problems(ctx: Context) -> list[tuple[str, str]]:
    problems = []
    if ctx.facts.version is not None and ctx.facts.version < parse_version(OBJECT_ORDER_VERSION):
        problems.append(("zarr.json", f"a store with {_PATH} declares format 1.7 or later"))
    if ctx.node(_PATH).attributes().get("zv_array") != ORDER_TAGS["group"]:
        problems.append((f"{_PATH}/zarr.json", 'attributes must be {"zv_array": "object_order"}'))
    ids = ctx.node(f"{_PATH}/ids").doc or {}
    shape = ids.get("shape")
    n = (
        shape[0]
        if isinstance(shape, list) and len(shape) == 1 and isinstance(shape[0], int)
        else -1
    )
    id_type = (ctx.node(f"0/{ATTRIBUTES}/{OBJECT_ID_ATTRIBUTE}").doc or {}).get("data_type")
    expected = {"ids": (id_type, [n]), "offsets": ("int64", [n + 1])}
    for name, (dtype, shape) in expected.items():
        doc = ctx.node(f"{_PATH}/{name}").doc or {}
        if not _is(doc, dtype, shape, ORDER_TAGS[name]) or n < 0:
            problems.append((f"{_PATH}/{name}/zarr.json", f"must be {dtype} of shape {shape}"))
    return problems + _sequence_problems(ctx)


def _is(doc: dict[str, Any], dtype: Any, shape: list[int], tag: str) -> bool:
    got = doc.get("attributes", {}).get("zv_array")
    return doc.get("data_type") == dtype and doc.get("shape") == shape and got == tag


def _sequence_problems(ctx: Context) -> list[tuple[str, str]]:
    """The row arrays: layout, dtype, shape and tag each, then one R and the S of §9.15."""
    facts = ctx.facts.level.get(0)
    n_rows = None if facts is None else facts.vertex_count
    if n_rows is None:  # level 0's own metadata checks report it
        return []
    problems, layouts = [], []
    for name in _row_arrays(ctx):
        path = f"{_PATH}/{name}"
        doc = ctx.node(path).doc or {}
        dtype, row_shape, tag = _column_of(ctx, name)
        wrong = sequence_problems(doc)
        if not wrong and not _is(doc, dtype, [n_rows, *row_shape], tag):
            wrong = [f"must be {dtype} of shape {[n_rows, *row_shape]} tagged {tag!r}"]
        if wrong:
            problems.append((f"{path}/zarr.json", f"{path}: {wrong[0]}"))
            continue
        sharding = doc["codecs"][0]["configuration"]["chunk_shape"][0]
        rows = doc["chunk_grid"]["configuration"]["chunk_shape"][0]
        width = np.dtype(dtype).itemsize * int(np.prod(row_shape))
        layouts.append((int(sharding), int(rows), width))
    if problems or not layouts:
        return problems
    r = {rows for rows, _, _ in layouts}
    shard = order_shard_rows(n_rows, layouts[0][0], max(w for _, _, w in layouts))
    if len(r) != 1 or {s for _, s, _ in layouts} != {shard}:
        problems.append((_PATH, f"{_PATH}: its row arrays must share R and have S = {shard} rows"))
    return problems


def _column_of(ctx: Context, name: str) -> tuple[Any, list[int], str]:
    """dtype, row shape and tag a row array of the copy must have: level 0's column's."""
    if name == OBJECT_ORDER_ROWS:
        return "int64", [], ORDER_TAGS["rows"]
    doc = ctx.node(f"0/{name}").doc or {}
    shape: list[Any] = doc["shape"] if isinstance(doc.get("shape"), list) else []
    ndim = ctx.facts.ndim or 0
    return doc.get("data_type"), list(shape[ndim + 1 :]), ORDER_TAGS[name.split("/")[0]]


def check_consistency(ctx: Context) -> None:
    """L3.object_order_exact: the copy is exactly the one level 0's stored rows give (spec
    §9.15): ``ids``, ``offsets`` and ``rows`` from the stored object ids, and every row of
    ``vertices`` and of each attribute bit for bit the level-0 row ``rows`` names.

    Examples
    --------
    >>> import pathlib, tempfile
    >>> import zarr_vectors as zv
    >>> path = pathlib.Path(tempfile.mkdtemp()) / "genes.zarr"
    >>> zv.write_points(path, [[1.0, 1.0], [9.0, 9.0]], object_ids=[4, 7], chunk_shape=5.0,
    ...                 options=zv.WriteOptions(object_order=True))
    >>> "L3.object_order_exact" in zv.validate(path, level=3).checks_run
    True
    """
    ctx.mark("L3.object_order_exact")
    if 0 not in _levels_with_copy(ctx) or ctx.failed("L2.object_order_meta"):
        return
    try:
        problem = _difference(ctx, LevelReader(ctx.io, RootMetadata.from_json(ctx.root_attrs()), 0))
    except FormatError as exc:  # a damaged level or copy is reported here too
        problem = f"cannot be compared: {exc}"
    if problem is not None:
        ctx.fail("L3.object_order_exact", _PATH, f"{_PATH}: {problem}")


def _difference(ctx: Context, reader: LevelReader) -> str | None:
    """The first difference between the stored copy and the one level 0 gives, or None."""
    wanted = every_row(reader)
    order, _, distinct, offsets = object_order_of(reader.read_rows(OBJECT_ID_ATTRIBUTE, wanted))
    stored = reader.read_globals([f"{OBJECT_ORDER}/ids", f"{OBJECT_ORDER}/offsets"])
    for name, got, want in zip(("ids", "offsets"), stored, (distinct, offsets), strict=True):
        if not np.array_equal(got, want):
            return f"{name} differs from what level 0's object ids give"
    names = _row_arrays(ctx)
    sequences = [_sequence(reader, name) for name in names]
    total = np.array([order.shape[0]], dtype=np.int64)
    copied = read_sequences(ctx.io, sequences, np.zeros(1, np.int64), total, {})
    if not np.array_equal(copied[0], order):
        return "rows differs from the object order of level 0's rows"
    for name, values in zip(names[1:], copied[1:], strict=True):
        column = reader.read_rows(name.split("/", 1)[-1], wanted)[order]
        if column.tobytes() != np.ascontiguousarray(values, column.dtype).tobytes():
            return f"{name} differs from level 0's rows in object order"
    return None


def _sequence(reader: LevelReader, name: str) -> RowSequence:
    path = f"0/{OBJECT_ORDER}/{name}"
    meta = reader.document(f"{path}/zarr.json")  # L2 checked it is a sequence's
    return RowSequence.from_metadata(meta, path, placed=reader.placed)
