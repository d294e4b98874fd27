"""The static export: every file of every precomputed source of a store, under one folder.

``export_precomputed(store, "out.precomputed")`` writes ``out.precomputed/<source name>/<path>``
for every path of every source of :func:`~zarr_vectors.precomputed.sources`, the bytes its
``read(path)`` returns, for any static web server or bucket (Neuroglancer:
``precomputed://https://host/out.precomputed/annotations``). The folder is written in a hidden
sibling and moved in (or swapped with the export it replaces) at the end by the store layer's
commit steps, as every write of this library: a failed export leaves the destination as it
was.
"""

from __future__ import annotations

import shutil
from collections.abc import Mapping
from pathlib import Path

from zarr_vectors.errors import InvalidInputError, StoreExistsError
from zarr_vectors.precomputed.source import PrecomputedSource
from zarr_vectors.store import commit

__all__ = ["export_precomputed", "is_precomputed_export", "write_sources"]


def is_precomputed_export(path: Path) -> bool:
    """Whether ``path`` is a folder this export wrote: every entry a folder with an ``info``.

    Examples
    --------
    >>> import pathlib, tempfile
    >>> from zarr_vectors.precomputed.export import is_precomputed_export
    >>> folder = pathlib.Path(tempfile.mkdtemp())
    >>> (folder / "annotations").mkdir()
    >>> is_precomputed_export(folder)
    False
    >>> _ = (folder / "annotations" / "info").write_text("{}")
    >>> is_precomputed_export(folder)
    True
    """
    if not path.is_dir():
        return False
    entries = list(path.iterdir())
    return bool(entries) and all(e.is_dir() and (e / "info").is_file() for e in entries)


def write_sources(found: Mapping[str, PrecomputedSource], folder: Path) -> int:
    """Write every file of every source under ``folder/<name>/``; the number of files.

    Examples
    --------
    >>> import pathlib, tempfile
    >>> from zarr_vectors.precomputed.export import write_sources
    >>> class One:
    ...     name = "annotations"
    ...     def paths(self):
    ...         yield "info"
    ...     def read(self, path):
    ...         return b"{}"
    >>> folder = pathlib.Path(tempfile.mkdtemp())
    >>> write_sources({"annotations": One()}, folder)
    1
    >>> (folder / "annotations" / "info").read_bytes()
    b'{}'
    """
    written = 0
    made: set[Path] = set()
    for name, source in found.items():
        for path in source.paths():
            target = folder / name / path
            if target.parent not in made:
                target.parent.mkdir(parents=True, exist_ok=True)
                made.add(target.parent)
            target.write_bytes(source.read(path))
            written += 1
    return written


def export_precomputed(
    found: Mapping[str, PrecomputedSource],
    path: Path,
    *,
    overwrite: bool = False,
) -> Path:
    """Write the sources ``found`` as static files under the folder ``path``.

    Parameters
    ----------
    found
        The sources by name (:func:`~zarr_vectors.precomputed.sources`).
    path
        The folder to write (conventionally named ``*.precomputed``).
    overwrite
        Replace a folder an earlier export wrote (never anything else).

    Raises
    ------
    InvalidInputError
        When there are no sources (the store holds nothing Neuroglancer can show).
    StoreExistsError
        When ``path`` exists and is not replaced.

    Examples
    --------
    >>> import pathlib, tempfile
    >>> import zarr_vectors as zv
    >>> from zarr_vectors.precomputed import sources
    >>> from zarr_vectors.precomputed.export import export_precomputed
    >>> folder = pathlib.Path(tempfile.mkdtemp())
    >>> zv.write_points(folder / "cells.zarr", [[1.0, 1, 1], [7, 7, 7]], chunk_shape=5.0)
    >>> out = export_precomputed(sources(zv.open(folder / "cells.zarr")),
    ...                          folder / "cells.precomputed")
    >>> sorted(p.name for p in (out / "annotations").iterdir())
    ['by_id', 'info', 'spatial0']
    """
    if not found:
        raise InvalidInputError(
            "the store has nothing to show in Neuroglancer (no precomputed source: an empty "
            "store, or a kind without one); check zarr_vectors.precomputed.sources(store)"
        )
    replaced = overwrite and is_precomputed_export(path)
    if path.exists() and not replaced:
        raise StoreExistsError(
            f'{path} exists; pass mode="w" to replace a precomputed export there'
        )
    path.parent.mkdir(parents=True, exist_ok=True)
    staging = commit.sibling(path, "writing")
    try:
        staging.mkdir()
        write_sources(found, staging)
        (commit.commit_replacement if replaced else commit.commit_fresh)(staging, path)
    finally:
        shutil.rmtree(staging, ignore_errors=True)  # a failed export's, or the old folder
    return path
