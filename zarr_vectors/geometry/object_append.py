"""Appending objects to an existing store (spec §2.4, §10.3).

Each ``append_*`` function validates and writes the new objects alone, with the one-shot
writer and the store's own settings, into a scratch store, then merges that into the store
(:mod:`zarr_vectors.geometry.object_merge`). The store becomes, byte for byte apart from
``creation_timestamp`` and ``commit``, the store one write of the old objects followed by
the new ones gives. A store an earlier writer wrote with longer fragment-blob blocks (spec
§9.2) keeps them, so that chunks without new objects keep their bytes.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from typing import Any

import numpy as np

from zarr_vectors._progress import ProgressOption, progress_reporter
from zarr_vectors.errors import InvalidInputError
from zarr_vectors.format.commits import COMMIT_KEY
from zarr_vectors.format.kinds import geometry_kind
from zarr_vectors.format.names import ATTRIBUTES, LINK_ATTRIBUTES, VERTICES
from zarr_vectors.geometry import _inputs as inputs
from zarr_vectors.geometry.graphs import group_vertices, write_graph, write_skeletons
from zarr_vectors.geometry.meshes import write_mesh
from zarr_vectors.geometry.object_merge import merge_stores
from zarr_vectors.geometry.object_sources import Source, open_source, options_of
from zarr_vectors.geometry.polylines import split_polylines, write_polylines
from zarr_vectors.store.io import StoreIO, StoreLike, scratch_store
from zarr_vectors.store.writer_lock import writer_lock

__all__ = [
    "append_graph",
    "append_mesh",
    "append_polylines",
    "append_skeletons",
    "continuing_ids",
    "fit_arguments",
]

BatchWriter = Callable[[StoreLike, dict[str, Any], Source], None]
"""Writes the new objects alone into a scratch store, given the store's settings."""


def _append(
    store: StoreLike, kinds: tuple[str, ...], write: BatchWriter, progress: ProgressOption
) -> None:
    with writer_lock(store):  # another append waits: its batch goes after this one
        _append_locked(store, kinds, write, progress)


def _append_locked(
    store: StoreLike, kinds: tuple[str, ...], write: BatchWriter, progress: ProgressOption
) -> None:
    base = open_source(store)
    if base.kind not in kinds:
        raise InvalidInputError(
            f"cannot append {' or '.join(kinds)} objects to a {base.kind} store"
        )
    settings = {
        "chunk_shape": base.root.chunk_shape,
        "bin_shape": base.root.base_bin_shape,
        "options": options_of(base),
    }
    with progress_reporter(progress) as report:
        scratch = scratch_store()
        write(scratch, {**settings, "progress": report}, base)
        batch = open_source(StoreIO(scratch))
        merge_stores(store, [base, batch], has_base=True, progress=report)


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
    """
    ids = arguments.get("object_ids")
    if geometry_kind(kind).ordered:
        return _ids(first, ids, None, split_polylines(arguments["polylines"])[1].shape[0] - 1)
    positions = arguments["vertices"] if geometry_kind(kind).faces else arguments["positions"]
    return _grouped_ids(first, ids, positions, arguments.get("vertex_objects"))


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
    """
    out = dict(arguments)
    dtype = base.arrays[VERTICES].layout.dtype
    if geometry_kind(kind).ordered:
        vertices, offsets = split_polylines(out["polylines"])
        out["polylines"] = (inputs.cast_to(vertices, dtype, "polylines", holder), offsets)
    else:
        key = "vertices" if geometry_kind(kind).faces else "positions"
        out[key] = inputs.cast_to(inputs.positions(out[key], key), dtype, key, holder)
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


def _user_extra(root: Any) -> dict[str, Any]:
    return {k: v for k, v in root.extra.items() if k not in ("software", COMMIT_KEY)}


def append_polylines(
    store: StoreLike,
    polylines: Any,
    *,
    attributes: Mapping[str, Any] | None = None,
    object_attributes: Mapping[str, Any] | None = None,
    object_ids: Any = None,
    groups: Mapping[Any, Sequence[int]] | None = None,
    group_attributes: Mapping[str, Any] | None = None,
    progress: ProgressOption = None,
) -> None:
    """Add polylines or streamlines to an existing store of that kind.

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
    progress
        Progress bars over the chunks written and merged: None (default) on a terminal or
        in Jupyter, True always, False never, or a callable ``progress(stage, done, total)``.

    Raises
    ------
    InvalidInputError
        For malformed input or input that does not match the store; nothing changes then.
    ConcurrentWriteError
        When another writer committed meanwhile without taking turns (spec §12.3); nothing
        changes then.

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
    """

    def write(scratch: StoreLike, settings: dict[str, Any], base: Source) -> None:
        given = {
            "polylines": polylines,
            "attributes": attributes,
            "object_attributes": object_attributes,
            "groups": groups,
            "group_attributes": group_attributes,
        }
        fitted = fit_arguments(base.kind, base, given, "the store")
        write_polylines(
            scratch,
            kind=base.kind,
            object_ids=_ids(base.n_objects, object_ids, None, fitted["polylines"][1].shape[0] - 1),
            metadata=_user_extra(base.root),
            **fitted,
            **settings,
        )

    _append(store, ("polyline", "streamline"), write, progress)


def append_graph(
    store: StoreLike,
    positions: Any,
    edges: Any,
    *,
    vertex_objects: Any = None,
    object_ids: Any = None,
    attributes: Mapping[str, Any] | None = None,
    object_attributes: Mapping[str, Any] | None = None,
    edge_attributes: Mapping[str, Any] | None = None,
    groups: Mapping[Any, Sequence[int]] | None = None,
    group_attributes: Mapping[str, Any] | None = None,
    progress: ProgressOption = None,
) -> None:
    """Add graph objects (components) to an existing graph store.

    Parameters are those of :func:`~zarr_vectors.write_graph` (``directed`` is the
    store's). Object ids default to the labels of ``vertex_objects``; labels ``0..m-1``
    (or no labels) mean the ids that follow the store's. See :func:`append_polylines`
    for what the store becomes and what happens on failure.

    Parameters
    ----------
    progress
        Progress bars over the chunks written and merged: None (default) on a terminal or
        in Jupyter, True always, False never, or a callable ``progress(stage, done, total)``.

    Raises
    ------
    InvalidInputError
        For malformed input or input that does not match the store; nothing changes then.
    ConcurrentWriteError
        When another writer committed meanwhile without taking turns (spec §12.3); nothing
        changes then.
    """

    def write(scratch: StoreLike, settings: dict[str, Any], base: Source) -> None:
        given = {
            "positions": positions,
            "edges": edges,
            "vertex_objects": vertex_objects,
            "attributes": attributes,
            "object_attributes": object_attributes,
            "edge_attributes": edge_attributes,
            "groups": groups,
            "group_attributes": group_attributes,
        }
        fitted = fit_arguments("graph", base, given, "the store")
        write_graph(
            scratch,
            directed=bool(base.root.extra.get("is_directed", False)),
            object_ids=_grouped_ids(base.n_objects, object_ids, positions, vertex_objects),
            **fitted,
            **settings,
        )

    _append(store, ("graph",), write, progress)


def append_skeletons(
    store: StoreLike,
    positions: Any,
    *,
    parents: Any = None,
    edges: Any = None,
    vertex_objects: Any = None,
    object_ids: Any = None,
    radius: Any = None,
    swc_type: Any = None,
    attributes: Mapping[str, Any] | None = None,
    object_attributes: Mapping[str, Any] | None = None,
    groups: Mapping[Any, Sequence[int]] | None = None,
    group_attributes: Mapping[str, Any] | None = None,
    progress: ProgressOption = None,
) -> None:
    """Add skeletons to an existing skeleton store.

    Parameters are those of :func:`~zarr_vectors.write_skeletons`; ids as for
    :func:`append_graph`. ``swc_compatible`` stays true only if the new skeletons are SWC
    compatible too.

    Parameters
    ----------
    progress
        Progress bars over the chunks written and merged: None (default) on a terminal or
        in Jupyter, True always, False never, or a callable ``progress(stage, done, total)``.

    Raises
    ------
    InvalidInputError
        For malformed input or input that does not match the store; nothing changes then.
    ConcurrentWriteError
        When another writer committed meanwhile without taking turns (spec §12.3); nothing
        changes then.
    """

    def write(scratch: StoreLike, settings: dict[str, Any], base: Source) -> None:
        given = {
            "positions": positions,
            "parents": parents,
            "edges": edges,
            "vertex_objects": vertex_objects,
            "radius": radius,
            "swc_type": swc_type,
            "attributes": attributes,
            "object_attributes": object_attributes,
            "groups": groups,
            "group_attributes": group_attributes,
        }
        fitted = fit_arguments("skeleton", base, given, "the store")
        write_skeletons(
            scratch,
            object_ids=_grouped_ids(base.n_objects, object_ids, positions, vertex_objects),
            **fitted,
            **settings,
        )

    _append(store, ("skeleton",), write, progress)


def append_mesh(
    store: StoreLike,
    vertices: Any,
    faces: Any,
    *,
    vertex_objects: Any = None,
    object_ids: Any = None,
    allow_degenerate: bool = False,
    attributes: Mapping[str, Any] | None = None,
    object_attributes: Mapping[str, Any] | None = None,
    face_attributes: Mapping[str, Any] | None = None,
    groups: Mapping[Any, Sequence[int]] | None = None,
    group_attributes: Mapping[str, Any] | None = None,
    progress: ProgressOption = None,
) -> None:
    """Add meshes to an existing mesh store.

    Parameters are those of :func:`~zarr_vectors.write_mesh`; ``winding_order`` and
    ``closed_surface`` are the store's (a closed store needs closed new meshes). Ids as
    for :func:`append_graph`. Face sentinels of the stored meshes are rewritten when the
    grid or ``N_max`` changes (spec §10.7).

    Parameters
    ----------
    progress
        Progress bars over the chunks written and merged: None (default) on a terminal or
        in Jupyter, True always, False never, or a callable ``progress(stage, done, total)``.

    Raises
    ------
    InvalidInputError
        For malformed input or input that does not match the store; nothing changes then.
    ConcurrentWriteError
        When another writer committed meanwhile without taking turns (spec §12.3); nothing
        changes then.
    """

    def write(scratch: StoreLike, settings: dict[str, Any], base: Source) -> None:
        given = {
            "vertices": vertices,
            "faces": faces,
            "vertex_objects": vertex_objects,
            "allow_degenerate": allow_degenerate,
            "attributes": attributes,
            "object_attributes": object_attributes,
            "face_attributes": face_attributes,
            "groups": groups,
            "group_attributes": group_attributes,
        }
        fitted = fit_arguments("mesh", base, given, "the store")
        write_mesh(
            scratch,
            object_ids=_grouped_ids(base.n_objects, object_ids, vertices, vertex_objects),
            winding_order=str(base.root.extra.get("winding_order", "ccw")),
            closed_surface=bool(base.root.extra.get("closed_surface", False)),
            **fitted,
            **settings,
        )

    _append(store, ("mesh",), write, progress)
