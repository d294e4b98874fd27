"""Import and export of the field's file formats (each through an optional extra).

One function, :func:`convert`, moves data in either direction: from a file of a known
format into a new store, or from a store out to a file. The format is taken from the
file's suffix unless ``format=`` names it.

=========  ==================  ============  ======================================
format     suffixes            extra         kinds
=========  ==================  ============  ======================================
ply        .ply                ``mesh``      mesh
obj        .obj                (none)        mesh
stl        .stl                ``mesh``      mesh
swc        .swc                (none)        skeleton
trk        .trk                ``tracts``    streamline
tck        .tck                ``tracts``    streamline
trx        .trx                ``tracts``    streamline
las        .las, .laz          ``las``       point_cloud
csv        .csv                ``tables``    point_cloud (export: every kind's vertices)
parquet    .parquet, .pq       ``tables``    point_cloud (export: every kind's vertices)
=========  ==================  ============  ======================================

Stores of zarr-vectors 0.9.x (the format's other implementation, "layout V", spec §14) are
imported too: ``convert(v_store, new_store)`` recognises one by its root attributes
(format name ``zarr-vectors-0.9``; see :mod:`zarr_vectors.converters.zarr_vectors_v`).

Each format is a :class:`Converter` (name, suffixes, extra, kinds, ``import_file`` and
``export_store``) defined in a module of its name (``zarr_vectors.converters.ply`` defines
``PLY``), found in the registry (:func:`registered`, :func:`converter_for_path`,
:func:`converters`): the built-in ones above, and those other distributions declare in the
entry-point group ``zarr_vectors.converters`` (:mod:`zarr_vectors.converters.registry`).
A converter imports its third-party library when it is used, through
:func:`zarr_vectors._optional.require`, so a missing extra is reported when the format is
used (naming the extra to install), not when zarr_vectors is imported.
"""

from __future__ import annotations

import os
from pathlib import Path
from typing import Any

from zarr_vectors._progress import ProgressOption, enclosing, progress_reporter
from zarr_vectors.converters.converter import Converter, FileConverter, ImportTarget
from zarr_vectors.converters.precomputed import export_to_precomputed, is_precomputed
from zarr_vectors.converters.registry import (
    ENTRY_POINT_GROUP,
    PluginWarning,
    converter_for_path,
    converters,
    register,
    registered,
)
from zarr_vectors.converters.zarr_vectors_v import ZARR_VECTORS_V
from zarr_vectors.dataset import VectorStore
from zarr_vectors.dataset import open as open_store
from zarr_vectors.errors import InvalidInputError, StoreExistsError
from zarr_vectors.format.version import is_layout_v
from zarr_vectors.store.io import StoreLike
from zarr_vectors.store.layout_v import read_root_attributes
from zarr_vectors.store.target import check_destination
from zarr_vectors.write import WriteMode, writer_arguments

__all__ = [
    "ENTRY_POINT_GROUP",
    "Converter",
    "FileConverter",
    "ImportTarget",
    "PluginWarning",
    "ZARR_VECTORS_V",
    "convert",
    "converter_for_path",
    "converters",
    "export_store",
    "format_of",
    "import_file",
    "register",
    "registered",
]


def format_of(path: StoreLike, name: str | None = None) -> Converter | None:
    """The converter named ``name``, or the one whose suffix ``path`` has (None if neither).

    Raises
    ------
    InvalidInputError
        When ``name`` is not a registered format.

    Examples
    --------
    >>> from zarr_vectors.converters import format_of
    >>> format_of("neuron.swc").name, format_of("cells.txt", "CSV").name
    ('swc', 'csv')
    >>> format_of("cells.zarrvectors") is None
    True
    """
    if name is not None:
        return registered(name)
    if not isinstance(path, str | os.PathLike):
        return None
    return converter_for_path(path)


def import_file(
    src: str | os.PathLike[str],
    dst: StoreLike,
    *,
    format: str | None = None,
    mode: WriteMode = "w-",
    overwrite: bool | None = None,
    chunk_shape: Any = None,
    bin_shape: Any = None,
    progress: ProgressOption = None,
    **options: Any,
) -> VectorStore:
    """Write the geometry of the file ``src`` into a new store at ``dst``.

    Parameters
    ----------
    src
        The file to read.
    dst
        The store to write (a path or a zarr store).
    format
        Format name (see :func:`converters`); default from the suffix of ``src``.
    mode
        ``"w-"`` (default): refuse an existing store at ``dst``; ``"w"``: replace an
        existing Zarr Vectors store (never anything else).
    overwrite
        Deprecated: ``overwrite=True`` is ``mode="w"`` (and warns).
    chunk_shape, bin_shape
        As for the ``write_*`` functions (default: chosen from the data).
    progress
        Progress bars of the conversion: reading the file (one step), then the chunks
        written. None (default) on a terminal or in Jupyter, True always, False never, or
        a callable ``progress(stage, done, total)``.
    **options
        Format-specific options (see the format's module).

    Returns
    -------
    VectorStore
        The new store, open for reading.

    Examples
    --------
    >>> import pathlib, tempfile
    >>> from zarr_vectors.converters import import_file
    >>> folder = pathlib.Path(tempfile.mkdtemp())
    >>> _ = (folder / "neuron.swc").write_text("1 1 0 0 0 1 -1\\n2 3 1 0 0 1 1\\n")
    >>> store = import_file(folder / "neuron.swc", folder / "neuron.zarr")
    >>> store.kind, store.vertex_count
    ('skeleton', 2)
    """
    fmt = format_of(src, format)
    if fmt is None:
        raise InvalidInputError(f"cannot tell the format of {os.fspath(src)!r}; give format=")
    path = Path(os.fspath(src))
    if not path.exists():
        raise InvalidInputError(f"no such file: {path} (check the path)")
    if not path.is_file():
        raise InvalidInputError(f"{path} is not a file; give the file to import")
    _check_not_a_file_format(path, dst)
    overwrite = _replaces(dst, mode, overwrite, "store")
    check_destination(dst, overwrite=overwrite)  # before the file is read
    with progress_reporter(progress) as report, enclosing(report):
        report("read file", 0, 1)
        fmt.import_file(
            path,
            dst,
            overwrite=overwrite,
            chunk_shape=chunk_shape,
            bin_shape=bin_shape,
            **options,
        )
    return open_store(dst)


def export_store(
    src: StoreLike | VectorStore,
    dst: str | os.PathLike[str],
    *,
    format: str | None = None,
    mode: WriteMode = "w-",
    overwrite: bool | None = None,
    progress: ProgressOption = None,
    **options: Any,
) -> Path:
    """Write the geometry of the store ``src`` into the file ``dst``.

    Parameters
    ----------
    src
        The store (a path, a zarr store or an open :class:`VectorStore`).
    dst
        The file to write.
    format
        Format name; default from the suffix of ``dst``.
    mode
        ``"w-"`` (default): refuse an existing file at ``dst``; ``"w"``: replace it.
    overwrite
        Deprecated: ``overwrite=True`` is ``mode="w"`` (and warns).
    progress
        Progress bars of the conversion: the chunks read from the store (point clouds;
        object stores one step), then writing the file (one step). None (default) on a
        terminal or in Jupyter, True always, False never, or a callable
        ``progress(stage, done, total)``.
    **options
        Format-specific options (see the format's module).

    Returns
    -------
    pathlib.Path
        The file written.

    Examples
    --------
    >>> import pathlib, tempfile
    >>> import zarr_vectors as zv
    >>> from zarr_vectors.converters import export_store
    >>> path = pathlib.Path(tempfile.mkdtemp()) / "cells.zarr"
    >>> _ = zv.write_mesh(path, [[0, 0, 0], [1, 0, 0], [0, 1, 0.0]], [[0, 1, 2]])
    >>> out = export_store(path, path.with_name("cells.obj"))
    >>> [line for line in out.read_text().splitlines() if line.startswith("f")]
    ['f 1 2 3']
    """
    store = src if isinstance(src, VectorStore) else open_store(src)
    fmt = format_of(dst, format)
    if fmt is None:
        raise InvalidInputError(f"cannot tell the format of {os.fspath(dst)!r}; give format=")
    if store.kind not in fmt.kinds:
        raise InvalidInputError(
            f"a {store.kind} store cannot be written as {fmt.name} "
            f"(it holds {', '.join(fmt.kinds)})"
        )
    overwrite = _replaces(dst, mode, overwrite, "file")
    path = Path(os.fspath(dst))
    if path.exists() and not overwrite:
        raise StoreExistsError(f'{path} exists; pass mode="w" to replace it')
    with progress_reporter(progress) as report, enclosing(report):
        fmt.export_store(store, path, overwrite=overwrite, **options)
        report("write file", 1, 1)
    return path


def convert(
    src: StoreLike | VectorStore,
    dst: StoreLike,
    *,
    format: str | None = None,
    mode: WriteMode = "w-",
    **options: Any,
) -> VectorStore | Path:
    """Convert a file of a known format into a store, or a store into a file.

    The direction follows the suffixes: when ``src`` is a file of a known format (or
    ``format=`` is given and ``src`` is a file), it is imported into the store ``dst``;
    a store of zarr-vectors 0.9.x ("layout V", found by its root attributes) is imported
    too (:mod:`zarr_vectors.converters.zarr_vectors_v`, option ``lossy``); a destination
    named ``*.precomputed`` (or ``format="precomputed"``) is a folder of Neuroglancer
    precomputed files (:mod:`zarr_vectors.converters.precomputed`); otherwise
    ``src`` is a store and is exported to the file ``dst``. A missing ``src``
    with the suffix of a format is reported as a missing file, a missing ``src`` of
    another name as a missing store: errors name the source before the destination.

    Parameters
    ----------
    src, dst
        The file and the store, or the store and the file.
    format
        Format name (see :func:`converters`); default from the file's suffix.
    mode
        ``"w-"`` (default): refuse an existing destination; ``"w"``: replace it (a Zarr
        Vectors store, or a file). ``overwrite=True`` is its deprecated spelling (warns).
    **options
        As for :func:`import_file` or :func:`export_store`: ``progress``, ``chunk_shape``
        and ``bin_shape`` (import), and the format's own options.

    Returns
    -------
    VectorStore or pathlib.Path
        The new store (import) or the file written (export).

    Examples
    --------
    >>> import pathlib, tempfile
    >>> import zarr_vectors as zv
    >>> path = pathlib.Path(tempfile.mkdtemp()) / "cells.zarr"
    >>> _ = zv.write_skeletons(path, [[0, 0, 0], [1, 0, 0.0]], parents=[-1, 0])
    >>> zv.convert(path, path.with_name("cells.swc")).name
    'cells.swc'
    >>> zv.convert(path.with_name("cells.swc"), path.with_name("again.zarr")).vertex_count
    2
    """
    v_store = _layout_v_store(src, format)
    if v_store is not None:
        return _import_store(v_store, dst, mode=mode, **options)
    if format is not None and format.lower() == V_FORMAT:
        return _export_store_v(src, dst, mode=mode, **options)
    if is_precomputed(dst, format):
        return _export_precomputed(src, dst, mode=mode, **options)
    file = _file_to_import(src, format)
    if file is not None:
        return import_file(file, dst, format=format, mode=mode, **options)
    if not isinstance(dst, str | os.PathLike):
        raise InvalidInputError("exporting needs a file path as the destination")
    return export_store(src, dst, format=format, mode=mode, **options)


V_FORMAT = ZARR_VECTORS_V.name
"""The format name of stores of zarr-vectors 0.9.x (layout V); not in the registry of file
formats (a layout-V store is a directory, found by its root attributes)."""


def _layout_v_store(src: StoreLike | VectorStore, format: str | None) -> Path | None:
    """``src`` when it is a local layout-V store (by its root attributes) to import."""
    path = _local_path(src)
    if path is None or not path.is_dir():
        return None
    if format is not None and format.lower() != V_FORMAT:
        return None
    return path if is_layout_v(read_root_attributes(path)) else None


def _import_store(
    src: Path,
    dst: StoreLike,
    *,
    mode: WriteMode = "w-",
    overwrite: bool | None = None,
    chunk_shape: Any = None,
    bin_shape: Any = None,
    progress: ProgressOption = None,
    **options: Any,
) -> VectorStore:
    """Write the layout-V store ``src`` into a new store at ``dst`` (see :func:`convert`)."""
    overwrite = _replaces(dst, mode, overwrite, "store")
    check_destination(dst, overwrite=overwrite)
    with progress_reporter(progress) as report, enclosing(report):
        report("read store", 0, 1)
        ZARR_VECTORS_V.import_file(
            src, dst, overwrite=overwrite, chunk_shape=chunk_shape, bin_shape=bin_shape, **options
        )
        report("read store", 1, 1)
    return open_store(dst)


def _export_store_v(
    src: StoreLike | VectorStore, dst: StoreLike, *, mode: WriteMode = "w-", **options: Any
) -> Path:
    """Write the store ``src`` as a layout-V store at the local path ``dst``."""
    path = _local_path(dst)
    if path is None:
        raise InvalidInputError("writing a zarr-vectors 0.9 store needs a local directory path")
    store = src if isinstance(src, VectorStore) else open_store(src)
    overwrite = _replaces(dst, mode, None, "store")
    ZARR_VECTORS_V.export_store(store, path, overwrite=overwrite, **options)
    return path


def _export_precomputed(
    src: StoreLike | VectorStore,
    dst: StoreLike,
    *,
    mode: WriteMode = "w-",
    progress: ProgressOption = None,
    **options: Any,
) -> Path:
    """Write the store ``src`` as Neuroglancer precomputed files in the folder ``dst``."""
    if options:
        raise InvalidInputError(
            f"unknown option(s) {', '.join(sorted(options))} for precomputed; its options: none"
        )
    store = src if isinstance(src, VectorStore) else open_store(src)
    overwrite = _replaces(dst, mode, None, "folder")
    return export_to_precomputed(store, dst, overwrite=overwrite, progress=progress)


def _replaces(dst: StoreLike, mode: Any, overwrite: Any, what: str) -> bool:
    """Whether a conversion replaces what is at ``dst``: ``mode="w"`` (or the deprecated
    ``overwrite=True``, which warns).

    Raises
    ------
    InvalidInputError
        For another mode than ``"w-"`` or ``"w"``, or an ``overwrite`` that is not a bool.
    """
    target = writer_arguments.destination(dst, mode, overwrite, None, stacklevel=5)
    if target.mode == "a":
        raise InvalidInputError(
            f"a conversion writes a new {what}: mode is 'w-' (default) or 'w' (replace)"
        )
    return target.overwrite


def _check_not_a_file_format(src: Path, dst: StoreLike) -> None:
    """Refuse to import into a store named like a file of a format (``a.ply`` -> ``b.obj``
    would write a store directory named ``b.obj``).

    Raises
    ------
    InvalidInputError
        When ``dst`` is a local path with the suffix of a format (other than ``.zip``).
    """
    path = _local_path(dst)
    fmt = None if path is None else format_of(path)
    if path is not None and fmt is not None:
        raise InvalidInputError(
            f"{str(path)!r} is named like a {fmt.name} file, but importing {src} writes a "
            f"store: convert {src} into a store (such as {src.stem}.zarrvectors) first, then "
            f"that store into {str(path)!r}"
        )


def _local_path(src: StoreLike | VectorStore) -> Path | None:
    """``src`` as a local path, or None for a URL, a zarr store or an open store."""
    if not isinstance(src, str | os.PathLike):
        return None
    text = os.fspath(src)
    return None if "://" in text else Path(text)


def _file_to_import(src: StoreLike | VectorStore, format: str | None) -> Path | None:
    """The file :func:`convert` imports: ``src`` when it is a file of a known format, or a
    missing path with the suffix of one (so that the error names the missing file); None
    when ``src`` is to be exported.

    Raises
    ------
    InvalidInputError
        When ``src`` is a file (not a ``.zip`` store) of no known format and ``format`` is
        not given: it is neither a file to import nor a store.
    """
    path = _local_path(src)
    if path is None or path.is_dir():
        return None
    known = format is not None or format_of(path) is not None
    if path.is_file() and not known and path.suffix.lower() != ".zip":
        raise InvalidInputError(f"cannot tell the format of {os.fspath(path)!r}; give format=")
    return path if known and (path.is_file() or format_of(path) is not None) else None
