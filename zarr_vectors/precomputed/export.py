"""The static export: every file of every precomputed source of a store, under one folder.

``export_precomputed(store, "out.precomputed")`` writes ``out.precomputed/<source name>/<path>``
for every path of every source of :func:`~zarr_vectors.precomputed.sources`, the bytes its
``read(path)`` returns, for any static web server or bucket (Neuroglancer:
``precomputed://https://host/out.precomputed/annotations``). The folder is written in a hidden
sibling and moved in (or swapped with the export it replaces) at the end by the store layer's
commit steps, as every write of this library: a failed export leaves the destination as it
was. The file :data:`EXPORT_MARKER` at the root marks the folder as ours: ``mode="w"``
replaces a folder holding it, and nothing else (a missing path or an empty directory is
written either way).
"""

from __future__ import annotations

import json
import shutil
from collections.abc import Mapping
from pathlib import Path

from zarr_vectors.errors import InvalidInputError, StoreExistsError
from zarr_vectors.precomputed.source import PrecomputedSource
from zarr_vectors.store import commit
from zarr_vectors.store.destination import Occupant, local_occupant, normalized_destination

__all__ = ["EXPORT_MARKER", "export_precomputed", "is_precomputed_export", "write_sources"]

EXPORT_MARKER = "zarr_vectors_export.json"
"""The file at the root of every export that marks it as ours (:func:`is_precomputed_export`):
only a folder holding it is replaced by ``mode="w"``."""
EXPORT_VERSION = 1
"""The marker's value under its key: the version of the export's layout."""
_MARKER_KEY = "zarr_vectors_precomputed_export"


def is_precomputed_export(path: Path) -> bool:
    """Whether ``path`` is a folder this export wrote: it holds the marker
    :data:`EXPORT_MARKER`, a JSON object with the key ``"zarr_vectors_precomputed_export"``.

    A folder of precomputed sources written by anything else (``info`` files and all) is not
    one, so ``mode="w"`` never replaces it.

    Examples
    --------
    >>> import pathlib, tempfile
    >>> from zarr_vectors.precomputed.export import EXPORT_MARKER, is_precomputed_export
    >>> folder = pathlib.Path(tempfile.mkdtemp())
    >>> (folder / "annotations").mkdir()
    >>> _ = (folder / "annotations" / "info").write_text("{}")
    >>> is_precomputed_export(folder)
    False
    >>> _ = (folder / EXPORT_MARKER).write_text('{"zarr_vectors_precomputed_export": 1}')
    >>> is_precomputed_export(folder)
    True
    """
    marker = path / EXPORT_MARKER
    if path.is_symlink() or not marker.is_file():
        return False
    try:
        found = json.loads(marker.read_bytes())
    except (OSError, ValueError):  # unreadable, not UTF-8, not JSON: not our marker
        return False
    return isinstance(found, dict) and _MARKER_KEY in found


def _marker(found: Mapping[str, PrecomputedSource]) -> bytes:
    """The marker document: our key (the export's version) and the sources written."""
    return json.dumps({_MARKER_KEY: EXPORT_VERSION, "sources": sorted(found)}, indent=1).encode()


def _replaces(path: Path, *, overwrite: bool) -> bool:
    """Whether the export replaces what is at ``path`` (an earlier export, with
    ``overwrite``), else writes it fresh (nothing there, or an empty directory).

    Raises
    ------
    StoreExistsError
        When ``path`` holds an export and ``overwrite`` is false, or anything else.
    """
    found = local_occupant(path)
    if found.occupant in (Occupant.MISSING, Occupant.EMPTY):
        return False
    if _plain_directory(path) and is_precomputed_export(path):
        if overwrite:
            return True
        raise StoreExistsError(
            f'{path} holds a precomputed export of zarr-vectors; pass mode="w" to replace it '
            "(nothing was written)"
        )
    what = found.what or "a Zarr Vectors store"
    raise StoreExistsError(
        f"{path} is {what}; an export replaces only an earlier export of zarr-vectors (a "
        f'folder holding {EXPORT_MARKER}), so it is not replaced (with or without mode="w") '
        "and nothing was written: export to a new path or an empty directory, or remove it "
        "yourself if it should go"
    )


def _plain_directory(path: Path) -> bool:
    """A directory, not a symbolic link, not the working directory or one of its parents."""
    try:
        here = Path.cwd()
    except FileNotFoundError:  # the working directory was removed
        return path.is_dir() and not path.is_symlink()
    return path.is_dir() and not path.is_symlink() and path != here and path not in here.parents


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
        Replace a folder an earlier export wrote (it holds :data:`EXPORT_MARKER`); never
        anything else. A missing path or an empty directory is written either way.

    Raises
    ------
    InvalidInputError
        When there are no sources (the store holds nothing Neuroglancer can show).
    StoreExistsError
        When ``path`` holds an earlier export and ``overwrite`` is false, or anything else
        but an empty directory (a folder without the marker, a file, a link, a store).

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
    >>> sorted(p.name for p in out.iterdir())
    ['annotations', 'zarr_vectors_export.json']
    """
    if not found:
        raise InvalidInputError(
            "the store has nothing to show in Neuroglancer (no precomputed source: an empty "
            "store, or a kind without one); check zarr_vectors.precomputed.sources(store)"
        )
    target = normalized_destination(path)
    replaced = _replaces(target, overwrite=overwrite)
    target.parent.mkdir(parents=True, exist_ok=True)
    staging = commit.sibling(target, "writing")
    try:
        staging.mkdir()
        write_sources(found, staging)
        (staging / EXPORT_MARKER).write_bytes(_marker(found))
        (commit.commit_replacement if replaced else commit.commit_fresh)(staging, target)
    finally:
        shutil.rmtree(staging, ignore_errors=True)  # a failed export's, or the old folder
    return path
