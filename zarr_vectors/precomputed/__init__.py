"""Neuroglancer precomputed sources computed from a store: served live or exported as files.

:class:`PrecomputedSource` is the shape every source has (``name``, ``paths()``,
``read(path)``); the server and the static export use nothing else. :func:`sources` gives
the sources a store has.
"""

from __future__ import annotations

from typing import TextIO

from zarr_vectors.dataset import VectorStore
from zarr_vectors.dataset import open as open_store
from zarr_vectors.errors import InvalidInputError
from zarr_vectors.precomputed.annotations import PointAnnotations
from zarr_vectors.precomputed.line_annotations import LINE_KINDS, LineAnnotations
from zarr_vectors.precomputed.links import NEUROGLANCER_CLIENT
from zarr_vectors.precomputed.meshes import MeshSource, mesh_sources
from zarr_vectors.precomputed.server import PortInUseError, PrecomputedServer, ServedRequest
from zarr_vectors.precomputed.skeletons import SkeletonSource, skeleton_sources
from zarr_vectors.precomputed.source import PrecomputedFileNotFoundError, PrecomputedSource
from zarr_vectors.store.io import StoreLike

__all__ = [
    "LineAnnotations",
    "MeshSource",
    "PointAnnotations",
    "PrecomputedFileNotFoundError",
    "PrecomputedSource",
    "SkeletonSource",
    "mesh_sources",
    "skeleton_sources",
    "sources",
    "serve",
    "PrecomputedServer",
    "ServedRequest",
    "PortInUseError",
    "NEUROGLANCER_CLIENT",
]


def sources(store: VectorStore) -> dict[str, PrecomputedSource]:
    """The precomputed sources of a store, by name (their folder under the root).

    A point cloud has ``annotations`` (points), a polyline, streamline or graph store has
    ``annotations`` (lines: segments, edges); skeleton, graph, polyline and streamline
    stores have ``skeletons`` (one per object id), mesh stores ``meshes`` (multi-resolution
    from their levels of detail); an empty store has none.

    Examples
    --------
    >>> import pathlib, tempfile
    >>> import numpy as np
    >>> import zarr_vectors as zv
    >>> from zarr_vectors.precomputed import sources
    >>> path = pathlib.Path(tempfile.mkdtemp()) / "cells.zarr"
    >>> zv.write_points(path, [[1.0, 1, 1], [7, 7, 7]], chunk_shape=5.0)
    >>> list(sources(zv.open(path)))
    ['annotations']
    >>> lines = pathlib.Path(tempfile.mkdtemp()) / "lines.zarr"
    >>> zv.write_polylines(lines, [np.array([[0, 0], [5, 5.0]])], chunk_shape=10.0)
    >>> list(sources(zv.open(lines)))
    ['annotations', 'skeletons']
    """
    found: dict[str, PrecomputedSource] = {}
    if store.kind == "point_cloud" and store.vertex_count > 0:
        found["annotations"] = PointAnnotations(store)
    if store.kind in LINE_KINDS and store.vertex_count > 0:
        found["annotations"] = LineAnnotations(store)
    by_id: list[PrecomputedSource] = [*skeleton_sources(store), *mesh_sources(store)]
    for source in by_id:
        found[source.name] = source
    return found


def serve(
    store: VectorStore | StoreLike, *, port: int = 0, log: TextIO | None = None
) -> PrecomputedServer:
    """Serve a store to Neuroglancer, as precomputed sources computed on the fly.

    The server answers at ``http://127.0.0.1:<port>/<source>/`` (:func:`sources` says which
    sources a store has) from background threads that share one opened store, until it is
    closed (``with`` block or ``close()``). ``server.neuroglancer_link()`` opens every source
    in a Neuroglancer client; ``zarr-vectors serve STORE`` does the same from a shell.

    Parameters
    ----------
    store
        An open store, or anything :func:`zarr_vectors.open` opens (a path, a URL).
    port
        TCP port on 127.0.0.1; 0 (default) takes a free one (``server.port``).
    log
        A text stream to print one line per request to (default: none; every request is
        kept in ``server.requests``).

    Returns
    -------
    PrecomputedServer
        The running server (``.url``, ``.neuroglancer_link()``, ``.close()``).

    Raises
    ------
    InvalidInputError
        When the store has nothing Neuroglancer shows (no vertex, or a kind without a
        precomputed source yet).
    PortInUseError
        When ``port`` is taken.

    Examples
    --------
    >>> import json, pathlib, tempfile, urllib.request
    >>> import zarr_vectors as zv
    >>> path = pathlib.Path(tempfile.mkdtemp()) / "cells.zarr"
    >>> zv.write_points(path, [[1.0, 1, 1], [7, 7, 7]], chunk_shape=5.0)
    >>> with zv.serve(path) as server:
    ...     info = json.load(urllib.request.urlopen(server.url + "/annotations/info"))
    ...     link = server.neuroglancer_link()
    >>> info["annotation_type"]
    'point'
    >>> link.startswith("https://neuroglancer-demo.appspot.com/#!")
    True
    """
    opened = store if isinstance(store, VectorStore) else open_store(store)
    found = sources(opened)
    if not found:
        raise InvalidInputError(
            f"this {opened.kind} store has nothing Neuroglancer can show yet "
            "(no vertex, or no precomputed source for its kind): write geometry into it first"
        )
    return PrecomputedServer(found, port=port, log=log)
