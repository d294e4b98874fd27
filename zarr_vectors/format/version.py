"""The format version this library writes and the versions it reads (spec §3)."""

from __future__ import annotations

from zarr_vectors.errors import MetadataError, UnsupportedVersionError

__all__ = ["FORMAT_VERSION", "check_readable_version"]

FORMAT_VERSION = "1.0"
"""Value of the root ``zarr_vectors_version`` key written by this library."""


def _parse(version: object) -> tuple[int, int]:
    if not isinstance(version, str):
        raise MetadataError(f"zarr_vectors_version must be a string like '1.0', got {version!r}")
    parts = version.split(".")
    if len(parts) < 2 or not all(p.isdigit() for p in parts[:2]):
        raise MetadataError(f"zarr_vectors_version {version!r} is not of the form 'MAJOR.MINOR'")
    return int(parts[0]), int(parts[1])


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
    major, minor = _parse(version)
    own_major, own_minor = _parse(FORMAT_VERSION)
    if major != own_major or minor > own_minor:
        raise UnsupportedVersionError(
            f"store has format version {version}; this library reads {own_major}.0 to "
            f"{FORMAT_VERSION}. Upgrade zarr_vectors to read it."
        )
