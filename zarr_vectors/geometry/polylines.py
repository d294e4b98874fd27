"""Polylines and streamlines: open chains of vertices (spec §10.4)."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any, Unpack

import numpy as np

from zarr_vectors.errors import InvalidInputError
from zarr_vectors.format.kinds import KINDS
from zarr_vectors.geometry._docstrings import shared_docs
from zarr_vectors.store.io import StoreLike
from zarr_vectors.write import (
    KindWriter,
    ObjectTable,
    ObjectWriteArgs,
    inputs,
    polyline_level_builder,
    write_kind,
)
from zarr_vectors.write import object_inputs as objects

__all__ = ["POLYLINES", "prepare_polylines", "split_polylines", "write_polylines"]

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


@shared_docs
def write_polylines(
    store: StoreLike,
    polylines: Any,
    *,
    kind: str = "polyline",
    metadata: Mapping[str, Any] | None = None,
    levels: Any = None,
    **settings: Unpack[ObjectWriteArgs],
) -> None:
    """Write polylines or streamlines (spec §10.4).

    Parameters
    ----------
    {store}
    polylines
        A list of ``(n_i, D)`` arrays (one per object, in traversal order), or a pair
        ``(vertices, offsets)`` where object k owns ``vertices[offsets[k]:offsets[k+1]]``.
    kind
        ``"polyline"`` or ``"streamline"`` (tractography; see ``metadata``).
    metadata
        Type-specific root keys (spec §3.4), e.g. ``{"step_size": 0.5}`` for streamlines.
    levels
        Levels of detail to write above level 0 (format 1.3, spec §4.3.3): None or 0 (none,
        the default), ``"auto"`` (until a level holds at most 100,000 vertices), a count,
        or a :class:`~zarr_vectors.Levels`. Each run of an object's vertices in one coarse
        bin becomes one vertex (method ``"runs"``: end points and order kept); vertex
        attributes are carried from each kept vertex, object attributes and groups are
        level 0's. Not with ``mode="a"``.
    {object_settings}

    {write_raises}

    {example_setup}
    >>> lines = [np.array([[0, 0, 0], [1, 1, 1], [2, 2, 2]], dtype=np.float32),
    ...          np.array([[5, 5, 5], [6, 6, 6]], dtype=np.float32)]
    >>> zv.write_polylines(path, lines, kind="streamline", chunk_shape=4.0, progress=False)
    >>> store = zv.open(path)
    >>> store.kind, store.object_count, store.vertex_count
    ('streamline', 2, 5)
    >>> lod = pathlib.Path(tempfile.mkdtemp()) / "lod.zarr"
    >>> zv.write_polylines(lod, lines, chunk_shape=4.0, levels=1, progress=False)
    >>> zv.open(lod).metadata["multiscales"][0]["datasets"][1]["bin_ratio"]
    [2, 2, 2]
    """
    if kind not in _KINDS:
        raise InvalidInputError(f"kind must be one of {', '.join(map(repr, _KINDS))}, got {kind!r}")
    store_wide = {"kind": kind, "metadata": metadata}
    write_kind(store, POLYLINES, {"polylines": polylines}, store_wide, settings, levels)


def prepare_polylines(
    batch: Mapping[str, Any],
    *,
    kind: str = "polyline",
    metadata: Mapping[str, Any] | None = None,
) -> ObjectTable:
    """The object table of polylines or streamlines: ``batch`` holds
    :func:`write_polylines`'s data and per-object arguments by name.

    Raises
    ------
    InvalidInputError
        For malformed input.
    """
    vertices, offsets = split_polylines(batch["polylines"])
    m = offsets.shape[0] - 1
    ids = objects.object_ids(batch.get("object_ids"), m)
    groups = objects.parse_groups(batch.get("groups"), batch.get("group_attributes"), ids, m)
    return ObjectTable(
        kind=kind,
        positions=vertices,
        offsets=offsets,
        links=np.empty((0, 2), np.int64),  # implicit: each vertex to the next
        vertex_attributes=objects.vertex_attributes(batch.get("attributes"), vertices.shape[0]),
        object_attributes=objects.object_attributes(batch.get("object_attributes"), m),
        object_ids=ids,
        groups=groups,
        root_extra=dict(metadata or {}),
    )


POLYLINES = KindWriter(
    writer="write_polylines",
    kinds=_KINDS,
    data=("polylines",),
    required=("polylines",),
    keywords=(),
    store_wide=("kind", "metadata"),
    prepare=prepare_polylines,
    levels=polyline_level_builder,
)
"""What :func:`write_polylines` takes, for the streaming, append and parallel writers."""
