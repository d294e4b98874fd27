"""Stores -> Neuroglancer precomputed folders (``zv.convert(store, "out.precomputed")``).

The export writes every file of every source :func:`zarr_vectors.precomputed.sources` gives
the store (point clouds: ``annotations``) under ``out.precomputed/<source>/``, through a
hidden sibling moved in at the end (:mod:`zarr_vectors.precomputed.export`). It is chosen by
the suffix ``.precomputed`` of the destination or by ``format="precomputed"``; like layout V
it is not in the registry of file formats (the destination is a folder, and nothing is
imported from one).
"""

from __future__ import annotations

import os
from pathlib import Path
from typing import Any

from zarr_vectors._progress import ProgressOption, enclosing, progress_reporter
from zarr_vectors.dataset import VectorStore
from zarr_vectors.errors import InvalidInputError
from zarr_vectors.precomputed import sources
from zarr_vectors.precomputed.export import export_precomputed

__all__ = ["PRECOMPUTED_FORMAT", "PRECOMPUTED_SUFFIX", "export_to_precomputed", "is_precomputed"]

PRECOMPUTED_FORMAT = "precomputed"
"""The format name of the export (``format="precomputed"``)."""

PRECOMPUTED_SUFFIX = ".precomputed"
"""The destination suffix that selects the export."""


def is_precomputed(dst: object, format: str | None) -> bool:
    """Whether :func:`zarr_vectors.convert` to ``dst`` is the precomputed export.

    Examples
    --------
    >>> from zarr_vectors.converters.precomputed import is_precomputed
    >>> is_precomputed("out.precomputed", None), is_precomputed("web", "precomputed")
    (True, True)
    >>> is_precomputed("out.ply", None)
    False
    """
    if format is not None:
        return format.lower() == PRECOMPUTED_FORMAT
    if not isinstance(dst, str | os.PathLike):
        return False
    return Path(os.fspath(dst)).suffix.lower() == PRECOMPUTED_SUFFIX


def export_to_precomputed(
    store: VectorStore, dst: Any, *, overwrite: bool, progress: ProgressOption = None
) -> Path:
    """Write ``store``'s precomputed sources as static files in the local folder ``dst``.

    Raises
    ------
    InvalidInputError
        When ``dst`` is not a local path, or the store has no precomputed source.
    StoreExistsError
        When ``dst`` exists and ``overwrite`` is false, or it is not an earlier export.

    Examples
    --------
    >>> import pathlib, tempfile
    >>> import zarr_vectors as zv
    >>> folder = pathlib.Path(tempfile.mkdtemp())
    >>> zv.write_points(folder / "cells.zarr", [[1.0, 1, 1], [7, 7, 7]], chunk_shape=5.0)
    >>> out = zv.convert(folder / "cells.zarr", folder / "cells.precomputed")
    >>> (out / "annotations" / "info").is_file()
    True
    """
    text = os.fspath(dst) if isinstance(dst, str | os.PathLike) else None
    if text is None or "://" in text:
        raise InvalidInputError(
            "a precomputed export is written to a local folder; give a path such as "
            "'out.precomputed' (then copy the folder to a web server or bucket)"
        )
    with progress_reporter(progress) as report, enclosing(report):
        report("write precomputed files", 0, 1)
        path = export_precomputed(sources(store), Path(text), overwrite=overwrite)
        report("write precomputed files", 1, 1)
    return path
