"""Streaming point-cloud writes from an iterable of batches, and appends to a stored point
cloud: both through :class:`~zarr_vectors.update.point_writer.PointWriter`.

:class:`PointWriter` (:mod:`~zarr_vectors.update.point_writer`), :func:`bin_dtype`
(:mod:`~zarr_vectors.update.point_slices`) and :data:`DEFAULT_MEMORY_BUDGET` are importable
from here too.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from typing import Any

from zarr_vectors._progress import Progress
from zarr_vectors.errors import InvalidInputError
from zarr_vectors.format.names import POINT_CLOUD
from zarr_vectors.geometry import shared_docs
from zarr_vectors.store.io import StoreLike
from zarr_vectors.store.writer_lock import writer_lock
from zarr_vectors.update.point_slices import bin_dtype
from zarr_vectors.update.point_writer import DEFAULT_MEMORY_BUDGET, PointWriter
from zarr_vectors.write import writer_arguments

__all__ = [
    "DEFAULT_MEMORY_BUDGET",
    "PointWriter",
    "Progress",
    "append_points",
    "bin_dtype",
    "write_points_stream",
]


@shared_docs
def write_points_stream(
    store: StoreLike,
    batches: Iterable[Any],
    **settings: Any,
) -> None:
    """Write a point cloud from an iterable of batches (see :class:`PointWriter`).

    Parameters
    ----------
    store
        Destination.
    batches
        Each item is a positions array, or a mapping with ``"positions"`` and optionally
        ``"attributes"`` and ``"object_ids"`` (the arguments of :meth:`PointWriter.append`).
    **settings
        Keyword arguments of :class:`PointWriter` (``chunk_shape``, ``bin_shape``,
        ``units``, ``overwrite``, ``options``, ``memory_budget``, ``spill_dir``,
        ``progress``, ``levels``).

    {example_setup}
    >>> batches = (np.full((3, 3), k, dtype=np.float32) for k in range(4))
    >>> zv.write_points_stream(path, batches, chunk_shape=5.0, progress=False)
    >>> zv.open(path).vertex_count
    12
    """
    with PointWriter(store, **settings) as writer:
        for batch in batches:
            if isinstance(batch, Mapping):
                unknown = set(batch) - {"positions", "attributes", "object_ids"}
                if unknown or "positions" not in batch:
                    raise InvalidInputError(
                        "a batch mapping holds 'positions' and optionally 'attributes' and "
                        f"'object_ids'; got keys {sorted(batch)}"
                    )
                writer.append(
                    batch["positions"],
                    attributes=batch.get("attributes"),
                    object_ids=batch.get("object_ids"),
                )
            else:
                writer.append(batch)


@shared_docs
def append_points(
    store: StoreLike,
    positions: Any,
    *,
    attributes: Mapping[str, Any] | None = None,
    object_ids: Any = None,
    **settings: Any,
) -> None:
    """Add points to an existing point-cloud store.

    The store becomes, byte for byte apart from ``creation_timestamp`` and ``commit``, the one
    :func:`~zarr_vectors.write_points` writes for the old input followed by the new.
    Chunks that receive no new point are not rewritten; they are moved only when the new
    points lie below the grid origin, and re-indexed only when the largest chunk outgrows
    the shards' ``N_max``. With several chunks per shard (``shard_chunks``), a shard is
    rewritten when one of its chunks gets new points, from the unchanged chunks' encoded
    row blocks and the changed chunks' rows, and every shard is rewritten when the origin
    moves or ``N_max`` grows. A local store is changed in a sibling directory swapped in at
    the end, so a failed append leaves it as it was; other stores are changed in place and
    an interrupted append leaves them incomplete (spec §2.4), never wrong.

    A store with levels of detail keeps them: the schedule its root records
    (``level_schedule``: what ``levels=`` asked for; for a store without it, the levels as
    recorded) is run again over the new level 0, so the store is the one ``write_points``
    writes for all the points with the same ``levels=`` (levels may be added). While the
    levels stay the same, only the coarse chunks whose level-0 rows change are rebuilt and
    the others' files kept; when their count changes, every level is built again.

    Concurrent appends (threads, or processes on one machine's local store) take turns:
    each takes the store's writer lock before it reads the store, so every batch is
    committed, in some order (spec §12.3).

    Parameters
    ----------
    store
        An existing point-cloud store (a local path or a writable zarr store; not a zip).
    positions, attributes, object_ids
        The new points, as for :func:`~zarr_vectors.write_points`; the dimension,
        attribute names and row shapes and the presence of object ids must match the
        store's. Dtypes are cast to the store's when numpy casts them safely (float32
        positions into a float64 store, int16 into int32); a cast that can lose values
        is refused with the ``.astype(...)`` that does it, naming the argument.
    **settings
        ``memory_budget``, ``spill_dir``, ``progress`` as for :class:`PointWriter`.

    Raises
    ------
    InvalidInputError
        For input that does not match the store, or a store that cannot be appended to.
    ConcurrentWriteError
        When another writer committed meanwhile without the lock (another process on a
        memory or object store) or held the lock for over an hour; nothing was committed.

    {example_setup}
    >>> positions = np.array([[1, 2, 3], [4, 5, 6]], dtype=np.float32)
    >>> zv.write_points(path, positions, chunk_shape=5.0, progress=False)
    >>> zv.append_points(path, positions + 10, progress=False)
    >>> zv.open(path).vertex_count
    4
    """
    with writer_lock(store), PointWriter(store, mode="a", **settings) as writer:
        writer.append(positions, attributes=attributes, object_ids=object_ids)


writer_arguments.register_append((POINT_CLOUD,), append_points)  # write_points(mode="a") runs it
