"""Exception classes of zarr_vectors.

Every error raised on purpose by this package derives from :class:`ZarrVectorsError`
and also from the builtin it resembles, so ``except ValueError`` in caller code keeps
working.
"""

from __future__ import annotations

__all__ = [
    "ZarrVectorsError",
    "InvalidInputError",
    "InvalidNameError",
    "StoreExistsError",
    "StoreNotFoundError",
    "NotAZarrVectorsStoreError",
    "UnsupportedVersionError",
    "FormatError",
    "FragmentIndexError",
    "ManifestError",
    "MetadataError",
    "CorruptChunkError",
    "MisplacedChunkError",
    "ObjectNotFoundError",
    "MissingDependencyError",
    "ParallelWriteError",
    "StoreChangedError",
    "StoreAccessError",
    "ConcurrentWriteError",
]


class ZarrVectorsError(Exception):
    """Base class of every error raised by zarr_vectors."""


class InvalidInputError(ZarrVectorsError, ValueError):
    """User input (arrays, shapes, options) is not acceptable; nothing was written."""


class InvalidNameError(InvalidInputError):
    """An attribute, group or array name is not a safe Python identifier."""


class StoreExistsError(ZarrVectorsError, FileExistsError):
    """The destination holds something a write must not replace.

    Either a Zarr Vectors store and ``overwrite=True`` was not given, or anything that is
    not a Zarr Vectors store (a directory with other files, a file, a plain Zarr hierarchy,
    a symbolic link, the current directory), which is never replaced. Nothing was written.
    """


class StoreNotFoundError(ZarrVectorsError, FileNotFoundError):
    """The store, or a node that must exist in it, does not exist."""


class NotAZarrVectorsStoreError(ZarrVectorsError, ValueError):
    """The store exists but is not a (complete) Zarr Vectors store."""


class UnsupportedVersionError(ZarrVectorsError, ValueError):
    """The store declares a format version this library cannot read."""


class FormatError(ZarrVectorsError, ValueError):
    """Bytes or metadata in a store violate the format specification."""


class FragmentIndexError(FormatError):
    """A fragment-index (ZVFG) blob is malformed (spec section 6)."""


class ManifestError(FormatError):
    """An object manifest blob is malformed (spec section 7)."""


class MetadataError(FormatError):
    """Root, level or array metadata is missing or invalid (spec sections 3-4)."""


class CorruptChunkError(FormatError):
    """A chunk's stored bytes cannot be decoded or contradict its metadata."""


class MisplacedChunkError(CorruptChunkError):
    """A stored file is intact but belongs to another place: its place record names another
    chunk or array, or it lacks the record its format version requires (spec §9.0.2)."""


class ObjectNotFoundError(ZarrVectorsError, KeyError):
    """An object id or group asked for does not exist in the store."""

    def __str__(self) -> str:
        return str(self.args[0]) if self.args else ""


class MissingDependencyError(ZarrVectorsError, ImportError):
    """An optional dependency a feature needs is not installed (the message names the extra)."""


class ParallelWriteError(ZarrVectorsError, RuntimeError):
    """A parallel write failed on its cluster (a task error, a worker lost for good).

    Nothing was committed: the destination does not open as a complete store, and an
    existing local store being replaced is left as it was.
    """


class StoreChangedError(ZarrVectorsError, RuntimeError):
    """The store was replaced or changed by another writer after this handle opened it.

    The store is not damaged: open it again (``zv.open(...)``) to read its new version.
    """


class StoreAccessError(ZarrVectorsError, PermissionError):
    """The store cannot be reached with the credentials at hand (none were found).

    Configure credentials the usual way for the storage (for S3: ``AWS_ACCESS_KEY_ID`` and
    ``AWS_SECRET_ACCESS_KEY``, ``~/.aws/credentials``, a profile), or pass them, or
    ``anon=True`` for a public bucket, in ``storage_options``.
    """


class ConcurrentWriteError(ZarrVectorsError, RuntimeError):
    """Another writer committed to the store while this append or change was prepared.

    Nothing of this write was committed: the store holds the other writer's version, not a
    blend. Run the append again (it then extends the new version).
    """
