"""Opening a store for a handle: its root attributes checked, a clear error otherwise.

:func:`load_store` reads what a :class:`~zarr_vectors.dataset.VectorStore` holds of a store (its
I/O, root metadata, version and listed levels); a path that is not a complete store is named
as an interrupted write, a node inside a store, or not a store at all.
"""

from __future__ import annotations

import os
from collections.abc import Mapping
from typing import Any

from zarr_vectors.errors import MetadataError, NotAZarrVectorsStoreError, UnsupportedVersionError
from zarr_vectors.format.metadata import RootMetadata
from zarr_vectors.format.nodes import node_problem
from zarr_vectors.format.version import foreign_layout
from zarr_vectors.store.destination import Occupant, store_occupant
from zarr_vectors.store.io import StoreIO, StoreLike, local_destination, resolve_store
from zarr_vectors.store.versions import StoreVersion
from zarr_vectors.store_summary import level_paths

__all__ = ["load_store", "Loaded"]


_INTERRUPTED = (
    "it looks like an interrupted write (the root metadata is written last, so a killed or "
    "failed write leaves the data without it); remove it, or write the store again with "
    'mode="w"'
)


def _holds_level_data(io: StoreIO) -> bool:
    """Whether the store holds what a write of ours puts down before the root metadata
    (the judgement writers use to decide it may be replaced)."""
    return store_occupant(io).occupant is Occupant.INCOMPLETE


def _root_attributes(io: StoreIO, doc: Any, where: str) -> dict[str, Any]:
    """The root attributes of a readable Zarr Vectors store (``doc``: its root zarr.json).

    Raises
    ------
    NotAZarrVectorsStoreError
        When the store is not a Zarr group, or an incomplete Zarr Vectors store (the
        message then says it looks like an interrupted write and how to clear it).
    UnsupportedVersionError
        When the store was written by zarr-vectors 0.x, in another layout.
    """
    if doc is None:
        if _holds_level_data(io):
            raise NotAZarrVectorsStoreError(f"{where} has no root zarr.json: {_INTERRUPTED}")
        raise NotAZarrVectorsStoreError(f"{where} has no zarr.json: not a Zarr store")
    attrs = doc.get("attributes") if isinstance(doc, dict) else None
    problem = node_problem(doc, "group")
    if problem is not None or not isinstance(attrs, dict):
        raise NotAZarrVectorsStoreError(
            f"{where}: root zarr.json is not a Zarr v3 group ({problem or 'no attributes'}); "
            "open the store's root directory, or restore its zarr.json"
        )
    foreign = foreign_layout(attrs)
    if foreign is not None:
        raise UnsupportedVersionError(f"{where} was {foreign}")
    if "zarr_vectors_version" not in attrs:
        hint = f"; {_INTERRUPTED}" if _holds_level_data(io) else ""
        if hint and not io.is_local:
            hint = f"; {_IN_PLACE}, or {_INTERRUPTED}"
        raise NotAZarrVectorsStoreError(
            f"{where} is a Zarr group but not a complete Zarr Vectors store: its root "
            f"attributes lack 'zarr_vectors_version'{hint}"
        )
    return attrs


_IN_PLACE = (
    "an in-place write may be changing it right now (memory and object stores are appended "
    "to in place, spec §2.4): open it again in a moment"
)

_NODE_DEPTH = 6
"""Parents looked at for the store a path lies in: deep enough for the deepest node,
``N/attributes/<name>/c/i/j/k``."""


def _raise_if_inside_a_store(store: StoreLike, where: str, failure: Exception) -> None:
    """Raise when the local path ``store`` is a node inside a Zarr Vectors store.

    Called when ``store`` does not open as a store, so that a level or array directory
    (``cells.zv/0``) is named as part of its store, never as an interrupted write to
    remove.

    Raises
    ------
    NotAZarrVectorsStoreError
        Naming the enclosing store and how to open it.
    """
    path = local_destination(store)
    if path is None:
        return
    for parent in list(path.absolute().parents)[:_NODE_DEPTH]:
        if not (parent / "zarr.json").is_file():
            continue
        try:
            doc, _ = StoreIO(resolve_store(parent, mode="r")).read_root()
        except MetadataError:  # not valid JSON: not the root of a store of ours
            continue
        attrs = doc.get("attributes") if isinstance(doc, dict) else None
        if isinstance(attrs, dict) and "zarr_vectors_version" in attrs:
            inner = path.absolute().relative_to(parent).as_posix()
            raise NotAZarrVectorsStoreError(
                f"{where} is the node {inner!r} inside the Zarr Vectors store at {parent}, not "
                f"a store itself; open the store: zv.open({os.fspath(parent)!r})"
            ) from failure


Loaded = tuple[StoreIO, RootMetadata, StoreVersion, list[tuple[int, str]]]
"""What :func:`load_store` reads of a store: its I/O, root metadata, version and listed levels."""


def load_store(store: StoreLike, where: str, storage_options: Mapping[str, Any] | None) -> Loaded:
    """The I/O, root metadata, version and listed levels of the store as it is now (see
    :func:`zarr_vectors.open`, whose errors it raises)."""
    io = StoreIO(resolve_store(store, mode="r", storage_options=storage_options))
    doc, version = io.read_root()
    try:
        attrs = _root_attributes(io, doc, where)
    except NotAZarrVectorsStoreError as exc:
        _raise_if_inside_a_store(store, where, exc)
        raise
    try:
        root = RootMetadata.from_json(attrs)
    except MetadataError as exc:
        raise MetadataError(f"{where}: {exc}") from exc
    return io, root, version, level_paths(attrs)
