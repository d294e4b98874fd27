"""What a file format provides to :func:`zarr_vectors.convert`: the :class:`Converter`
protocol, and :class:`FileConverter`, the ready-made implementation the built-in formats use.

A converter imports one kind of file into a new store and exports a store into such a file.
:func:`zarr_vectors.convert` checks what every format shares (the source exists, the
destination may be written, the store's kind is one the format holds, progress bars) and
then calls the converter with the paths and the options.
"""

from __future__ import annotations

import os
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Protocol, runtime_checkable

from zarr_vectors.converters._common import check_options
from zarr_vectors.dataset import VectorStore
from zarr_vectors.store.io import StoreLike

__all__ = ["Converter", "Exporter", "FileConverter", "ImportTarget", "Importer"]


@runtime_checkable
class Converter(Protocol):
    """A file format :func:`zarr_vectors.convert` reads and writes.

    Any object with these attributes and methods is one; register it with
    :func:`zarr_vectors.converters.register`, or declare it in the entry-point group
    ``zarr_vectors.converters`` of a distribution (see
    :data:`zarr_vectors.converters.ENTRY_POINT_GROUP`).

    Attributes
    ----------
    name
        Short lower-case name, as given to ``format=`` and ``--format`` (``"ply"``).
    suffixes
        File suffixes, lower case with the dot, that select it (``(".ply",)``).
    extra
        The pip extra of zarr-vectors that installs the library it needs, or None.
    kinds
        The geometry kinds a store it exports may hold; the first is the kind import writes.

    Examples
    --------
    >>> from zarr_vectors.converters import Converter, registered
    >>> ply = registered("ply")
    >>> isinstance(ply, Converter), ply.suffixes, ply.extra, ply.kinds
    (True, ('.ply',), 'mesh', ('mesh',))
    """

    @property
    def name(self) -> str: ...

    @property
    def suffixes(self) -> tuple[str, ...]: ...

    @property
    def extra(self) -> str | None: ...

    @property
    def kinds(self) -> tuple[str, ...]: ...

    def import_file(self, path: Path, store: StoreLike, **options: Any) -> None:
        """Write the file ``path`` into a new store ``store``.

        ``options`` hold ``overwrite``, ``chunk_shape`` and ``bin_shape`` (as for the
        ``write_*`` functions) and the format's own options.
        """

    def export_store(self, store: VectorStore, path: Path, **options: Any) -> None:
        """Write the open store ``store`` into the file ``path``.

        ``options`` hold ``overwrite`` and the format's own options.
        """


@dataclass(frozen=True, slots=True)
class ImportTarget:
    """Where an import writes: the new store and the write settings every format takes.

    Attributes
    ----------
    store
        The store to write (a path or a zarr store).
    overwrite
        Replace an existing store.
    chunk_shape, bin_shape
        As for the ``write_*`` functions (None: chosen from the data).

    Examples
    --------
    >>> from zarr_vectors.converters import ImportTarget
    >>> ImportTarget("cells.zarr", chunk_shape=10.0).write_keywords()
    {'chunk_shape': 10.0, 'bin_shape': None, 'mode': 'w-'}
    """

    store: StoreLike
    overwrite: bool = False
    chunk_shape: Any = None
    bin_shape: Any = None

    def write_keywords(self) -> dict[str, Any]:
        """The keywords to pass on to a ``write_*`` function.

        Examples
        --------
        >>> from zarr_vectors.converters import ImportTarget
        >>> keywords = ImportTarget("cells.zarr", overwrite=True).write_keywords()
        >>> sorted(keywords), keywords["mode"]
        (['bin_shape', 'chunk_shape', 'mode'], 'w')
        """
        return {
            "chunk_shape": self.chunk_shape,
            "bin_shape": self.bin_shape,
            "mode": "w" if self.overwrite else "w-",
        }


Importer = Callable[[str, Path, ImportTarget, Mapping[str, Any]], None]
"""``importer(name, path, target, options)``: write the file into ``target.store``."""
Exporter = Callable[[str, VectorStore, Path, bool, Mapping[str, Any]], None]
"""``exporter(name, store, path, overwrite, options)``: write the store into the file."""


@dataclass(frozen=True, slots=True)
class FileConverter:
    """A :class:`Converter` made of two functions and the options each one takes.

    Its methods refuse an option that is not in ``import_options`` or ``export_options``
    (naming the known ones), then call ``importer`` or ``exporter`` with the converter's
    name, so that one function can serve several formats.

    Attributes
    ----------
    name, suffixes, extra, kinds
        As for :class:`Converter`.
    importer
        ``importer(name, path, target, options)`` (see :class:`ImportTarget`).
    exporter
        ``exporter(name, store, path, overwrite, options)``.
    import_options, export_options
        The names of the format's own options.

    Examples
    --------
    >>> import pathlib, tempfile
    >>> import numpy as np
    >>> import zarr_vectors as zv
    >>> from zarr_vectors.converters import FileConverter
    >>> def read_xyz(name, path, target, options):
    ...     rows = np.loadtxt(path, ndmin=2)
    ...     zv.write_points(target.store, rows, **target.write_keywords())
    >>> def write_xyz(name, store, path, overwrite, options):
    ...     np.savetxt(path, store.read().positions, fmt="%g")
    >>> xyz = FileConverter("xyz", (".xyz",), None, ("point_cloud",), read_xyz, write_xyz)
    >>> folder = pathlib.Path(tempfile.mkdtemp())
    >>> _ = (folder / "cells.xyz").write_text("1 2 3\\n4 5 6\\n")
    >>> xyz.import_file(folder / "cells.xyz", folder / "cells.zarr")
    >>> zv.open(folder / "cells.zarr").vertex_count
    2
    >>> xyz.import_file(folder / "cells.xyz", folder / "other.zarr", colour="red")
    Traceback (most recent call last):
    ...
    zarr_vectors.errors.InvalidInputError: unknown option(s) colour for xyz; its options: none
    """

    name: str
    suffixes: tuple[str, ...]
    extra: str | None
    kinds: tuple[str, ...]
    importer: Importer
    exporter: Exporter
    import_options: tuple[str, ...] = ()
    export_options: tuple[str, ...] = ()

    def import_file(
        self,
        path: str | os.PathLike[str],
        store: StoreLike,
        *,
        overwrite: bool = False,
        chunk_shape: Any = None,
        bin_shape: Any = None,
        **options: Any,
    ) -> None:
        """Write the file ``path`` into a new store ``store`` (see :class:`Converter`).

        Raises
        ------
        InvalidInputError
            For an option the format does not take, or a file it cannot read.
        """
        check_options(self.name, options, self.import_options)
        target = ImportTarget(store, overwrite, chunk_shape, bin_shape)
        self.importer(self.name, Path(os.fspath(path)), target, options)

    def export_store(
        self,
        store: VectorStore,
        path: str | os.PathLike[str],
        *,
        overwrite: bool = False,
        **options: Any,
    ) -> None:
        """Write the open store ``store`` into the file ``path`` (see :class:`Converter`).

        Raises
        ------
        InvalidInputError
            For an option the format does not take, or data it cannot hold.
        """
        check_options(self.name, options, self.export_options)
        self.exporter(self.name, store, Path(os.fspath(path)), overwrite, options)
