"""Merging object stores chunk by chunk: appends and batched writes (spec §2.4, §9, §10.3).

A batch of new objects is first written alone, by the one-shot writer, into a scratch
store. Merging it into the store it extends gives, byte for byte, the store one write of
the old objects followed by the new ones gives: the new objects get the dense ids after
the old ones, so in every chunk their rows, fragments and links go after the old ones
(rows of a chunk are ordered by object, spec §10.3). Row numbers inside a chunk are moved
by the rows already there, fragment numbers by the fragments already there, dense object
ids by the objects already there, and every global vertex id (``cross_chunk_links``, mesh
face sentinels) is recomputed for the final grid and ``N_max`` (spec §9.11): the order of
global ids is that of (chunk index, row), which no change of origin, grid shape or
``N_max`` alters, so pairs keep their orientation and only need sorting again.

Chunks that receive no new object keep their shards: they are moved when the grid origin
moves (new data below it), re-indexed when an ``N_max`` grows, and re-encoded only when
their content must change (mesh sentinels pointing at moved vertices, a wider link dtype,
a larger fragment-blob block). Chunks are visited in descending grid order, so in a store
changed in place no shard is overwritten before it is read (see
:mod:`zarr_vectors.update.point_append`).

A new store (no base) may pack several spatial chunks per shard (``shard_chunks``, spec
§9.0.1): the merge visits the chunks shard by shard and writes each shard once, from its
chunks' encoded row blocks. A base packed so keeps its shard shape: a shard none of whose
chunks changes is kept whole, any other is written again whole (all of them when the
origin, an ``N_max`` or the links change), in descending shard order.
"""

from __future__ import annotations

from collections.abc import Iterator
from contextlib import contextmanager

from zarr_vectors._progress import Progress
from zarr_vectors.format.names import VERTEX_COUNTS
from zarr_vectors.store.io import StoreIO, StoreLike
from zarr_vectors.store.target import modify_target, write_target
from zarr_vectors.update.merge_chunks import merge_chunks
from zarr_vectors.update.merge_globals import check_globals, commit_merge
from zarr_vectors.update.merge_links import links_may_be_wide, wide_links
from zarr_vectors.update.merge_plan import (
    MergePlan,
    for_chunk_writers,
    plan_merge,
    set_link_dtype,
)
from zarr_vectors.update.object_levels import commit_levels, stored_levels
from zarr_vectors.update.object_sources import Source
from zarr_vectors.write import Levels, name_new_arrays

__all__ = [
    "MergePlan",
    "check_globals",
    "commit_merge",
    "for_chunk_writers",
    "links_may_be_wide",
    "merge_chunks",
    "merge_stores",
    "plan_merge",
    "set_link_dtype",
    "wide_links",
]


@contextmanager
def _target(
    store: StoreLike, base: bytes | None, has_base: bool, overwrite: bool
) -> Iterator[StoreIO]:
    if has_base:
        with modify_target(store, rewritten=f"0/{VERTEX_COUNTS}/c/", base=base) as (_, target):
            yield target
        return
    with write_target(store, overwrite=overwrite) as target:
        yield target


def merge_stores(
    store: StoreLike,
    sources: list[Source],
    *,
    has_base: bool,
    overwrite: bool = False,
    progress: Progress | None = None,
    shard_chunks: int | tuple[int, ...] | None = None,
    levels: Levels | None = None,
) -> None:
    """Merge ``sources`` (objects in this order) into ``store`` and commit it.

    Parameters
    ----------
    store
        The destination: the store of ``sources[0]`` when ``has_base`` (it is changed, and
        its chunks no other source touches are kept), else a new store.
    sources
        Stores of the same kind and layout; their objects are numbered in this order.
    has_base
        Whether ``sources[0]`` is the store at ``store``.
    overwrite
        Without a base: replace an existing store at ``store``.
    progress
        Called as ``progress("merge", chunks done, chunks)`` after each chunk.
    shard_chunks
        Spatial chunks per shard of the new store (see :func:`plan_merge`); not with a base
        (the base's own shard shape is kept).
    levels
        The levels of detail the merged store gets, built from its merged level 0 before
        the commit (:func:`~zarr_vectors.update.object_levels.commit_levels`); None: a
        base's levels as it has them (:func:`~zarr_vectors.update.object_levels.
        stored_levels`), else none.

    Raises
    ------
    InvalidInputError
        When the sources do not fit together; nothing has changed then.

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
    >>> merge_stores(folder / "c.zarr", sources, has_base=False)
    >>> zv.open(folder / "c.zarr").read().object_ids.tolist()
    [0, 1, 2, 3]
    """
    if levels is None and has_base:
        levels = stored_levels(sources[0])  # an append keeps the store's levels
    plan = plan_merge(sources, has_base=has_base, shard_chunks=shard_chunks)
    ids, groups = check_globals(plan)
    base_chunks = sorted(plan.index[0], reverse=True) if has_base else []
    others = sorted(c for c in plan.holders if not (has_base and c in plan.index[0]))
    with _target(store, sources[0].base, has_base, overwrite) as io:
        if not has_base:  # a new store (a changed one keeps its version, spec §3.3)
            name_new_arrays(io, plan.root)
        merge_chunks(io, plan, [*base_chunks, *others], progress)
        commit_merge(io, plan, ids, groups)
        if levels is not None:
            commit_levels(io, levels)
