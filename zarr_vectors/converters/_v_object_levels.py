"""The coarse levels of a layout-V store of an object kind, imported as they are (spec
§4.3.4, §14.3).

0.9.x's ``build_pyramid`` (method ``"per_object"``) gives each coarse level one vertex per
occupied coarse bin at the float64 mean of the kept objects' vertices of the level below
in it, shared between the objects that pass through the bin; an object's vertices are the
bins it passes through (consecutive repeats dropped); objects dropped by its random object
sparsity have empty manifests; no links and no vertex attributes. None of this
format's object methods (§4.3.3) gives those vertices, so each level is written as given,
with the method ``"imported"``: every object's coarse vertices in its manifest order
(a vertex shared by several objects is stored once per object), the recorded ``bin_ratio``
the nearest this format allows (§4.3.1 rule 3) and 0.9.x's own bin in the record.
"""

from __future__ import annotations

from typing import Any

import numpy as np

from zarr_vectors.converters._v_level import read_v_level
from zarr_vectors.converters._v_levels import coarse_levels
from zarr_vectors.format.levels import IMPORTED
from zarr_vectors.store.layout_v import LayoutVStore
from zarr_vectors.write.imported_levels import ImportedLevel, ImportedLevels, nested_ratio

__all__ = ["SOURCE", "imported_levels"]

SOURCE = "zarr-vectors 0.9"
"""The ``coarsening.source`` of a level imported from layout V."""


def _record(source: LayoutVStore, path: str, bins: np.ndarray | None) -> dict[str, Any]:
    """The ``coarsening`` record of the layout-V level ``path`` (``bins``: its bin)."""
    attrs = source.attributes(path).get("zarr_vectors_level", {})
    return {
        "method": IMPORTED,
        "source": SOURCE,
        "source_level": int(path),
        "source_method": str(attrs.get("coarsening_method", "per_object")),
        "source_bin_shape": None if bins is None else [float(b) for b in bins],
    }


def imported_levels(source: LayoutVStore, shapes: dict[str, Any]) -> ImportedLevels | None:
    """Every coarse level of the object store ``source`` (None when it has none), on the
    chunk and bin shape ``shapes`` of the new store.

    Returns
    -------
    ImportedLevels or None
        Levels 1, 2, ... in the store's order, with ``bin_ratio`` 0.9.x's bin over the new
        bin, rounded (twice the level below's when the store does not record the bin),
        then made to nest (:func:`nested_ratio`).
    """
    coarse = coarse_levels(source)
    if not coarse:
        return None
    base = np.asarray(shapes["bin_shape"], dtype=np.float64)
    chunk = np.asarray(shapes["chunk_shape"], dtype=np.float64)
    ndim = len(source.root["chunk_shape"])
    base, chunk = base * np.ones(ndim), chunk * np.ones(ndim)
    per_chunk = np.rint(chunk / base).astype(np.int64)
    ratio = np.ones(ndim, dtype=np.int64)
    levels = []
    for path, bins in coarse:
        wanted = ratio * 2 if bins is None else np.maximum(np.rint(bins / base), 1)
        ratio = nested_ratio(wanted.astype(np.int64), ratio, per_chunk)
        level = read_v_level(source, int(path))
        ids = level.object_ids if level.object_ids is not None else np.empty(0, np.int64)
        offsets = level.object_offsets if level.object_offsets is not None else np.zeros(1)
        counts = np.diff(offsets).astype(np.int64)
        record = _record(source, path, bins)
        levels.append(ImportedLevel(ratio, level.positions, ids, counts, record))
    return ImportedLevels(tuple(levels))
