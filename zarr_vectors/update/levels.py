"""``build_levels``: add levels of detail to a stored point cloud or object store (spec §4.3).

Point clouds go to :func:`~zarr_vectors.update.point_levels.build_levels` (level 0 read one
chunk at a time), object kinds to
:func:`~zarr_vectors.update.object_levels.build_object_levels` (whole objects).
"""

from __future__ import annotations

from zarr_vectors._progress import ProgressOption, progress_reporter
from zarr_vectors.errors import InvalidInputError
from zarr_vectors.format.names import OBJECT_KINDS
from zarr_vectors.format.version import has_place_records
from zarr_vectors.store.io import StoreIO, StoreLike, resolve_store
from zarr_vectors.update import point_levels
from zarr_vectors.update.object_levels import build_object_levels
from zarr_vectors.update.point_stream import DEFAULT_MEMORY_BUDGET
from zarr_vectors.update.upgrade import upgrade
from zarr_vectors.write import Levels

__all__ = ["build_levels"]


def _kind(store: StoreLike) -> str:
    """The geometry type a store's root declares; a store of format 1.0 or 1.1 is first
    upgraded (:func:`~zarr_vectors.update.upgrade.upgrade`), since levels make it a 1.3
    store, whose shards carry place records (spec §3.3, §9.0.2).

    Raises
    ------
    InvalidInputError
        When the store is not a complete Zarr Vectors store.
    """
    doc, _ = StoreIO(resolve_store(store, mode="r")).read_root()
    attrs = doc.get("attributes") if isinstance(doc, dict) else None
    if (
        not isinstance(attrs, dict)
        or not isinstance(attrs.get("geometry_type"), str)
        or not isinstance(attrs.get("zarr_vectors_version"), str)
    ):
        raise InvalidInputError(f"{store} is not a complete Zarr Vectors store")
    if not has_place_records(attrs["zarr_vectors_version"]):
        upgrade(store)
    return str(attrs["geometry_type"])


def build_levels(
    store: StoreLike,
    levels: int | str | Levels = "auto",
    *,
    progress: ProgressOption = None,
    memory_budget: int = DEFAULT_MEMORY_BUDGET,
) -> int:
    """Add levels of detail to a stored point cloud or object store (spec §4.3).

    The levels are the same, byte for byte, as those the kind's ``write_*(...,
    levels=levels)`` writes for the same data; the store becomes a format 1.3 store,
    committed as a new version (a failed build leaves it as it was; a store of format 1.0
    or 1.1 is upgraded first, :func:`~zarr_vectors.upgrade`, and stays upgraded).

    A point cloud's level 0 is read once, in batches of whole chunks within a quarter of
    ``memory_budget``, and kept with the first candidate level while they fit half of it
    (beyond that, level 0 is read back one chunk at a time). An object
    store (polylines, streamlines and the other kinds whose writer builds levels) is read
    in batches of whole objects within ``memory_budget``: once for a summary of the objects
    (what object sparsity needs), once per candidate level. Each coarse level goes to spill
    files beside the store batch by batch and is written from them chunk by chunk in shard
    order, its object index and cross-chunk links too; when level 0's fragment indexes and
    object index (estimated from its metadata) do not fit a quarter of the budget, level 0
    is read without caches that grow with it (each batch's object index by range, fragment
    ranges a few chunks at a time, those decoded kept within that quarter), else with them
    whole. So memory holds the budget's
    batch, that quarter, a few chunks of level 0 and one shard of the coarse level, plus
    what grows with the number of objects only: about 30 bytes per object (the summary:
    first vertex, a flag, a length; each level's vertex count per object) and level 0's
    object attributes, ids and groups, which every level stores; and a few numbers per
    coarse chunk and batch. Only the files that change are written. A store that has
    levels gets them built again; ``levels=0`` removes them. The root records what
    was asked (``level_schedule``, spec §3.1), which later appends rerun.

    Parameters
    ----------
    store
        A local path or zarr store.
    levels
        ``"auto"`` (default), a number of levels, or a :class:`~zarr_vectors.Levels`
        (object sparsity: ``Levels(objects=...)``).
    progress
        None (a bar on a terminal), True, False or a callable ``progress(stage, done,
        total)``, as for the writers.
    memory_budget
        Bytes of working memory for a batch of objects, or of a point cloud's chunks and
        the levels kept from them (default 256 MiB, as the streaming writers); the
        batches do not change the levels.

    Returns
    -------
    int
        The number of levels the store now has (a point cloud without levels whose level
        0 already holds at most the target is left unchanged).

    Raises
    ------
    InvalidInputError
        For a store that is not a Zarr Vectors store, a kind whose writer builds no
        levels, or bad ``levels``.

    Examples
    --------
    >>> import pathlib, tempfile
    >>> import numpy as np
    >>> import zarr_vectors as zv
    >>> folder = pathlib.Path(tempfile.mkdtemp())
    >>> points = np.random.default_rng(0).random((5000, 2)) * 100
    >>> zv.write_points(folder / "cells.zarr", points, chunk_shape=50.0, progress=False)
    >>> zv.build_levels(folder / "cells.zarr", zv.Levels(count=2, per_bin=8), progress=False)
    2
    >>> walks = [np.cumsum(np.ones((300, 3)), axis=0) + k for k in range(20)]
    >>> zv.write_polylines(folder / "lines.zarr", walks, chunk_shape=64.0, progress=False)
    >>> zv.build_levels(folder / "lines.zarr", zv.Levels(count=2, objects="coverage"),
    ...                 progress=False)
    2
    >>> zv.open(folder / "lines.zarr").levels[2].vertex_count < 300
    True
    """
    if _kind(store) in OBJECT_KINDS:
        return build_object_levels(store, levels, progress, memory_budget)
    with progress_reporter(progress) as report:
        report("levels", 0, 1)
        built = point_levels.build_levels(store, levels, memory_budget)
        report("levels", 1, 1)
    return built
