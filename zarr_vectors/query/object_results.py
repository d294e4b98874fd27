"""Object results reshaped without reading again: objects repeated in the order asked,
and results clipped to a region with the links among the kept vertices (spec §8.2).
"""

from __future__ import annotations

import numpy as np

from zarr_vectors.kernels import concat_ranges
from zarr_vectors.query.regions import BoxRegion, Region
from zarr_vectors.result import QueryResult

__all__ = ["clip", "clip_to_region", "repeated_objects"]


def repeated_objects(result: QueryResult, take: np.ndarray) -> QueryResult:
    """The objects ``take`` (indices into ``result``'s objects, repeats allowed), in order.

    Each copy gets its own rows, and its links (edges or faces, whose entries are rows of
    ``result``) with their per-link attributes, re-based onto those rows; a link belongs
    to the object of its first entry. Links come object by object, each object's in the
    order ``result`` holds them. Linear in the output size (plus a sort of the links).

    Parameters
    ----------
    result
        A read of distinct objects (``offsets`` and ``object_ids`` set).
    take
        ``(k,)`` integer indices into ``result``'s objects.

    Returns
    -------
    QueryResult
        ``k`` objects.
    """
    assert result.offsets is not None
    assert result.object_ids is not None
    offsets = result.offsets
    sizes = np.diff(offsets)[take]
    new_offsets = np.concatenate([[0], np.cumsum(sizes)]).astype(np.int64)
    rows = concat_ranges(offsets[:-1][take], sizes)
    links = result.edges if result.edges is not None else result.faces
    link_rows, new_links = (
        (np.empty(0, np.int64), None)
        if links is None
        else _repeated_links(links, offsets, take, new_offsets)
    )
    return QueryResult(
        positions=result.positions[rows],
        attributes={k: v[rows] for k, v in result.attributes.items()},
        vertex_object_ids=None
        if result.vertex_object_ids is None
        else result.vertex_object_ids[rows],
        object_ids=result.object_ids[take],
        offsets=new_offsets,
        edges=new_links if result.edges is not None else None,
        faces=new_links if result.faces is not None else None,
        object_attributes={k: v[take] for k, v in result.object_attributes.items()},
        link_attributes={k: v[link_rows] for k, v in result.link_attributes.items()},
        axis_names=result.axis_names,
        axis_units=result.axis_units,
        kind=result.kind,
    )


def _repeated_links(
    links: np.ndarray, offsets: np.ndarray, take: np.ndarray, new_offsets: np.ndarray
) -> tuple[np.ndarray, np.ndarray]:
    """The rows of ``links`` of the objects ``take``, in order, and those links re-based.

    Entries are rows of the objects ``offsets`` delimits; each taken copy's links are moved
    by the shift of its rows (``new_offsets``). Negative entries stay as they are.
    """
    owner = (
        np.searchsorted(offsets, links[:, 0], side="right") - 1 if links.shape[0] else links[:, 0]
    )
    by_owner = np.argsort(owner, kind="stable")
    n_objects = offsets.shape[0] - 1
    bounds = np.searchsorted(owner[by_owner], np.arange(n_objects + 1))
    counts = np.diff(bounds)[take]
    link_rows = by_owner[concat_ranges(bounds[:-1][take], counts)]
    shift = np.repeat(new_offsets[:-1] - offsets[:-1][take], counts)
    picked = links[link_rows]
    moved = np.where(picked >= 0, picked + shift[:, None], picked)
    return link_rows, moved.astype(np.int64)


def _kept_chain_links(
    keep: np.ndarray, new_row: np.ndarray, object_of_row: np.ndarray
) -> np.ndarray:
    """``(E, 2)`` clipped rows ``[r, r + 1]`` of two consecutive rows of one polyline, both kept.

    ``keep`` marks the kept rows of the whole result, ``new_row`` their clipped rows and
    ``object_of_row`` each row's object.
    """
    both = keep[:-1] & keep[1:] & (object_of_row[:-1] == object_of_row[1:])
    first = new_row[:-1][both]
    return np.stack([first, first + 1], axis=1).astype(np.int64)


def clip(result: QueryResult, lo: np.ndarray, hi: np.ndarray) -> QueryResult:
    """Keep the vertices of ``result`` inside ``[lo, hi)`` and the links among them (§8.2)."""
    return clip_to_region(result, BoxRegion(lo, hi))


def clip_to_region(result: QueryResult, region: Region) -> QueryResult:
    """Keep the vertices of ``result`` inside ``region`` and the links among them (§8.2).

    A polyline or streamline's links are its consecutive vertices, which a clipped result's
    ``offsets`` cannot keep apart once the object leaves the region and comes back: its kept
    links go to ``edges`` (``[r, r + 1]`` pairs of the clipped rows), so no two returned
    vertices are linked unless they are consecutive in the input and both in the region.
    """
    assert result.offsets is not None
    keep = region.contains_points(result.positions)
    new_row = np.cumsum(keep) - 1
    object_of_row = np.repeat(np.arange(result.offsets.shape[0] - 1), np.diff(result.offsets))
    counts = np.bincount(object_of_row[keep], minlength=result.offsets.shape[0] - 1)

    chained = result.edges is None and result.faces is None
    present = result.edges if result.edges is not None else result.faces
    whole = np.all(keep[present], axis=1) if present is not None else np.zeros(0, dtype=bool)

    def links(values: np.ndarray | None) -> np.ndarray | None:
        if values is None:
            return None
        return np.asarray(new_row[values[whole]], dtype=np.int64)

    return QueryResult(
        positions=result.positions[keep],
        attributes={k: v[keep] for k, v in result.attributes.items()},
        vertex_object_ids=None
        if result.vertex_object_ids is None
        else result.vertex_object_ids[keep],
        object_ids=result.object_ids,
        offsets=np.concatenate([[0], np.cumsum(counts)]).astype(np.int64),
        edges=_kept_chain_links(keep, new_row, object_of_row) if chained else links(result.edges),
        faces=links(result.faces),
        object_attributes=result.object_attributes,
        link_attributes={k: v[whole] for k, v in result.link_attributes.items()},
        axis_names=result.axis_names,
        axis_units=result.axis_units,
        kind=result.kind,
    )
