"""``build_object_order`` and ``drop_object_order``: add the object-ordered copy to a stored
point cloud, or remove it (spec §9.15).

Both are committed like an append (:func:`~zarr_vectors.store.target.modify_target`): a
local store is changed in a hidden sibling of hard links swapped in at the end, so a failed
or killed change leaves it as it was; other stores are changed in place with their root
uncommitted meanwhile (spec §2.4).
"""

from __future__ import annotations

import dataclasses

from zarr_vectors._progress import ProgressOption, progress_reporter
from zarr_vectors.errors import InvalidInputError
from zarr_vectors.format.names import OBJECT_ID_ATTRIBUTE, OBJECT_ORDER
from zarr_vectors.format.version import (
    FORMAT_VERSION,
    OBJECT_ORDER_VERSION,
    is_plain_zarr,
    parse_version,
)
from zarr_vectors.geometry import commit_points
from zarr_vectors.store.io import StoreLike
from zarr_vectors.store.target import modify_target
from zarr_vectors.update.point_append import ExistingPoints, load_existing
from zarr_vectors.update.point_stream import DEFAULT_MEMORY_BUDGET
from zarr_vectors.update.upgrade import upgrade
from zarr_vectors.write import LevelStats

__all__ = ["build_object_order", "drop_object_order"]

_ON_ZIP = "change the directory store, then zip it"
_COPY = f"0/{OBJECT_ORDER}/"
_PURPOSE = "an object-ordered copy"


def build_object_order(
    store: StoreLike,
    *,
    memory_budget: int = DEFAULT_MEMORY_BUDGET,
    progress: ProgressOption = None,
) -> None:
    """Add the object-ordered copy of level 0 to a stored point cloud with object ids
    (spec §9.15), or build it again; the store then declares format 1.7.

    The store gets the bytes ``write_points(..., options=WriteOptions(object_order=True))``
    writes for the same points, committed as a new version: a failed or killed build leaves
    it as it was. The copy is built out of core: level 0 is read in batches of chunks, once
    for the distinct ids, then once per window of the copy's rows that fits the budget.
    Memory holds about ``memory_budget`` bytes, besides 24 bytes per distinct id. A store of
    format 1.0 to 1.2 is upgraded first (:func:`~zarr_vectors.upgrade`) and stays upgraded.

    Parameters
    ----------
    store
        A local path or zarr store holding a point cloud whose points carry object ids.
    memory_budget
        Bytes of working memory (default 256 MiB, as the streaming writers); it does not
        change the bytes written.
    progress
        None (a bar on a terminal), True, False or a callable ``progress(stage, done,
        total)``, as for the writers (stage ``"object_order"``).

    Raises
    ------
    InvalidInputError
        For a store that is not a point cloud, or whose points carry no object ids, or a
        zip store (change the directory store, then zip it).

    Examples
    --------
    >>> import pathlib, tempfile
    >>> import numpy as np
    >>> import zarr_vectors as zv
    >>> path = pathlib.Path(tempfile.mkdtemp()) / "cells.zarr"
    >>> rng = np.random.default_rng(0)
    >>> zv.write_points(path, rng.random((500, 3)) * 100, object_ids=rng.integers(0, 9, 500),
    ...                 chunk_shape=50.0, progress=False)
    >>> zv.build_object_order(path, progress=False)
    >>> zv.open(path).metadata["zarr_vectors_version"]
    '1.7'
    >>> zv.drop_object_order(path)
    True
    >>> zv.open(path).metadata["zarr_vectors_version"]
    '1.6'
    """
    existing = _existing(store)
    if OBJECT_ID_ATTRIBUTE not in existing.columns:
        raise InvalidInputError(
            f"{store}: its points carry no object ids, so there is no object order to copy; "
            "write them with object_ids=..."
        )
    with progress_reporter(progress) as report:
        report("object_order", 0, 1)
        _commit(store, existing, copy=True, memory_budget=memory_budget)
        report("object_order", 1, 1)


def drop_object_order(store: StoreLike) -> bool:
    """Remove the object-ordered copy of a stored point cloud (spec §9.15), committed as a
    new version; False (the store unchanged) when it has none.

    A store declaring format 1.7, which only added the copy, declares 1.6 again: it then
    holds the bytes a write without ``WriteOptions(object_order=True)`` gives. Reads by id
    go through the object-to-chunks index again, with the same answers.

    Raises
    ------
    InvalidInputError
        For a store that is not a point cloud, or a zip store.

    Examples
    --------
    >>> import pathlib, tempfile
    >>> import zarr_vectors as zv
    >>> path = pathlib.Path(tempfile.mkdtemp()) / "p.zarr"
    >>> zv.write_points(path, [[1.0, 2.0]], object_ids=[3], chunk_shape=4.0, progress=False)
    >>> zv.drop_object_order(path)
    False
    """
    # a store older than 1.7 has no copy
    existing = load_existing(store, with_levels=True, purpose=_PURPOSE)
    if not existing.options.object_order:
        return False
    _commit(store, existing, copy=False, memory_budget=None)
    return True


def _existing(store: StoreLike) -> ExistingPoints:
    """The point cloud at ``store``, upgraded first when older than format 1.3 (the copy
    needs place records and named arrays, spec §3.3)."""
    existing = load_existing(store, with_levels=True, purpose=_PURPOSE)
    if not is_plain_zarr(existing.root.version):
        upgrade(store)
        existing = load_existing(store, with_levels=True, purpose=_PURPOSE)
    return existing


def _commit(
    store: StoreLike, existing: ExistingPoints, *, copy: bool, memory_budget: int | None
) -> None:
    """Write (``copy``) or delete level 0's copy and commit the store with its version."""
    root = existing.root
    if not copy and parse_version(root.version) == parse_version(OBJECT_ORDER_VERSION):
        root = dataclasses.replace(root, version=FORMAT_VERSION)  # 1.7 only adds the copy
    changed = modify_target(store, rewritten=_COPY, base=existing.base, on_zip=_ON_ZIP)
    with changed as (_, target):
        target.delete_many(target.list_prefix(_COPY))  # in place: nothing else deletes it
        stats = LevelStats(existing.vertex_count, int(existing.counts.shape[0]), 0)
        commit_points(
            target,
            root,
            existing.grid,
            stats,
            object_order=copy,
            memory_budget=memory_budget,
        )
