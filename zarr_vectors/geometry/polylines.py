"""Polylines and streamlines: open chains of vertices (spec §10.4)."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

import numpy as np

from zarr_vectors._progress import ProgressOption
from zarr_vectors.errors import InvalidInputError
from zarr_vectors.format.kinds import KINDS
from zarr_vectors.geometry import _inputs as inputs
from zarr_vectors.geometry import _object_inputs as objects
from zarr_vectors.geometry._objects import ObjectTable, write_objects
from zarr_vectors.geometry._pipeline import WriteOptions
from zarr_vectors.store.io import StoreLike

__all__ = ["split_polylines", "write_polylines"]

_KINDS = tuple(k.name for k in KINDS.values() if k.ordered)


def split_polylines(polylines: Any) -> tuple[np.ndarray, np.ndarray]:
    """``(vertices, offsets)`` from a list of ``(n_i, D)`` arrays or a ``(vertices, offsets)``."""
    if isinstance(polylines, tuple) and len(polylines) == 2:
        vertices = inputs.positions(polylines[0])
        return vertices, objects.offsets(polylines[1], vertices.shape[0])
    if not isinstance(polylines, Sequence) or isinstance(polylines, str | bytes):
        raise InvalidInputError(
            "polylines must be a list of (n_i, D) arrays or (vertices, offsets)"
        )
    if not polylines:
        raise InvalidInputError("polylines is empty; pass (vertices, offsets) for zero objects")
    parts = [inputs.array(p, f"polylines[{k}]") for k, p in enumerate(polylines)]
    dims = {p.shape[1] if p.ndim == 2 else None for p in parts}
    if len(dims) != 1 or None in dims:
        raise InvalidInputError("every polyline must be an (n_i, D) array with the same D")
    vertices = inputs.positions(np.concatenate(parts))
    lengths = np.asarray([p.shape[0] for p in parts], dtype=np.int64)
    return vertices, np.concatenate([[0], np.cumsum(lengths)])


def write_polylines(
    store: StoreLike,
    polylines: Any,
    *,
    kind: str = "polyline",
    chunk_shape: float | Sequence[float] | None = None,
    bin_shape: float | Sequence[float] | None = None,
    attributes: Mapping[str, Any] | None = None,
    object_attributes: Mapping[str, Any] | None = None,
    object_ids: Any = None,
    groups: Mapping[Any, Sequence[int]] | None = None,
    group_attributes: Mapping[str, Any] | None = None,
    units: str | Sequence[str] | None = None,
    overwrite: bool = False,
    options: WriteOptions | None = None,
    progress: ProgressOption = None,
    metadata: Mapping[str, Any] | None = None,
) -> None:
    """Write polylines or streamlines (spec §10.4).

    Parameters
    ----------
    store
        Destination (a path, a ``.zip`` path, a URL or a zarr store).
    polylines
        A list of ``(n_i, D)`` arrays (one per object, in traversal order), or a pair
        ``(vertices, offsets)`` where object k owns ``vertices[offsets[k]:offsets[k+1]]``.
    kind
        ``"polyline"`` or ``"streamline"`` (tractography; see ``metadata``).
    chunk_shape, bin_shape
        As :func:`zarr_vectors.write_points`.
    attributes
        Per-vertex columns (one row per vertex, in input order).
    object_attributes
        Per-object columns (one row per polyline).
    object_ids
        The id of each polyline (distinct integers; default 0..m-1). Reads and queries
        use and return these ids.
    groups
        ``{name_or_id: [object ids]}``: bundles, tracts...
    group_attributes
        Per-group columns (one row per group, in the order of ``groups``).
    units
        Unit of the coordinates: one name for every axis (``"micrometer"``) or one per
        axis, as for :func:`zarr_vectors.write_points`.
    overwrite
        Replace an existing store.
    options
        Less common settings.
    progress
        Progress bar over the chunks written: None (default) on a terminal or in Jupyter,
        True always, False never, or a callable ``progress(stage, done, total)``.
    metadata
        Type-specific root keys (spec §3.4), e.g. ``{"step_size": 0.5}`` for streamlines.

    Raises
    ------
    InvalidInputError
        For malformed input, before anything is written.
    """
    if kind not in _KINDS:
        raise InvalidInputError(f"kind must be one of {', '.join(map(repr, _KINDS))}, got {kind!r}")
    options = inputs.check_settings(
        kind,
        chunk_shape=chunk_shape,
        bin_shape=bin_shape,
        overwrite=overwrite,
        options=options,
        units=units,
    )
    vertices, offsets = split_polylines(polylines)
    m = offsets.shape[0] - 1
    ids = objects.object_ids(object_ids, m)
    table = ObjectTable(
        kind=kind,
        positions=vertices,
        offsets=offsets,
        links=np.empty((0, 2), np.int64),  # implicit: each vertex to the next
        vertex_attributes=objects.vertex_attributes(attributes, vertices.shape[0]),
        object_attributes=objects.object_attributes(object_attributes, m),
        object_ids=ids,
        groups=objects.parse_groups(groups, group_attributes, ids, m),
        root_extra=dict(metadata or {}),
    )
    write_objects(
        store,
        table,
        chunk_shape=chunk_shape,
        bin_shape=bin_shape,
        overwrite=overwrite,
        options=options,
        progress=progress,
    )
