"""What a Neuroglancer precomputed data source computed from a store looks like.

A store is shown in Neuroglancer as one or more *precomputed* data sources, each a tree of
files under one root (``info`` first, then the files its ``@type`` defines). The same source
answers two callers: the server (``zarr-vectors serve``), which reads one file per request,
and the static export (``zv.convert(store, "out.precomputed")``), which writes every file.
"""

from __future__ import annotations

from collections.abc import Iterator
from typing import Protocol, runtime_checkable

from zarr_vectors.errors import ZarrVectorsError

__all__ = ["PrecomputedFileNotFoundError", "PrecomputedSource"]


class PrecomputedFileNotFoundError(ZarrVectorsError, FileNotFoundError):
    """A path asked of a precomputed source names no file it has (the server answers 404).

    Examples
    --------
    >>> from zarr_vectors.precomputed import PrecomputedFileNotFoundError
    >>> issubclass(PrecomputedFileNotFoundError, FileNotFoundError)
    True
    """


@runtime_checkable
class PrecomputedSource(Protocol):
    """One Neuroglancer precomputed data source, its files computed from a store on demand.

    ``name`` is the source's folder under the store's precomputed root (``"annotations"``,
    ``"skeletons"``, ``"meshes"``); ``paths()`` yields every file path relative to that folder,
    ``"info"`` first; ``read(path)`` returns one file's bytes and raises
    :class:`PrecomputedFileNotFoundError` for a path it does not have.

    Examples
    --------
    >>> from zarr_vectors.precomputed import PrecomputedSource
    >>> class Empty:
    ...     name = "annotations"
    ...     def paths(self):
    ...         yield "info"
    ...     def read(self, path):
    ...         return b"{}"
    >>> isinstance(Empty(), PrecomputedSource)
    True
    """

    name: str

    def paths(self) -> Iterator[str]:
        """Every file path of the source, relative to its folder, ``"info"`` first."""
        ...

    def read(self, path: str) -> bytes:
        """The bytes of one file; :class:`PrecomputedFileNotFoundError` if there is none."""
        ...
