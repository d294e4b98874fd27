"""The ``links/0`` rows of a merge: renumbered for the merged store, and their dtype.

Link rows hold row numbers inside their chunk, moved by the rows already there; mesh face
sentinels hold global vertex ids, recomputed for the final grid and ``N_max`` (spec §9.11).
The merged ``links/0`` is int32 unless some renumbered value needs int64, as with the
one-shot writer.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

import numpy as np

from zarr_vectors.format.kinds import geometry_kind
from zarr_vectors.format.names import LINK_FRAGMENTS
from zarr_vectors.read import ChunkRows
from zarr_vectors.update.object_sources import LINKS0

if TYPE_CHECKING:
    from zarr_vectors.update.merge_plan import MergePlan

__all__ = [
    "link_count",
    "link_dtype",
    "link_rows",
    "links_may_be_wide",
    "read_family",
    "rewrites_kept_links",
    "wide_links",
]

_INT32 = np.iinfo(np.int32)


def link_rows(plan: MergePlan, s: int, chunk: tuple[int, ...], rows: np.ndarray) -> np.ndarray:
    """Source ``s``'s ``links/0`` rows of a chunk in the merged store's numbering.

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
    >>> plan = plan_merge(sources, has_base=False)
    >>> (rows,) = read_family(plan, 1, (0, 0, 0), ["links/0"], link_count(plan, 1, (0, 0, 0)))
    >>> rows[:2].tolist(), link_rows(plan, 1, (0, 0, 0), rows)[:2].tolist()
    ([[0, 1], [1, 2]], [[13, 14], [14, 15]])
    """
    rows = rows.astype(np.int64)
    shift = int(plan.places[s].row_shift[plan.index[s][chunk]])
    if geometry_kind(plan.sources[0].kind).faces:
        sentinel = rows < 0
        out = np.where(sentinel, 0, rows + shift)
        if sentinel.any():
            out[sentinel] = -(plan.remap(s, -(rows[sentinel] + 1)) + 1)
        return out
    return np.where(rows >= 0, rows + shift, rows)


def link_count(plan: MergePlan, s: int, chunk: tuple[int, ...]) -> int:
    """Rows of ``links/0`` source ``s`` holds in a chunk.

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
    >>> plan = plan_merge(sources, has_base=False)
    >>> link_count(plan, 1, (0, 0, 0))
    7
    """
    if (chunk, s) in plan.ranges:
        return int(plan.ranges[(chunk, s)][2].sum())
    source = plan.sources[s]
    g = (source.chunks[plan.index[s][chunk]] - source.grid.origin).reshape(1, -1)
    return int(source.reader.blob_ranges(LINK_FRAGMENTS, g)[0][1].sum())


def read_family(
    plan: MergePlan, s: int, chunk: tuple[int, ...], paths: list[str], n: int
) -> list[np.ndarray]:
    """The ``n`` rows of a chunk of source ``s`` of each array in ``paths`` (one family:
    the same rows each).

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
    >>> plan = plan_merge(sources, has_base=False)
    >>> (rows,) = read_family(plan, 1, (0, 0, 0), ["links/0"], 7)
    >>> rows.shape
    (7, 2)
    """
    source = plan.sources[s]
    if n == 0:
        return [
            np.empty((0, *source.arrays[p].layout.row_shape), source.arrays[p].layout.dtype)
            for p in paths
        ]
    g = tuple(int(v) for v in source.chunks[plan.index[s][chunk]] - source.grid.origin)
    wanted = [ChunkRows(g, np.array([[0, n]], dtype=np.int64))]
    return source.reader.read_columns(paths, wanted)


def rewrites_kept_links(plan: MergePlan) -> bool:
    """Whether the base's kept chunks need their ``links/0`` rows read and rewritten.

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
    >>> rewrites_kept_links(plan_merge(sources, has_base=True))
    False
    """
    if not plan.has_base:
        return False
    mesh = geometry_kind(plan.sources[0].kind).faces
    return (mesh and not plan.identity(0)) or (
        plan.sources[0].arrays[LINKS0].layout.dtype != np.dtype(np.int32)
    )


def links_may_be_wide(plan: MergePlan) -> bool:
    """Whether some merged ``links/0`` value may need int64 (else int32 holds them all).

    Examples
    --------
    >>> import pathlib, tempfile
    >>> import numpy as np
    >>> import zarr_vectors as zv
    >>> from zarr_vectors.update.object_sources import open_source
    >>> folder = pathlib.Path(tempfile.mkdtemp())
    >>> lines = [np.cumsum(np.ones((10, 3)), axis=0) + k for k in range(4)]
    >>> zv.write_polylines(folder / "a.zarr", lines[:2], chunk_shape=8.0)
    >>> zv.write_polylines(folder / "b.zarr", lines[2:], chunk_shape=8.0)
    >>> from zarr_vectors.update import plan_merge
    >>> plan = plan_merge([open_source(folder / n) for n in ("a.zarr", "b.zarr")],
    ...                   has_base=False)
    >>> links_may_be_wide(plan)
    False
    """
    mesh = geometry_kind(plan.sources[0].kind).faces
    return mesh or max(plan.totals.values(), default=0) > _INT32.max


def link_dtype(plan: MergePlan) -> np.dtype[Any]:
    """int32 unless some merged ``links/0`` value needs int64 (as the one-shot writer).

    Examples
    --------
    >>> import pathlib, tempfile
    >>> import numpy as np
    >>> import zarr_vectors as zv
    >>> from zarr_vectors.update.object_sources import open_source
    >>> folder = pathlib.Path(tempfile.mkdtemp())
    >>> lines = [np.cumsum(np.ones((10, 3)), axis=0) + k for k in range(4)]
    >>> zv.write_polylines(folder / "a.zarr", lines[:2], chunk_shape=8.0)
    >>> zv.write_polylines(folder / "b.zarr", lines[2:], chunk_shape=8.0)
    >>> from zarr_vectors.update import plan_merge
    >>> plan = plan_merge([open_source(folder / n) for n in ("a.zarr", "b.zarr")],
    ...                   has_base=False)
    >>> link_dtype(plan)
    dtype('int32')
    """
    if not links_may_be_wide(plan):
        return np.dtype(np.int32)
    kept = rewrites_kept_links(plan)
    chunks = [c for c in plan.holders if plan.merged(c) or kept]
    return np.dtype(np.int64 if wide_links(plan, chunks) else np.int32)


def wide_links(plan: MergePlan, chunks: list[tuple[int, ...]]) -> bool:
    """Whether some ``links/0`` value of these chunks, renumbered, needs int64.

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
    >>> plan = plan_merge(sources, has_base=False)
    >>> wide_links(plan, sorted(plan.holders))
    False
    """
    for chunk in chunks:
        for s in plan.holders[chunk]:
            n = link_count(plan, s, chunk)
            (rows,) = read_family(plan, s, chunk, [LINKS0], n)
            values = link_rows(plan, s, chunk, rows)
            if values.size and (values.min() < _INT32.min or values.max() > _INT32.max):
                return True
    return False
