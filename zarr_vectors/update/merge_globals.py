"""The shared parts of a merged store, written once every chunk is: ids, groups, links.

Object ids and groups are checked before anything is written (:func:`check_globals`);
:func:`commit_merge` then writes the array metadata, ``vertex_counts``, the object index,
object and group attributes, the cross-chunk links in final global ids (spec §9.11) and,
last, the level and root metadata.
"""

from __future__ import annotations

import numpy as np

from zarr_vectors.errors import InvalidInputError
from zarr_vectors.format.codecs import global_blosc
from zarr_vectors.format.kinds import geometry_kind
from zarr_vectors.format.metadata import LevelMetadata
from zarr_vectors.format.names import (
    ATTRIBUTES,
    CROSS_CHUNK_LINK_ATTRIBUTES,
    CROSS_CHUNK_LINKS,
    FRAGMENT_ATTRIBUTES,
    LINK_ATTRIBUTES,
    LINKS,
    OBJECT_INDEX,
    VERTEX_COUNTS,
)
from zarr_vectors.store.arrays import (
    counts_array_metadata,
    group_metadata,
    row_array_metadata,
    write_counts,
)
from zarr_vectors.store.io import StoreIO
from zarr_vectors.update.merge_plan import MergePlan, flat
from zarr_vectors.update.object_sources import GLOBAL_PREFIXES
from zarr_vectors.write import (
    Groups,
    ObjectTable,
    commit_root,
    object_inputs,
    write_global,
    write_object_columns,
    write_object_index,
)

__all__ = ["check_globals", "commit_merge"]


def _write_metadata(io: StoreIO, plan: MergePlan) -> None:
    shape = tuple(int(g) for g in plan.grid.shape)
    docs = [
        (f"0/{path}/zarr.json", row_array_metadata(shape, a.layout, a.tag))
        for path, a in plan.arrays.items()
    ]
    docs += [
        (f"0/{name}/zarr.json", row_array_metadata(shape, layout, tag))
        for name, (layout, tag) in plan.blobs.items()
    ]
    docs.append(
        (f"0/{VERTEX_COUNTS}/zarr.json", counts_array_metadata(shape, {"zv_array": VERTEX_COUNTS}))
    )
    groups = [LINKS]
    groups += (
        [FRAGMENT_ATTRIBUTES]
        if any(p.startswith(f"{FRAGMENT_ATTRIBUTES}/") for p in plan.arrays)
        else []
    )
    groups += [ATTRIBUTES] if any(p.startswith(f"{ATTRIBUTES}/") for p in plan.arrays) else []
    groups += (
        [LINK_ATTRIBUTES] if any(p.startswith(f"{LINK_ATTRIBUTES}/") for p in plan.arrays) else []
    )
    docs += [(f"0/{g}/zarr.json", group_metadata({})) for g in groups]
    io.set_many(docs)


def _object_ids(plan: MergePlan) -> np.ndarray | None:
    """The merged object ids (None: 0..m-1), refusing repeated ids."""
    parts = [np.asarray(source.ids) for source in plan.sources]
    unsigned = {p.dtype.kind == "u" and p.dtype.itemsize == 8 for p in parts if p.size}
    if len(unsigned) > 1:
        if any(p.dtype.kind == "u" and np.any(p > _INT64_MAX) for p in parts):
            raise InvalidInputError("object ids mix uint64 ids above 2**63 and signed ids")
        parts = [p.astype(np.int64) for p in parts]
    ids = np.concatenate(parts)
    total = sum(s.n_objects for s in plan.sources)
    if np.unique(ids).shape[0] != total:
        raise InvalidInputError(
            "the new objects' ids repeat ids of the store (or of each other); object ids "
            "must be distinct"
        )
    return object_inputs.object_ids(ids, total)


_INT64_MAX = np.iinfo(np.int64).max


def _merged_groups(plan: MergePlan) -> Groups | None:
    names: list[str] = []
    members: list[np.ndarray] = []
    columns: dict[str, list[np.ndarray]] = {}
    for source, place in zip(plan.sources, plan.places, strict=True):
        if source.groups is None or not source.groups.names:
            continue
        repeated = set(names) & set(source.groups.names)
        if repeated:
            raise InvalidInputError(f"group {sorted(repeated)[0]!r} already exists in the store")
        if names and set(columns) != set(source.groups.attributes):
            raise InvalidInputError(
                f"group attributes {sorted(source.groups.attributes)} do not match the "
                f"store's {sorted(columns)}"
            )
        names += source.groups.names
        members += [m + place.object_shift for m in source.groups.members]
        for k, v in source.groups.attributes.items():
            columns.setdefault(k, []).append(v)
    if not names:
        return None
    return Groups(names, members, {k: np.concatenate(v) for k, v in columns.items()})


def check_globals(plan: MergePlan) -> tuple[np.ndarray | None, Groups | None]:
    """The merged object ids and groups, or the error that makes the merge impossible.

    Raises
    ------
    InvalidInputError
        When object ids repeat across the sources, or their groups do not fit together.

    Examples
    --------
    >>> import pathlib, tempfile
    >>> import numpy as np
    >>> import zarr_vectors as zv
    >>> from zarr_vectors.update import open_source, plan_merge
    >>> folder = pathlib.Path(tempfile.mkdtemp())
    >>> lines = [np.cumsum(np.ones((10, 3)), axis=0) + k for k in range(4)]
    >>> zv.write_polylines(folder / "a.zarr", lines[:2], chunk_shape=8.0)
    >>> zv.write_polylines(folder / "b.zarr", lines[2:], chunk_shape=8.0, object_ids=[2, 3])
    >>> sources = [open_source(folder / "a.zarr"), open_source(folder / "b.zarr")]
    >>> check_globals(plan_merge(sources, has_base=False))  # dense ids 0..3, no groups
    (None, None)
    >>> again = [open_source(folder / "a.zarr"), open_source(folder / "a.zarr")]
    >>> check_globals(plan_merge(again, has_base=False))
    Traceback (most recent call last):
    ...
    zarr_vectors.errors.InvalidInputError: the new objects' ids repeat ids of the store ...
    """
    return _object_ids(plan), _merged_groups(plan)


def _write_globals(
    io: StoreIO, plan: MergePlan, ids: np.ndarray | None, groups: Groups | None
) -> None:
    keys = [k for p in GLOBAL_PREFIXES for k in io.list_prefix(f"0/{p}/")]
    io.delete_many(keys)
    sources, kind = plan.sources, plan.sources[0].kind
    obj, chunk, fragment = [], [], []
    for s, (source, place) in enumerate(zip(sources, plan.places, strict=True)):
        o, c, f = source.refs
        rows = plan.rows_of(s, flat(c - source.grid.origin, source.grid))
        obj.append(o + place.object_shift)
        chunk.append(c - plan.grid.origin)
        fragment.append(f + (place.fragment_shift[rows] if rows.size else 0))
    ndim = plan.grid.ndim
    refs = (
        np.concatenate([np.empty(0, np.int64), *obj]),
        np.concatenate([np.empty((0, ndim), np.int64), *chunk]),
        np.concatenate([np.empty(0, np.int64), *fragment]),
    )
    n_objects = sum(s.n_objects for s in sources)
    version = plan.root.version
    index_blosc = global_blosc(version, kind, OBJECT_INDEX)
    write_object_index(io, "0", refs, n_objects, ndim, blosc=index_blosc)
    cross, order = _merged_cross(plan)
    table = ObjectTable(
        kind=kind,
        positions=np.empty((0, ndim)),
        offsets=np.zeros(n_objects + 1, np.int64),
        links=np.empty((0, 2), np.int64),
        vertex_attributes={},
        object_attributes={
            name: np.concatenate([s.object_columns[name] for s in sources])
            for name in sources[0].object_columns
        },
        object_ids=ids,
        groups=groups,
        root_extra={},
    )
    cross_blosc = global_blosc(version, kind, CROSS_CHUNK_LINKS)
    write_object_columns(io, "0", table, cross, cross_blosc=cross_blosc)
    if geometry_kind(kind).cross_chunk_links and sources[0].cross_columns:
        io.set(f"0/{CROSS_CHUNK_LINK_ATTRIBUTES}/zarr.json", group_metadata({}))
        for name in sources[0].cross_columns:
            values = np.concatenate([s.cross_columns[name] for s in sources])[order]
            tag = {"zv_array": "cross_chunk_link_attribute", "name": name}
            write_global(io, f"0/{CROSS_CHUNK_LINK_ATTRIBUTES}/{name}", values, 0, tag)


def _merged_cross(plan: MergePlan) -> tuple[np.ndarray, np.ndarray]:
    """Every source's cross-chunk pairs in final ids, sorted as the one-shot writer sorts."""
    parts = [
        plan.remap(s, source.cross.reshape(-1)).reshape(-1, 2)
        for s, source in enumerate(plan.sources)
    ]
    pairs = np.concatenate([np.empty((0, 2), np.int64), *parts])
    order = np.lexsort((pairs[:, 1], pairs[:, 0]))
    return pairs[order], order


def commit_merge(
    io: StoreIO, plan: MergePlan, ids: np.ndarray | None, groups: Groups | None
) -> None:
    """Write the merged store's shared parts once every chunk is written, the root last.

    Array metadata, ``vertex_counts``, the object index, object and group attributes,
    cross-chunk links, level and root metadata (``ids`` and ``groups`` from
    :func:`check_globals`).

    Examples
    --------
    A merge by hand, as :func:`~zarr_vectors.update.merge_stores` makes it:

    >>> import pathlib, tempfile
    >>> import numpy as np
    >>> import zarr_vectors as zv
    >>> from zarr_vectors.update import open_source, plan_merge
    >>> folder = pathlib.Path(tempfile.mkdtemp())
    >>> lines = [np.cumsum(np.ones((10, 3)), axis=0) + k for k in range(4)]
    >>> zv.write_polylines(folder / "a.zarr", lines[:2], chunk_shape=8.0)
    >>> zv.write_polylines(folder / "b.zarr", lines[2:], chunk_shape=8.0, object_ids=[2, 3])
    >>> sources = [open_source(folder / "a.zarr"), open_source(folder / "b.zarr")]
    >>> from zarr_vectors.store.target import write_target
    >>> from zarr_vectors.update import check_globals, commit_merge, merge_chunks
    >>> plan = plan_merge(sources, has_base=False)
    >>> ids, groups = check_globals(plan)
    >>> with write_target(folder / "c.zarr", overwrite=False) as io:
    ...     merge_chunks(io, plan, sorted(plan.holders))
    ...     commit_merge(io, plan, ids, groups)
    >>> zv.open(folder / "c.zarr").read().object_ids.tolist()
    [0, 1, 2, 3]
    """
    _write_metadata(io, plan)  # after the chunks: a base's reader reads its own metadata
    chunks = np.asarray(list(plan.totals), dtype=np.int64).reshape(-1, plan.grid.ndim)
    counts = np.asarray(list(plan.totals.values()), dtype=np.int64)
    write_counts(io.store, f"0/{VERTEX_COUNTS}", chunks - plan.grid.origin, counts)
    _write_globals(io, plan, ids, groups)
    n_objects = sum(s.n_objects for s in plan.sources)
    vertex_count = int(counts.sum())
    level = LevelMetadata(
        level=0,
        bin_ratio=(1,) * plan.grid.ndim,
        bin_shape=tuple(float(b) for b in plan.grid.bin_shape),
        vertex_count=vertex_count,
        chunk_count=len(plan.totals),
        object_count=n_objects,
    )
    summary = {
        "geometry_type": plan.sources[0].kind,
        "vertex_count": vertex_count,
        "chunk_count": len(plan.totals),
        "object_count": n_objects,
    }
    commit_root(io, plan.root, level, summary)
