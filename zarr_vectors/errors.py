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
    """Base class of every error raised by zarr_vectors.

    Examples
    --------
    >>> import zarr_vectors as zv
    >>> try:
    ...     zv.open("no-such-store.zarr")
    ... except zv.ZarrVectorsError as error:
    ...     print(type(error).__name__, isinstance(error, FileNotFoundError))
    StoreNotFoundError True
    """


class InvalidInputError(ZarrVectorsError, ValueError):
    """User input (arrays, shapes, options) is not acceptable; nothing was written.

    Examples
    --------
    >>> import zarr_vectors as zv
    >>> zv.validate("cells.zarr", level=9)
    Traceback (most recent call last):
        ...
    zarr_vectors.errors.InvalidInputError: level must be an integer from 1 to 5, got 9
    >>> issubclass(zv.InvalidInputError, ValueError)
    True
    """


class InvalidNameError(InvalidInputError):
    """An attribute, group or array name is not a safe Python identifier.

    Examples
    --------
    >>> import pathlib, tempfile
    >>> import numpy as np
    >>> import zarr_vectors as zv
    >>> path = pathlib.Path(tempfile.mkdtemp()) / "cells.zarr"
    >>> zv.write_points(path, np.zeros((3, 3)), attributes={"bad name": np.zeros(3)})
    Traceback (most recent call last):
        ...
    zarr_vectors.errors.InvalidNameError: attribute name 'bad name' is not allowed: ...
    """


class StoreExistsError(ZarrVectorsError, FileExistsError):
    """The destination holds something a write must not replace.

    Either a Zarr Vectors store and ``overwrite=True`` was not given, or anything that is
    not a Zarr Vectors store (a directory with other files, a file, a plain Zarr hierarchy,
    a symbolic link, the current directory), which is never replaced. Nothing was written.

    Examples
    --------
    >>> import pathlib, tempfile
    >>> import numpy as np
    >>> import zarr_vectors as zv
    >>> path = pathlib.Path(tempfile.mkdtemp()) / "cells.zarr"
    >>> zv.write_points(path, np.array([[1, 1, 1], [15, 1, 1]], dtype=np.float32), chunk_shape=10.0)
    >>> zv.write_points(path, np.zeros((3, 3), dtype=np.float32), chunk_shape=10.0)
    Traceback (most recent call last):
        ...
    zarr_vectors.errors.StoreExistsError: ... pass mode="w" to replace it
    """


class StoreNotFoundError(ZarrVectorsError, FileNotFoundError):
    """The store, or a node that must exist in it, does not exist.

    Examples
    --------
    >>> import zarr_vectors as zv
    >>> zv.open("no-such-store.zarr")
    Traceback (most recent call last):
        ...
    zarr_vectors.errors.StoreNotFoundError: ...
    """


class NotAZarrVectorsStoreError(ZarrVectorsError, ValueError):
    """The store exists but is not a (complete) Zarr Vectors store.

    Examples
    --------
    >>> import pathlib, tempfile
    >>> import zarr
    >>> import zarr_vectors as zv
    >>> path = pathlib.Path(tempfile.mkdtemp()) / "plain.zarr"
    >>> group = zarr.open_group(path, mode="w")   # a Zarr group, but no Zarr Vectors store
    >>> zv.open(path)
    Traceback (most recent call last):
        ...
    zarr_vectors.errors.NotAZarrVectorsStoreError: ... lack 'zarr_vectors_version'
    """


class UnsupportedVersionError(ZarrVectorsError, ValueError):
    """The store declares a format version this library cannot read.

    Examples
    --------
    >>> import pathlib, tempfile
    >>> import json
    >>> import numpy as np
    >>> import zarr_vectors as zv
    >>> path = pathlib.Path(tempfile.mkdtemp()) / "cells.zarr"
    >>> zv.write_points(path, np.array([[1, 1, 1], [15, 1, 1]], dtype=np.float32), chunk_shape=10.0)
    >>> root = json.loads((path / "zarr.json").read_text())
    >>> root["attributes"]["zarr_vectors_version"] = "9.0"
    >>> _ = (path / "zarr.json").write_text(json.dumps(root))
    >>> zv.open(path)
    Traceback (most recent call last):
        ...
    zarr_vectors.errors.UnsupportedVersionError: store has format version 9.0; ...
    """


class FormatError(ZarrVectorsError, ValueError):
    """Bytes or metadata in a store violate the format specification.

    Examples
    --------
    ``FormatError`` is the base of the errors about a store's bytes and metadata:

    >>> import zarr_vectors as zv
    >>> [cls.__name__ for cls in (zv.MetadataError, zv.CorruptChunkError, zv.ManifestError)
    ...  if issubclass(cls, zv.FormatError)]
    ['MetadataError', 'CorruptChunkError', 'ManifestError']
    """


class FragmentIndexError(FormatError):
    """A fragment-index (ZVFG) blob is malformed (spec section 6).

    Examples
    --------
    >>> import zarr_vectors as zv
    >>> issubclass(zv.FragmentIndexError, zv.FormatError)
    True
    """


class ManifestError(FormatError):
    """An object manifest blob is malformed (spec section 7).

    Examples
    --------
    >>> import zarr_vectors as zv
    >>> issubclass(zv.ManifestError, zv.FormatError)
    True
    """


class MetadataError(FormatError):
    """Root, level or array metadata is missing or invalid (spec sections 3-4).

    Examples
    --------
    >>> import pathlib, tempfile
    >>> import json
    >>> import numpy as np
    >>> import zarr_vectors as zv
    >>> path = pathlib.Path(tempfile.mkdtemp()) / "cells.zarr"
    >>> zv.write_points(path, np.array([[1, 1, 1], [15, 1, 1]], dtype=np.float32), chunk_shape=10.0)
    >>> root = json.loads((path / "zarr.json").read_text())
    >>> root["attributes"]["chunk_shape"] = [-1, 10, 10]
    >>> _ = (path / "zarr.json").write_text(json.dumps(root))
    >>> zv.open(path)
    Traceback (most recent call last):
        ...
    zarr_vectors.errors.MetadataError: ...chunk_shape must hold 3 positive finite numbers...
    """


class CorruptChunkError(FormatError):
    """A chunk's stored bytes cannot be decoded or contradict its metadata.

    Examples
    --------
    >>> import pathlib, tempfile
    >>> import numpy as np
    >>> import zarr_vectors as zv
    >>> path = pathlib.Path(tempfile.mkdtemp()) / "cells.zarr"
    >>> zv.write_points(path, np.array([[1, 1, 1], [15, 1, 1]], dtype=np.float32), chunk_shape=10.0)
    >>> chunk = path / "0" / "vertices" / "c" / "0" / "0" / "0" / "0" / "0"
    >>> _ = chunk.write_bytes(chunk.read_bytes()[:-5])   # cut the file short
    >>> zv.open(path).read()
    Traceback (most recent call last):
        ...
    zarr_vectors.errors.CorruptChunkError: 0/vertices/c/0/0/0/0/0: ...
    """


class MisplacedChunkError(CorruptChunkError):
    """A stored file is intact but belongs to another place: its place record names another
    chunk or array, or it lacks the record its format version requires (spec §9.0.2).

    Examples
    --------
    >>> import pathlib, tempfile
    >>> import shutil
    >>> import numpy as np
    >>> import zarr_vectors as zv
    >>> path = pathlib.Path(tempfile.mkdtemp()) / "cells.zarr"
    >>> xyz = np.array([[1, 1, 1], [15, 1, 1]], dtype=np.float32)
    >>> one = zv.WriteOptions(shard_chunks=1)  # a file per chunk
    >>> zv.write_points(path, xyz, chunk_shape=10.0, options=one)
    >>> chunks = path / "0" / "vertices" / "c"
    >>> _ = shutil.copy(chunks / "0/0/0/0/0", chunks / "1/0/0/0/0")   # chunk 0 over chunk 1
    >>> zv.open(path).read()
    Traceback (most recent call last):
        ...
    zarr_vectors.errors.MisplacedChunkError: 0/vertices/c/1/0/0/0/0: the file was written for...
    """


class ObjectNotFoundError(ZarrVectorsError, KeyError):
    """An object id or group asked for does not exist in the store.

    Examples
    --------
    >>> import pathlib, tempfile
    >>> import numpy as np
    >>> import zarr_vectors as zv
    >>> path = pathlib.Path(tempfile.mkdtemp()) / "cells.zarr"
    >>> zv.write_polylines(path, [np.zeros((2, 3)), np.ones((2, 3))], chunk_shape=10.0)
    >>> zv.open(path).read_objects([5])
    Traceback (most recent call last):
        ...
    zarr_vectors.errors.ObjectNotFoundError: no object with id 5 in this store
    >>> issubclass(zv.ObjectNotFoundError, KeyError)
    True
    """

    def __str__(self) -> str:
        return str(self.args[0]) if self.args else ""


class MissingDependencyError(ZarrVectorsError, ImportError):
    """An optional dependency a feature needs is not installed (the message names the extra).

    Examples
    --------
    >>> import zarr_vectors as zv
    >>> issubclass(zv.MissingDependencyError, ImportError)   # ``except ImportError`` works
    True
    """


class ParallelWriteError(ZarrVectorsError, RuntimeError):
    """A parallel write failed on its cluster (a task error, a worker lost for good).

    Nothing was committed: the destination does not open as a complete store, and an
    existing local store being replaced is left as it was.

    Examples
    --------
    >>> import zarr_vectors as zv
    >>> issubclass(zv.ParallelWriteError, RuntimeError)
    True
    """


class StoreChangedError(ZarrVectorsError, RuntimeError):
    """The store was replaced or changed by another writer after this handle opened it.

    The store is not damaged: open it again (``zv.open(...)``) to read its new version.

    Examples
    --------
    >>> import pathlib, tempfile
    >>> import numpy as np
    >>> import zarr_vectors as zv
    >>> path = pathlib.Path(tempfile.mkdtemp()) / "cells.zarr"
    >>> zv.write_points(path, np.array([[1, 1, 1], [15, 1, 1]], dtype=np.float32), chunk_shape=10.0)
    >>> store = zv.open(path)
    >>> zv.write_points(path, np.zeros((3, 3), dtype=np.float32), chunk_shape=10.0,
    ...                 mode="w")   # another writer replaces the store
    >>> store.read()
    Traceback (most recent call last):
        ...
    zarr_vectors.errors.StoreChangedError: ... open it again ...
    >>> len(zv.open(path).read())
    3
    """


class StoreAccessError(ZarrVectorsError, PermissionError):
    """The store cannot be reached with the credentials at hand (none were found).

    Configure credentials the usual way for the storage (for S3: ``AWS_ACCESS_KEY_ID`` and
    ``AWS_SECRET_ACCESS_KEY``, ``~/.aws/credentials``, a profile), or pass them, or
    ``anon=True`` for a public bucket, in ``storage_options``.

    Examples
    --------
    >>> import zarr_vectors as zv
    >>> issubclass(zv.StoreAccessError, PermissionError)
    True
    """


class ConcurrentWriteError(ZarrVectorsError, RuntimeError):
    """Another writer committed to the store while this append or change was prepared.

    Nothing of this write was committed: the store holds the other writer's version, not a
    blend. Run the append again (it then extends the new version).

    Examples
    --------
    >>> import zarr_vectors as zv
    >>> issubclass(zv.ConcurrentWriteError, RuntimeError)
    True
    """
