"""Streamline stores into tractograms: the subset, the names, groups and the header's space
(see :mod:`zarr_vectors.converters.tractograms`)."""

from __future__ import annotations

from typing import Any

import numpy as np

from zarr_vectors.converters._tract_header import Space, space_of_bounds, space_of_reference
from zarr_vectors.converters._tract_import import KEPT
from zarr_vectors.converters._tract_io import Tracts
from zarr_vectors.dataset import VectorStore
from zarr_vectors.errors import InvalidInputError
from zarr_vectors.result import QueryResult

__all__ = ["kept_header", "store_tracts", "tract_space"]


def kept_header(store: VectorStore) -> dict[str, Any]:
    """What the import kept of the file's header (empty for other stores)."""
    custom = store.metadata.get("custom_metadata")
    kept = custom.get(KEPT) if isinstance(custom, dict) else None
    return kept if isinstance(kept, dict) else {}


def _original_names(kept: dict[str, Any], kind: str) -> dict[str, str]:
    """``{store name: file name}`` of the columns of ``kind`` (dpv, dps, dpg) renamed at import."""
    names = kept.get("names")
    mapping = names.get(kind) if isinstance(names, dict) else None
    if not isinstance(mapping, dict):
        return {}
    return {str(k): str(v) for k, v in mapping.items()}


def _read_subset(store: VectorStore, ids: Any, group: Any) -> QueryResult:
    """The objects ``ids`` (in that order), the members of ``group``, or every object."""
    if ids is not None and group is not None:
        raise InvalidInputError("give ids= or group=, not both")
    if ids is not None:
        return store.read_objects(ids)
    if group is not None:
        return store.query(group=group)
    return store.read()


def store_tracts(store: VectorStore, kept: dict[str, Any], ids: Any, group: Any) -> Tracts:
    """The streamlines of ``store`` (or of ``ids`` or ``group``) under the file's names.

    Raises
    ------
    InvalidInputError
        When both ``ids`` and ``group`` are given.
    ObjectNotFoundError
        When an id or the group is not in the store.
    """
    result = _read_subset(store, ids, group)
    assert result.offsets is not None
    assert result.object_ids is not None
    dpv, dps = _original_names(kept, "dpv"), _original_names(kept, "dps")
    fields = kept.get("tck_fields")
    groups, dpg = _groups(store, result.object_ids, kept, ids is not None or group is not None)
    return Tracts(
        positions=result.positions,
        offsets=np.asarray(result.offsets, dtype=np.int64),
        dpv={dpv.get(k, k): v for k, v in result.attributes.items()},
        dps={dps.get(k, k): v for k, v in result.object_attributes.items()},
        groups=groups,
        dpg=dpg,
        fields={str(k): str(v) for k, v in fields.items()} if isinstance(fields, dict) else {},
    )


def _indices_of(members: np.ndarray, order: np.ndarray, sorted_ids: np.ndarray) -> np.ndarray:
    """Positions in the export of the objects ``members`` (those exported), ascending."""
    if not sorted_ids.size or not members.size:
        return np.empty(0, np.int64)
    pos = np.minimum(np.searchsorted(sorted_ids, members), sorted_ids.shape[0] - 1)
    hit = sorted_ids[pos] == members
    return np.sort(order[pos[hit]]).astype(np.int64)


def _groups(
    store: VectorStore, object_ids: np.ndarray, kept: dict[str, Any], subset: bool
) -> tuple[dict[str, np.ndarray], dict[str, dict[str, np.ndarray]]]:
    """The store's groups as export indices, and their group attributes as dpg."""
    members = store.groups
    if not members:
        return {}, {}
    columns = store.group_attributes
    names = _original_names(kept, "dpg")
    absent = kept.get("dpg_absent")
    absent = absent if isinstance(absent, dict) else {}
    order = np.argsort(object_ids, kind="stable")
    sorted_ids = object_ids[order]
    groups: dict[str, np.ndarray] = {}
    dpg: dict[str, dict[str, np.ndarray]] = {}
    for row, (name, ids) in enumerate(members.items()):
        indices = _indices_of(ids, order, sorted_ids)
        if subset and not indices.size:
            continue
        groups[name] = indices
        values = {
            names.get(k, k): column[row].reshape(-1)
            for k, column in columns.items()
            if name not in absent.get(k, [])
        }
        if values:
            dpg[name] = values
    return groups, dpg


def tract_space(store: VectorStore, kept: dict[str, Any], reference: Any) -> Space:
    """The header's space: ``reference``, else the one kept at import, else from the bounds."""
    if reference is not None:
        return space_of_reference(reference)
    if "voxel_to_rasmm" in kept:
        return Space.from_json(kept)
    return space_of_bounds(store.bounds)
