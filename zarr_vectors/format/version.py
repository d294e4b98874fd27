"""The format version this library writes and the versions it reads (spec §3)."""

from __future__ import annotations

import re

from zarr_vectors.errors import MetadataError, UnsupportedVersionError

__all__ = [
    "BASE_VERSION",
    "FOREIGN_ROOT_KEY",
    "FORMAT_VERSION",
    "LEVELS_VERSION",
    "NEWEST_VERSION",
    "OBJECT_CHUNKS_VERSION",
    "OBJECT_ORDER_VERSION",
    "PLACED_VERSION",
    "PLAIN_ZARR_VERSION",
    "SHARDED_VERSION",
    "at_least",
    "check_readable_version",
    "foreign_layout",
    "has_place_records",
    "is_layout_v",
    "is_plain_zarr",
    "parse_version",
    "upgrade_hint",
]

FORMAT_VERSION = "1.6"
"""The version of every new store that has no object-ordered copy (spec §3.3); a store with
one declares :data:`OBJECT_ORDER_VERSION`."""

OBJECT_ORDER_VERSION = "1.7"
"""The first version with the object-ordered copy of a point cloud with object ids (spec
§9.15); a store that has one declares it, no other store does."""

NEWEST_VERSION = OBJECT_ORDER_VERSION
"""The newest format version this library reads (spec §3.3)."""

BASE_VERSION = "1.0"
"""What a store that uses no feature newer than 1.0 declares (spec §3.3)."""

SHARDED_VERSION = "1.1"
"""The first version with several spatial chunks per shard (spec §9.0.1)."""

PLACED_VERSION = "1.2"
"""The first version whose shards carry place records (spec §9.0.2)."""

LEVELS_VERSION = "1.3"
"""The first version with levels of detail above 0 (spec §4.3); a store that has them declares
it."""

OBJECT_CHUNKS_VERSION = "1.3"
"""The first version with the object-to-chunks index of point clouds with object ids (spec
§9.14); a store that has one declares it."""
PLAIN_ZARR_VERSION = "1.3"
"""The first version whose arrays all name their dimensions and whose store holds no
``.zattrs`` or ``metadata.json`` document (spec §2.3, §9.0.3)."""


_VERSION = re.compile(r"(0|[1-9][0-9]*)\.(0|[1-9][0-9]*)")


def parse_version(version: object) -> tuple[int, int]:
    """``(major, minor)`` of a ``zarr_vectors_version`` value (spec §3.3).

    Raises
    ------
    MetadataError
        When the value is not a string ``MAJOR.MINOR`` of decimals without leading zeros.
    """
    match = _VERSION.fullmatch(version) if isinstance(version, str) else None
    if match is None:
        raise MetadataError(
            f"zarr_vectors_version must be a string 'MAJOR.MINOR' such as '1.0', got {version!r}"
        )
    return int(match.group(1)), int(match.group(2))


def at_least(version: str, minimum: str) -> str:
    """``version``, raised to ``minimum`` when older: what a store that gains a feature of
    ``minimum`` declares (a newer store keeps its own version, spec §3.3).

    Examples
    --------
    >>> at_least("1.2", "1.3"), at_least("1.4", "1.3")
    ('1.3', '1.4')
    """
    return minimum if parse_version(version) < parse_version(minimum) else version


def check_readable_version(version: object) -> None:
    """Raise unless a store of format ``version`` can be read by this library.

    Readers refuse another major version and a minor version newer than
    :data:`NEWEST_VERSION` (spec §3).

    Raises
    ------
    MetadataError
        When the value is not a version string.
    UnsupportedVersionError
        When the version is newer than, or incompatible with, :data:`NEWEST_VERSION`.
    """
    major, minor = parse_version(version)
    own_major, own_minor = parse_version(NEWEST_VERSION)
    if major != own_major or minor > own_minor:
        raise UnsupportedVersionError(
            f"store has format version {version}; this library reads {own_major}.0 to "
            f"{NEWEST_VERSION}. Upgrade zarr_vectors to read it."
        )


def has_place_records(version: str) -> bool:
    """Whether every shard of a store of format ``version`` holds a place record (§9.0.2).

    Raises
    ------
    MetadataError
        When the value is not a version string.
    """
    return parse_version(version) >= parse_version(PLACED_VERSION)


def is_plain_zarr(version: str) -> bool:
    """Whether a store of format ``version`` is plain Zarr v3 (spec §2.3, §9.0.3): every
    array has ``dimension_names`` and no ``.zattrs`` or ``metadata.json`` mirrors a node.

    Raises
    ------
    MetadataError
        When the value is not a version string.

    Examples
    --------
    >>> is_plain_zarr("1.2"), is_plain_zarr("1.3")
    (False, True)
    """
    return parse_version(version) >= parse_version(PLAIN_ZARR_VERSION)


def upgrade_hint(version: str) -> str | None:
    """One line saying how to raise a store of format ``version`` to format 1.3 (plain Zarr
    v3), or None when it is plain Zarr v3 already (or not a version string).

    Examples
    --------
    >>> print(upgrade_hint("1.2"))
    format 1.2: zv.upgrade(store) or `zarr-vectors upgrade STORE` makes it a 1.3 store ...
    >>> upgrade_hint("1.3") is None
    True
    """
    try:
        if is_plain_zarr(version):
            return None
    except MetadataError:
        return None
    return (
        f"format {version}: zv.upgrade(store) or `zarr-vectors upgrade STORE` makes it a "
        "1.3 store (plain Zarr v3: xarray opens it, zarr-python walks it without warnings)"
    )


FOREIGN_ROOT_KEY = "zarr_vectors"
"""Root attribute under which zarr-vectors 0.6 and later (another implementation, layouts G
and V) keep their metadata; its ``zv_version`` names their format version."""


def _foreign_version(attrs: object) -> str | None:
    """The ``zv_version`` a root written by zarr-vectors 0.x declares ("" if none), else None."""
    if not isinstance(attrs, dict) or "zarr_vectors_version" in attrs:
        return None
    block = attrs.get(FOREIGN_ROOT_KEY)
    if not isinstance(block, dict):
        return None
    version = block.get("zv_version")
    return version if isinstance(version, str) else ""


def _minor(version: str) -> int | None:
    """The minor number of a zarr-vectors ``0.x.y`` version, or None."""
    match = re.match(r"0\.([0-9]+)\.", version)
    return None if match is None else int(match.group(1))


def _layout_name(version: str) -> str:
    """The physical layout of a zarr-vectors 0.x format version: V from 0.9, else G."""
    minor = _minor(version)
    if minor is None:
        return "a different layout"
    return "a different layout (layout V)" if minor >= 9 else "a different layout (layout G)"


def is_layout_v(attrs: object) -> bool:
    """Whether root attributes ``attrs`` are those of a layout-V store (zarr-vectors 0.9.x).

    Layout V (spec §14) is what zarr-vectors 0.9.0 and later write: a ``zarr_vectors`` root
    attribute whose ``zv_version`` is ``0.9.0`` or later. :func:`zarr_vectors.convert`
    imports such a store.

    Examples
    --------
    >>> from zarr_vectors.format.version import is_layout_v
    >>> is_layout_v({"zarr_vectors": {"zv_version": "0.9.2"}})
    True
    >>> is_layout_v({"zarr_vectors": {"zv_version": "0.7.0"}}), is_layout_v({})
    (False, False)
    """
    version = _foreign_version(attrs)
    minor = None if not version else _minor(version)
    return minor is not None and minor >= 9


def foreign_layout(attrs: object) -> str | None:
    """Why root attributes ``attrs`` belong to a store this library cannot read, or None.

    zarr-vectors 0.6 to 0.9.x (another implementation of the format's ideas) keep their root
    metadata in a ``zarr_vectors`` attribute with a ``zv_version``, in another physical
    layout: one variable-length byte array per logical array (layout V, 0.9.0 and later)
    or one array per chunk (layout G). Such a store is complete, not an interrupted write.

    Returns
    -------
    str or None
        A sentence that says what the store is and what to do, or None when ``attrs`` are
        not those of such a store.
    """
    version = _foreign_version(attrs)
    if version is None:
        return None
    match = re.match(r"([0-9]+\.[0-9]+)\.", version)
    series = f"{match.group(1)}.x" if match else "0.x"
    named = f"zarr-vectors {series} (zv_version {version!r})" if version else "zarr-vectors 0.x"
    if is_layout_v(attrs):
        return (
            f"written by {named}, {_layout_name(version)}, which this library does not open "
            "directly: convert it into a store of this format with zv.convert(src, dst) (or "
            "`zarr-vectors convert SRC DST`), then open that"
        )
    return (
        f"written by {named}, {_layout_name(version)}; this library cannot read it yet. "
        f"Read it with zarr-vectors {series} in a separate environment (it has the same "
        "import name); a conversion is planned"
    )
