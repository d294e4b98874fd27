"""Appending objects to an existing store (spec §2.4, §10.3).

Each ``append_*`` function validates and writes the new objects alone, with the one-shot
writer and the store's own settings, into a scratch store, then merges that into the store
(:mod:`zarr_vectors.update.object_merge`). The store becomes, byte for byte apart from
``creation_timestamp`` and ``commit``, the store one write of the old objects followed by
the new ones gives. A store an earlier writer wrote with longer fragment-blob blocks (spec
§9.2) keeps them, so that chunks without new objects keep their bytes.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any, Unpack

import numpy as np

from zarr_vectors._progress import ProgressOption, progress_reporter
from zarr_vectors.errors import InvalidInputError
from zarr_vectors.format.kinds import geometry_kind
from zarr_vectors.format.names import ATTRIBUTES, LINK_ATTRIBUTES, VERTICES
from zarr_vectors.geometry import (
    group_vertices,
    shared_docs,
    split_polylines,
    write_graph,
    write_mesh,
    write_polylines,
    write_skeletons,
)
from zarr_vectors.store.io import StoreIO, StoreLike, scratch_store
from zarr_vectors.store.writer_lock import writer_lock
from zarr_vectors.update.object_merge import merge_stores
from zarr_vectors.update.object_sources import Source, open_source, options_of, store_arguments
from zarr_vectors.write import KindWriter, ObjectAppendArgs, inputs, write_kind, writer_arguments

__all__ = [
    "append_graph",
    "append_mesh",
    "append_polylines",
    "append_skeletons",
    "continuing_ids",
    "fit_arguments",
    "open_base",
    "store_arguments",
    "store_settings",
]


def _append_objects(
    store: StoreLike,
    writer: KindWriter,
    arguments: dict[str, Any],
    progress: ProgressOption,
) -> None:
    """Add the objects ``arguments`` describe to ``store``, whose kind ``writer`` writes.

    Parameters
    ----------
    store
        An existing store.
    writer
        The kind's writer; the new objects are written alone with it, with the store's
        settings, then merged into the store.
    arguments
        The new objects by name (see :meth:`~zarr_vectors.write.KindWriter.bind`).
    progress
        As for the ``append_*`` functions.

    Raises
    ------
    InvalidInputError
        For another kind of store, or input that does not match the store.
    """
    with writer_lock(store):  # another append waits: its batch goes after this one
        base = open_base(store, writer)
        fitted = fit_arguments(base.kind, base, arguments, "the store")
        fitted["object_ids"] = continuing_ids(base.kind, base.n_objects, arguments)
        with progress_reporter(progress) as report:
            scratch = scratch_store()
            settings = store_settings(base, report)
            write_kind(scratch, writer, fitted, store_arguments(base), settings)
            batch = open_source(StoreIO(scratch))
            merge_stores(store, [base, batch], has_base=True, progress=report)


def open_base(store: StoreLike, writer: KindWriter) -> Source:
    """The store new objects are added to, checked to be of a kind ``writer`` writes.

    Raises
    ------
    InvalidInputError
        For another kind of store.

    Examples
    --------
    >>> import pathlib, tempfile
    >>> import numpy as np
    >>> import zarr_vectors as zv
    >>> path = pathlib.Path(tempfile.mkdtemp()) / "lines.zarr"
    >>> lines = [np.cumsum(np.ones((10, 3)), axis=0) + k for k in range(2)]
    >>> zv.write_polylines(path, lines, chunk_shape=8.0)
    >>> from zarr_vectors.geometry import object_writer
    >>> open_base(path, object_writer("polyline")).kind
    'polyline'
    >>> open_base(path, object_writer("mesh"))
    Traceback (most recent call last):
    ...
    zarr_vectors.errors.InvalidInputError: cannot append mesh objects to a polyline store
    """
    base = open_source(store)
    if base.kind not in writer.kinds:
        raise InvalidInputError(
            f"cannot append {' or '.join(writer.kinds)} objects to a {base.kind} store"
        )
    return base


def store_settings(base: Source, progress: ProgressOption = None) -> dict[str, Any]:
    """The settings new objects are written with alone before they join ``base``.

    Examples
    --------
    >>> import pathlib, tempfile
    >>> import numpy as np
    >>> import zarr_vectors as zv
    >>> path = pathlib.Path(tempfile.mkdtemp()) / "lines.zarr"
    >>> lines = [np.cumsum(np.ones((10, 3)), axis=0) + k for k in range(2)]
    >>> zv.write_polylines(path, lines, chunk_shape=8.0)
    >>> from zarr_vectors.update import open_source
    >>> settings = store_settings(open_source(path))
    >>> settings["chunk_shape"], settings["bin_shape"]
    ((8.0, 8.0, 8.0), (2.0, 2.0, 2.0))
    """
    return {
        "chunk_shape": base.root.chunk_shape,
        "bin_shape": base.root.base_bin_shape,
        "options": options_of(base),
        "progress": progress,
    }


def _ids(first: int, object_ids: Any, labels: np.ndarray | None, m: int) -> Any:
    """Ids of new objects: given, else their labels, else the ids after the store's.

    Labels ``0..m-1`` (or none) count as no labels: the new objects continue the store's
    default numbering, as in one write of the old and new input.
    """
    if object_ids is not None:
        return object_ids
    if labels is not None and not np.array_equal(labels, np.arange(m)):
        return None
    return np.arange(first, first + m, dtype=np.int64)


def _grouped_ids(first: int, object_ids: Any, positions: Any, vertex_objects: Any) -> Any:
    grouping = group_vertices(vertex_objects, inputs.positions(positions).shape[0])
    return _ids(first, object_ids, grouping.labels, grouping.n_objects)


def continuing_ids(kind: str, first: int, arguments: Mapping[str, Any]) -> Any:
    """Object ids for a batch of new objects whose default ids start at ``first``.

    Parameters
    ----------
    kind
        The geometry kind.
    first
        Objects stored (or written) before the batch.
    arguments
        The batch's arguments to the kind's ``write_*`` function, by name.

    Returns
    -------
    Any
        ``object_ids`` to write the batch with: the given ids, None for the labels of
        ``vertex_objects``, or ``first, first + 1, …``.

    Examples
    --------
    >>> import numpy as np
    >>> lines = [np.zeros((3, 3)), np.ones((2, 3))]
    >>> continuing_ids("polyline", 5, {"polylines": lines}).tolist()
    [5, 6]
    >>> continuing_ids("polyline", 5, {"polylines": lines, "object_ids": [9, 4]})
    [9, 4]
    """
    ids = arguments.get("object_ids")
    if geometry_kind(kind).ordered:
        return _ids(first, ids, None, split_polylines(arguments["polylines"])[1].shape[0] - 1)
    return _grouped_ids(first, ids, arguments["positions"], arguments.get("vertex_objects"))


def _stored_dtypes(base: Source, prefix: str) -> dict[str, np.dtype[Any]]:
    """dtypes of the per-chunk arrays under ``prefix/`` of ``base``, by name."""
    start = f"{prefix}/"
    return {
        path[len(start) :]: array.layout.dtype
        for path, array in base.arrays.items()
        if path.startswith(start)
    }


def _fit_columns(
    values: Any, stored: Mapping[str, np.dtype[Any]], what: str, holder: str
) -> dict[str, Any] | None:
    """Named columns with those ``holder`` stores safely cast to its dtypes; names,
    shapes and the rest are checked by the writer and the merge."""
    if values is None:
        return None
    out: dict[str, Any] = {}
    for name, column in inputs.mapping(values, what).items():
        arr = inputs.array(column, f"{what}[{name!r}]")
        if name in stored and arr.dtype.kind in "biuf":
            arr = inputs.cast_to(arr, stored[name], f"{what}[{name!r}]", holder)
        out[name] = arr
    return out


def fit_arguments(
    kind: str, base: Source, arguments: Mapping[str, Any], holder: str
) -> dict[str, Any]:
    """A batch's arguments to the kind's ``write_*`` function with its positions and
    columns cast to the dtypes ``base`` stores, where numpy casts them safely (float32
    positions into a float64 store...).

    Parameters
    ----------
    kind
        The geometry kind.
    base
        The store the batch joins (or the first batch of a streaming write).
    arguments
        The batch's arguments by name.
    holder
        How messages name ``base`` (``"the store"``, ``"the first batch"``).

    Raises
    ------
    InvalidInputError
        For a cast that can lose values, naming the argument and the ``.astype(...)``
        that does it on purpose.

    Examples
    --------
    >>> import pathlib, tempfile
    >>> import numpy as np
    >>> import zarr_vectors as zv
    >>> from zarr_vectors.update import open_source
    >>> path = pathlib.Path(tempfile.mkdtemp()) / "lines.zarr"
    >>> lines = [np.cumsum(np.ones((10, 3), np.float32), axis=0) for _ in range(2)]
    >>> zv.write_polylines(path, lines, chunk_shape=8.0)
    >>> new = [np.zeros((4, 3), np.float16)]
    >>> fitted = fit_arguments("polyline", open_source(path), {"polylines": new}, "the store")
    >>> fitted["polylines"][0].dtype
    dtype('float32')
    """
    out = dict(arguments)
    dtype = base.arrays[VERTICES].layout.dtype
    if geometry_kind(kind).ordered:
        vertices, offsets = split_polylines(out["polylines"])
        out["polylines"] = (inputs.cast_to(vertices, dtype, "polylines", holder), offsets)
    else:
        positions = inputs.positions(out["positions"])
        out["positions"] = inputs.cast_to(positions, dtype, "positions", holder)
    vertex = _stored_dtypes(base, ATTRIBUTES)
    link = _stored_dtypes(base, LINK_ATTRIBUTES)
    objects = {name: column.dtype for name, column in base.object_columns.items()}
    groups = {} if base.groups is None else {k: v.dtype for k, v in base.groups.attributes.items()}
    for key, stored in (
        ("attributes", vertex),
        ("edge_attributes", link),
        ("face_attributes", link),
        ("object_attributes", objects),
        ("group_attributes", groups),
    ):
        if out.get(key) is not None:
            out[key] = _fit_columns(out[key], stored, key, holder)
    for key in ("radius", "swc_type"):
        if out.get(key) is not None and key in vertex:
            out[key] = inputs.cast_to(inputs.array(out[key], key), vertex[key], key, holder)
    return out


@shared_docs
def append_polylines(
    store: StoreLike,
    polylines: Any,
    **columns: Unpack[ObjectAppendArgs],
) -> None:
    """Add polylines or streamlines to an existing store of that kind.

    The same as :func:`~zarr_vectors.write_polylines` with ``mode="a"``.

    Parameters
    ----------
    store
        An existing polyline or streamline store (a local path or a writable zarr store).
    polylines, attributes, object_attributes, group_attributes
        The new objects, as for :func:`~zarr_vectors.write_polylines`; attribute names
        and row shapes must match the store's. Positions and columns are cast to the
        store's dtypes when numpy casts them safely (float32 into float64); a cast that
        can lose values is refused with the ``.astype(...)`` to use.
    object_ids
        Ids of the new objects; they must differ from the store's. Default: the ids that
        follow the store's (its object count onwards).
    groups
        New groups of new objects (by id); a group name must not exist in the store.
    {append_progress}

    {append_raises}

    Notes
    -----
    The store becomes, byte for byte apart from ``creation_timestamp`` and ``commit``, the store
    :func:`~zarr_vectors.write_polylines` writes for the old objects followed by the new
    ones (but for the fragment-blob blocks of a store an earlier writer wrote, which stay).
    Chunks without new vertices are not rewritten (only moved when the new data lie below
    the grid origin, and re-indexed when a chunk outgrows ``N_max``). A local store is
    changed in a sibling directory swapped in at the end, so a failed append leaves it
    as it was; other stores are changed in place, and an interrupted append leaves them
    incomplete (spec §2.4), never wrong.

    {example_setup}
    >>> line = np.array([[0, 0, 0], [1, 1, 1]], dtype=np.float32)
    >>> zv.write_polylines(path, [line], chunk_shape=4.0, progress=False)
    >>> zv.append_polylines(path, [line + 1, line + 2], progress=False)
    >>> zv.open(path).object_count
    3
    """
    write_polylines(
        store,
        polylines,
        mode="a",
        **columns,
    )


@shared_docs
def append_graph(
    store: StoreLike,
    positions: Any,
    edges: Any,
    *,
    vertex_objects: Any = None,
    edge_attributes: Mapping[str, Any] | None = None,
    **columns: Unpack[ObjectAppendArgs],
) -> None:
    """Add graph objects (components) to an existing graph store.

    The same as :func:`~zarr_vectors.write_graph` with ``mode="a"``: parameters are
    those of :func:`~zarr_vectors.write_graph` (``directed`` is the store's). Object ids
    default to the labels of ``vertex_objects``; labels ``0..m-1`` (or no labels) mean
    the ids that follow the store's. See :func:`append_polylines` for what the store
    becomes and what happens on failure.

    Parameters
    ----------
    {append_progress}

    {append_raises}

    {example_setup}
    >>> positions = np.array([[0, 0, 0], [1, 0, 0]], dtype=np.float32)
    >>> zv.write_graph(path, positions, [[0, 1]], chunk_shape=4.0, progress=False)
    >>> zv.append_graph(path, positions + 1, [[0, 1]], progress=False)
    >>> zv.open(path).object_count
    2
    """
    write_graph(
        store,
        positions,
        edges,
        vertex_objects=vertex_objects,
        edge_attributes=edge_attributes,
        mode="a",
        **columns,
    )


@shared_docs
def append_skeletons(
    store: StoreLike,
    positions: Any,
    parents: Any = None,
    *,
    edges: Any = None,
    vertex_objects: Any = None,
    radius: Any = None,
    swc_type: Any = None,
    **columns: Unpack[ObjectAppendArgs],
) -> None:
    """Add skeletons to an existing skeleton store.

    The same as :func:`~zarr_vectors.write_skeletons` with ``mode="a"``: parameters are
    those of :func:`~zarr_vectors.write_skeletons`; ids as for :func:`append_graph`.
    ``swc_compatible`` stays true only if the new skeletons are SWC compatible too.

    Parameters
    ----------
    {append_progress}

    {append_raises}

    {example_setup}
    >>> chain = np.arange(9, dtype=np.float32).reshape(3, 3)   # three nodes, root first
    >>> zv.write_skeletons(path, chain, [-1, 0, 1], chunk_shape=4.0, progress=False)
    >>> zv.append_skeletons(path, chain[:2] + 10, [-1, 0], progress=False)
    >>> zv.open(path).vertex_count
    5
    """
    write_skeletons(
        store,
        positions,
        parents,
        edges=edges,
        vertex_objects=vertex_objects,
        radius=radius,
        swc_type=swc_type,
        mode="a",
        **columns,
    )


@shared_docs
def append_mesh(
    store: StoreLike,
    positions: Any = None,
    faces: Any = None,
    *,
    vertex_objects: Any = None,
    allow_degenerate: bool = False,
    face_attributes: Mapping[str, Any] | None = None,
    vertices: Any = None,
    **columns: Unpack[ObjectAppendArgs],
) -> None:
    """Add meshes to an existing mesh store.

    The same as :func:`~zarr_vectors.write_mesh` with ``mode="a"``: parameters are those
    of :func:`~zarr_vectors.write_mesh`; ``winding_order`` and ``closed_surface`` are the
    store's (a closed store needs closed new meshes). Ids as for :func:`append_graph`.
    Face sentinels of the stored meshes are rewritten when the grid or ``N_max`` changes
    (spec §10.7).

    Parameters
    ----------
    {append_progress}

    {append_raises}

    {example_setup}
    >>> positions = np.array([[0, 0, 0], [1, 0, 0], [1, 1, 0]], dtype=np.float32)
    >>> zv.write_mesh(path, positions, [[0, 1, 2]], chunk_shape=4.0, progress=False)
    >>> zv.append_mesh(path, positions + 1, [[0, 1, 2]], progress=False)
    >>> zv.open(path).object_count
    2
    """
    write_mesh(
        store,
        positions,
        faces,
        vertex_objects=vertex_objects,
        allow_degenerate=allow_degenerate,
        face_attributes=face_attributes,
        vertices=vertices,
        mode="a",
        **columns,
    )


# A registry (as numcodecs registers codecs): mode="a" of an object writer runs this.
writer_arguments.register_append(("objects",), _append_objects)
