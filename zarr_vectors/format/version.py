"""The format version this library writes and the versions it reads (spec §3)."""

from __future__ import annotations

import re

from zarr_vectors.errors import MetadataError, UnsupportedVersionError

__all__ = [
    "BASE_VERSION",
    "FORMAT_VERSION",
    "SHARDED_VERSION",
    "check_readable_version",
    "parse_version",
]

FORMAT_VERSION = "1.1"
"""The newest format version this library reads and writes."""

BASE_VERSION = "1.0"
"""What a store that uses no feature newer than 1.0 declares (spec §3.3)."""

SHARDED_VERSION = "1.1"
"""What a store with several spatial chunks per shard declares (spec §9.0.1)."""


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


def check_readable_version(version: object) -> None:
    """Raise unless a store of format ``version`` can be read by this library.

    Readers refuse another major version and a newer minor version (spec §3).

    Raises
    ------
    MetadataError
        When the value is not a version string.
    UnsupportedVersionError
        When the version is newer than, or incompatible with, :data:`FORMAT_VERSION`.
    """
    major, minor = parse_version(version)
    own_major, own_minor = parse_version(FORMAT_VERSION)
    if major != own_major or minor > own_minor:
        raise UnsupportedVersionError(
            f"store has format version {version}; this library reads {own_major}.0 to "
            f"{FORMAT_VERSION}. Upgrade zarr_vectors to read it."
        )
