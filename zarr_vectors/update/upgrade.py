"""``upgrade``: raise a store of format 1.0, 1.1 or 1.2 to format 1.3, plain Zarr v3 (spec §3.3.1).

What changes follows the spec changelog:

- every store: the root declares version 1.3 and a new ``commit``; every array's
  ``zarr.json`` gets its ``dimension_names`` (§9.0.3); the ``.zattrs`` mirrors and
  ``metadata.json`` are deleted (§2.3). That is the whole of a 1.2 store's upgrade, and
  of a 1.3 store written before 1.3 dropped the mirrors (its version stays);
- a 1.0 or 1.1 store also gets the data layout of 1.2 (§9.0.2, §9.8, §9.8.1): a place
  record in every shard of every per-chunk array (its row blocks and index unchanged), and
  its global arrays written again with every chunk stored and checksummed and their chunk
  table; ``object_index`` as the writers write it now (Blosc, then CRC32C).

Row blocks, grids, shards and values are never re-encoded, so the upgraded store gives the
same answers, and its files are those a fresh write of the same data gives where the
writers of its version and the current ones agree. The change is committed like an append
(:func:`~zarr_vectors.store.target.modify_target`): a local store is changed in a hidden
sibling of hard links swapped in at the end, so a failed or killed upgrade leaves it as it
was.
"""

from __future__ import annotations

from dataclasses import dataclass, replace
from typing import Any

import numpy as np

from zarr_vectors.errors import (
    InvalidInputError,
    MetadataError,
    NotAZarrVectorsStoreError,
    UnsupportedVersionError,
)
from zarr_vectors.format.commits import COMMIT_KEY, next_commit
from zarr_vectors.format.layout import is_sharded
from zarr_vectors.format.metadata import RootMetadata
from zarr_vectors.format.names import OBJECT_INDEX, VERTEX_COUNTS
from zarr_vectors.format.version import (
    at_least,
    foreign_layout,
    has_place_records,
    is_plain_zarr,
    parse_version,
)
from zarr_vectors.store.arrays import group_metadata, read_whole_many
from zarr_vectors.store.dimensions import MIRROR_DOCUMENTS, array_nodes, make_plain_zarr
from zarr_vectors.store.format_upgrade import add_place_records, rewrite_global_array
from zarr_vectors.store.io import StoreIO, StoreLike, resolve_store
from zarr_vectors.store.target import modify_target
from zarr_vectors.write import write_encoded_object_index

__all__ = ["UPGRADE_VERSION", "UpgradeReport", "upgrade"]

UPGRADE_VERSION = "1.3"
"""The version an upgrade reaches: the newest one that needs no data re-encoded. Format 1.4
changed only the codecs this library chooses for object kinds (spec §9.0.4), 1.5 only the
form of their fragment blobs (counts form, spec §6.8) and 1.6 only the codecs of graphs and
skeletons; a 1.3 to 1.5 store is plain Zarr v3, read and appended to as it is, so none is
raised (1.4 to 1.5 would relabel the store without saving a byte: its range-form blobs are
valid 1.5 blobs)."""


@dataclass(frozen=True)
class UpgradeReport:
    """What :func:`upgrade` changed, or would change with ``dry_run=True``.

    Attributes
    ----------
    from_version
        The format version the store declared.
    to_version
        The version it declares after the upgrade (``from_version`` when none was needed).
    changes
        One sentence per kind of change, empty when the store was already current.
    dry_run
        Whether nothing was written.

    Examples
    --------
    >>> import zarr_vectors as zv
    >>> report = zv.UpgradeReport(
    ...     "1.2", "1.3", ("root: zarr_vectors_version 1.2 -> 1.3, new commit",), dry_run=True
    ... )
    >>> report.changed
    True
    >>> print(report)
    would upgrade format 1.2 to 1.3:
      - root: zarr_vectors_version 1.2 -> 1.3, new commit
    >>> print(zv.UpgradeReport("1.4", "1.4", (), dry_run=False))
    format 1.4 is current: nothing to upgrade
    """

    from_version: str
    to_version: str
    changes: tuple[str, ...]
    dry_run: bool

    @property
    def changed(self) -> bool:
        """Whether the store was (or, on a dry run, would be) changed."""
        return bool(self.changes)

    def __str__(self) -> str:
        if not self.changes:
            return f"format {self.from_version} is current: nothing to upgrade"
        verb = "would upgrade" if self.dry_run else "upgraded"
        lines = [f"{verb} format {self.from_version} to {self.to_version}:"]
        return "\n".join([*lines, *(f"  - {change}" for change in self.changes)])


@dataclass(frozen=True)
class _Plan:
    """The arrays of a store an upgrade touches."""

    root: RootMetadata
    base: bytes | None
    sharded: list[tuple[str, dict[str, Any]]]
    globals: list[tuple[str, dict[str, Any]]]
    unnamed: int
    mirrors: list[str]


def upgrade(store: StoreLike, *, to: str | None = None, dry_run: bool = False) -> UpgradeReport:
    """Raise a store of format 1.0, 1.1 or 1.2 to format 1.3, in place (spec §3.3.1).

    A 1.2 store (or a 1.3 store written before 1.3 dropped the mirror documents) changes
    only in its metadata: the root's version and commit, the
    ``dimension_names`` of every array, and no more ``.zattrs`` or ``metadata.json``
    mirror documents, so zarr-python walks it without a warning and xarray opens its
    groups. A 1.0 or 1.1 store also gets what format 1.2 added to the data layout: a place
    record in every shard, and global arrays with every chunk stored, checksummed and
    listed in their chunk table. Values, row blocks and shards are kept, so every read
    gives the same answers. A local store is changed in a hidden sibling swapped in at the
    end: a failed or killed upgrade leaves it as it was. Other stores (memory, object
    storage) are changed in place, their root uncommitted meanwhile (spec §2.4). A zip
    store is only read: a dry run reports on it, an upgrade is refused.

    Parameters
    ----------
    store
        A local path or zarr store holding a Zarr Vectors store.
    to
        The version to reach: None or :data:`UPGRADE_VERSION` (``"1.3"``), the newest
        version that needs no data re-encoded (1.4 changed only the codecs of new object
        stores, spec §9.0.4, 1.5 the form of their fragment blobs, §6.8, and 1.6 the codecs
        of new graphs and skeletons: a 1.4 or 1.5 store needs no upgrade).
    dry_run
        Report what would change and write nothing.

    Returns
    -------
    UpgradeReport
        What changed (nothing for a store already plain Zarr v3 of the current version).

    Raises
    ------
    InvalidInputError
        When ``to`` is not the current version, or for a zip store that needs an upgrade:
        a zip file is never changed in place (upgrade a directory store extracted from
        it, then zip that store's files again).
    NotAZarrVectorsStoreError, MetadataError, UnsupportedVersionError
        When the store is not a readable Zarr Vectors store.
    ConcurrentWriteError
        When another writer committed to the store during the upgrade (nothing changed).

    Examples
    --------
    A store this library writes is current, so there is nothing to do (``zarr-vectors
    upgrade STORE --dry-run`` tells the same of any store):

    >>> import pathlib, tempfile
    >>> import numpy as np
    >>> import zarr_vectors as zv
    >>> path = pathlib.Path(tempfile.mkdtemp()) / "cloud.zarr"
    >>> zv.write_points(path, np.zeros((3, 2)), chunk_shape=4.0, progress=False)
    >>> print(zv.upgrade(path, dry_run=True))
    format 1.6 is current: nothing to upgrade
    >>> zv.upgrade(path).changed
    False
    """
    _check_target(to)
    io = StoreIO(resolve_store(store, mode="r"))
    plan = _plan(io)
    version = plan.root.version
    if is_plain_zarr(version) and not plan.unnamed and not plan.mirrors:
        return UpgradeReport(version, version, (), dry_run)
    report = UpgradeReport(version, at_least(version, UPGRADE_VERSION), _changes(plan), dry_run)
    if not dry_run:
        _apply(store, io, plan)
    return report


def _check_target(to: str | None) -> None:
    """Refuse a target version other than the current one."""
    if to is None or to == UPGRADE_VERSION:
        return
    parse_version(to)  # a MetadataError names a malformed version
    raise InvalidInputError(
        f"upgrade writes format {UPGRADE_VERSION} only (the newest that needs no data "
        "re-encoded; format 1.4 changed only the codecs of new object stores), "
        f"got to={to!r}"
    )


def _plan(io: StoreIO) -> _Plan:
    """Read the root and list the arrays of every level."""
    doc, version = io.read_root()
    attrs = doc.get("attributes") if isinstance(doc, dict) else None
    if (foreign := foreign_layout(attrs)) is not None:
        raise UnsupportedVersionError(f"the store was {foreign}")
    if not isinstance(attrs, dict) or "zarr_vectors_version" not in attrs:
        raise NotAZarrVectorsStoreError(
            "not a complete Zarr Vectors store (no root zarr.json declaring "
            "zarr_vectors_version), so there is nothing to upgrade"
        )
    root = RootMetadata.from_json(attrs)
    levels = [str(level) for level in (0, *(entry.level for entry in root.levels))]
    nodes = array_nodes(io, levels)
    sharded = [(path, meta) for path, meta in nodes if is_sharded(meta)]
    globals_ = [
        (path, meta)
        for path, meta in nodes
        if not is_sharded(meta) and not path.endswith(f"/{VERTEX_COUNTS}")
    ]
    _, listings = io.read_metadata([], ["", *levels])
    mirrors = [
        f"{group}/{name}".lstrip("/")
        for group, names in zip(["", *levels], listings, strict=True)
        for name in names
        if name in MIRROR_DOCUMENTS
    ]
    unnamed = sum("dimension_names" not in meta for _, meta in nodes)
    return _Plan(root, version.root, sharded, globals_, unnamed, mirrors)


def _changes(plan: _Plan) -> tuple[str, ...]:
    """One sentence per kind of change the upgrade of ``plan`` makes."""
    version = plan.root.version
    reached = at_least(version, UPGRADE_VERSION)  # a newer plain store keeps its version
    changes = [
        "root: new commit"
        if version == reached
        else f"root: zarr_vectors_version {version} -> {reached}, new commit"
    ]
    if not has_place_records(plan.root.version):
        changes.append(f"place records added to the shards of {len(plan.sharded)} array(s)")
        changes.append(
            f"{len(plan.globals)} global array(s) written again with every chunk stored "
            "and a chunk table"
        )
    if plan.unnamed:
        changes.append(f"dimension_names added to {plan.unnamed} array(s)")
    if plan.mirrors:
        changes.append(f"deleted {', '.join(plan.mirrors)}")
    return tuple(changes)


_ON_ZIP = (
    "to upgrade it, extract it into a directory, upgrade that directory store and zip its "
    "files again (zv.upgrade(store, dry_run=True) reads a zip store as it is)"
)
"""What to do instead of upgrading a zip store, which is never rewritten in place."""


def _apply(store: StoreLike, io: StoreIO, plan: _Plan) -> None:
    """Make the changes of ``plan`` and commit them."""
    placed = has_place_records(plan.root.version)
    values = [] if placed else read_whole_many(io.store, plan.globals)
    root = replace(plan.root, version=at_least(plan.root.version, UPGRADE_VERSION))
    with modify_target(store, rewritten=(), base=plan.base, on_zip=_ON_ZIP) as (source, target):
        target.name_dimensions(root.axis_names)
        if not placed:
            for path, meta in plan.sharded:
                add_place_records(source, target, path, meta, root.spatial_dims)
            _rewrite_globals(target, plan.globals, values)
        levels = [0, *(entry.level for entry in root.levels)]
        make_plain_zarr(target, levels, root.axis_names)
        doc = {**root.to_json(), COMMIT_KEY: next_commit(root.extra.get(COMMIT_KEY))}
        target.set("zarr.json", group_metadata(doc))


def _rewrite_globals(
    target: StoreIO, arrays: list[tuple[str, dict[str, Any]]], values: list[np.ndarray]
) -> None:
    """Write the global arrays again as format 1.2 and later store them; ``object_index``
    as the writers write it now."""
    decoded = dict(zip((path for path, _ in arrays), values, strict=True))
    indexes = set()
    for path, meta in arrays:
        group, _, _ = path.rpartition("/")
        if group.endswith(f"/{OBJECT_INDEX}"):
            indexes.add(group)
        else:
            rewrite_global_array(target, path, meta, decoded[path])
    for group in sorted(indexes):
        _rewrite_object_index(target, group, decoded[f"{group}/data"], decoded[f"{group}/offsets"])


def _rewrite_object_index(
    target: StoreIO, group: str, data: np.ndarray, offsets: np.ndarray
) -> None:
    """Write the ``object_index`` group ``group`` (e.g. ``"0/object_index"``) again from its
    decoded arrays, as the writers do (spec §9.8)."""
    doc = target.read_json(f"{group}/zarr.json")
    attrs = doc.get("attributes") if isinstance(doc, dict) else None
    if not isinstance(attrs, dict):
        raise MetadataError(f"{group}/zarr.json is not a group document")
    target.delete_many(target.list_prefix(f"{group}/data/c/"))
    target.delete_many(target.list_prefix(f"{group}/offsets/c/"))
    base = group.removesuffix(f"/{OBJECT_INDEX}")
    n_objects, ndim = int(attrs["num_objects"]), int(attrs["sid_ndim"])
    write_encoded_object_index(target, base, (data, offsets), n_objects, ndim)
