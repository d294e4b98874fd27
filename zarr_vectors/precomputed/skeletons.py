"""The ``skeletons`` source: every object of a line store as a Neuroglancer skeleton, by id.

A skeleton, polyline, streamline or graph store is shown as a ``neuroglancer_skeletons``
source: an ``info`` and one file per object id (its decimal id), each encoded as Neuroglancer
and cloud-volume read it (little-endian): the vertex count and edge count (``uint32``), the
positions (``float32``, three per vertex), the edges (``uint32`` vertex pairs), then each
vertex attribute the ``info`` lists. Skeletons and graphs keep their edges (a skeleton's are
``[child, parent]``); a polyline or streamline is the chain of its consecutive vertices.

Each file is computed from one by-id read of the store (only the chunks the object's
manifest names). Level 0 only: a skeleton layer has no levels of detail to switch between,
so a coarse level would only be a second layer to pick by hand (meshes use the levels).
"""

from __future__ import annotations

import struct
from collections.abc import Iterator
from typing import TYPE_CHECKING, Any

import numpy as np

from zarr_vectors.errors import InvalidInputError, ObjectNotFoundError
from zarr_vectors.precomputed._model_space import (
    json_bytes,
    segment_id,
    shown_dtype,
    stored_positions,
    transform_of,
)
from zarr_vectors.precomputed._segment_properties import (
    PROPERTIES_FOLDER,
    PROPERTIES_INFO,
    Segments,
)
from zarr_vectors.precomputed.source import PrecomputedFileNotFoundError

if TYPE_CHECKING:
    from zarr_vectors.dataset import VectorStore
    from zarr_vectors.result import QueryResult

__all__ = ["SKELETON_KINDS", "SkeletonSource", "encode_skeleton", "skeleton_sources"]

SKELETON_KINDS = ("skeleton", "graph", "polyline", "streamline")
"""The kinds shown as skeletons: every kind whose objects are vertices joined by edges."""


def _components(shape: tuple[int, ...]) -> int:
    """Values per vertex of an attribute whose rows have ``shape``."""
    return int(np.prod(shape, dtype=np.int64))


def _chain_edges(count: int) -> np.ndarray:
    """``[r, r + 1]`` for every consecutive pair of ``count`` vertices (a polyline's edges)."""
    rows = np.arange(max(count - 1, 0), dtype="<u4")
    return np.stack([rows, rows + 1], axis=1)


def encode_skeleton(
    positions: np.ndarray, edges: np.ndarray, attributes: list[np.ndarray] | None = None
) -> bytes:
    """One skeleton in Neuroglancer's precomputed encoding.

    Parameters
    ----------
    positions
        ``(n, 3)`` vertex positions (written as little-endian ``float32``).
    edges
        ``(e, 2)`` vertex index pairs (written as little-endian ``uint32``).
    attributes
        Vertex attributes in the order the ``info`` lists them, each ``n`` rows already of
        the type it names.

    Returns
    -------
    bytes
        ``uint32`` vertex count, ``uint32`` edge count, positions, edges, attributes.

    Examples
    --------
    >>> import numpy as np
    >>> from zarr_vectors.precomputed.skeletons import encode_skeleton
    >>> data = encode_skeleton(np.zeros((2, 3)), np.array([[1, 0]]))
    >>> len(data), data[:8].hex()
    (40, '0200000001000000')
    """
    counts = struct.pack("<II", len(positions), len(edges))
    parts = [counts, np.ascontiguousarray(positions, dtype="<f4").tobytes()]
    parts.append(np.ascontiguousarray(edges, dtype="<u4").tobytes())
    parts.extend(np.ascontiguousarray(values).tobytes() for values in attributes or [])
    return b"".join(parts)


class SkeletonSource:
    """A line store's objects as a ``neuroglancer_skeletons`` source, one file per id.

    Parameters
    ----------
    store
        An open skeleton, graph, polyline or streamline store.

    Attributes
    ----------
    name
        ``"skeletons"``, the source's folder.

    Examples
    --------
    >>> import pathlib, tempfile, json
    >>> import numpy as np
    >>> import zarr_vectors as zv
    >>> from zarr_vectors.precomputed.skeletons import SkeletonSource
    >>> path = pathlib.Path(tempfile.mkdtemp()) / "neuron.zarr"
    >>> xyz = np.array([[0, 0, 0], [1, 0, 0], [2, 0, 0], [1, 1, 0]], dtype=np.float32)
    >>> zv.write_skeletons(path, xyz, [-1, 0, 1, 1], radius=[1.0, 0.5, 0.5, 0.5],
    ...                    chunk_shape=4.0, units="micrometer", progress=False)
    >>> source = SkeletonSource(zv.open(path))
    >>> list(source.paths())
    ['info', 'segment_properties/info', '0']
    >>> info = json.loads(source.read("info"))
    >>> info["transform"][:4], info["vertex_attributes"]
    ([1000.0, 0.0, 0.0, 0.0], [{'id': 'radius', 'data_type': 'float32', 'num_components': 1}])
    >>> len(source.read("0"))   # 8 + 4 * 12 + 3 * 8 + 4 * 4
    96
    """

    name = "skeletons"

    def __init__(self, store: VectorStore) -> None:
        if store.kind not in SKELETON_KINDS:
            raise InvalidInputError(
                f"a {store.kind} store has no skeletons; skeletons are offered for "
                f"{', '.join(SKELETON_KINDS)} stores"
            )
        self._store = store
        self._segments = Segments(store)
        empty = store.read_objects(np.empty(0, dtype=np.int64))
        self._attributes = self._shown_attributes(empty)
        self._extra_axes = self._extra_axis_names(store)

    @staticmethod
    def _shown_attributes(empty: QueryResult) -> dict[str, tuple[np.dtype[Any], int]]:
        """The vertex attributes Neuroglancer can show: name → (type shown, components)."""
        shown: dict[str, tuple[np.dtype[Any], int]] = {}
        for name, values in empty.attributes.items():
            dtype = shown_dtype(values.dtype)
            if dtype is not None:
                shown[name] = (dtype, _components(values.shape[1:]))
        return shown

    def _extra_axis_names(self, store: VectorStore) -> list[str]:
        """Axes past the third, shown as ``float32`` attributes unless a name is taken."""
        return [name for name in store.axis_names[3:] if name not in self._attributes]

    def info(self) -> dict[str, Any]:
        """The source's ``info`` document (a ``neuroglancer_skeletons``).

        Examples
        --------
        >>> import pathlib, tempfile
        >>> import numpy as np
        >>> import zarr_vectors as zv
        >>> from zarr_vectors.precomputed.skeletons import SkeletonSource
        >>> path = pathlib.Path(tempfile.mkdtemp()) / "lines.zarr"
        >>> zv.write_polylines(path, [np.array([[0, 0], [5, 5.0]])], chunk_shape=10.0)
        >>> SkeletonSource(zv.open(path)).info()["@type"]
        'neuroglancer_skeletons'
        """
        attributes = [
            {"id": name, "data_type": dtype.name, "num_components": components}
            for name, (dtype, components) in self._attributes.items()
        ]
        attributes += [
            {"id": name, "data_type": "float32", "num_components": 1} for name in self._extra_axes
        ]
        return {
            "@type": "neuroglancer_skeletons",
            "transform": transform_of(self._store.axis_units),
            "vertex_attributes": attributes,
            "segment_properties": PROPERTIES_FOLDER,
        }

    def segment_ids(self) -> np.ndarray:
        """The ids of the objects this source has a skeleton of (non-negative), ascending."""
        return self._segments.ids()

    def paths(self) -> Iterator[str]:
        """``"info"``, the segment properties, then the decimal id of every object, ascending.

        Examples
        --------
        >>> import pathlib, tempfile
        >>> import numpy as np
        >>> import zarr_vectors as zv
        >>> from zarr_vectors.precomputed.skeletons import SkeletonSource
        >>> path = pathlib.Path(tempfile.mkdtemp()) / "lines.zarr"
        >>> lines = [np.array([[0, 0], [5, 5.0]]), np.array([[9, 9], [1, 1.0]])]
        >>> zv.write_polylines(path, lines, chunk_shape=10.0, object_ids=[12, 3])
        >>> list(SkeletonSource(zv.open(path)).paths())
        ['info', 'segment_properties/info', '3', '12']
        """
        yield "info"
        yield PROPERTIES_INFO
        for object_id in self.segment_ids():
            yield str(int(object_id))

    def read(self, path: str) -> bytes:
        """The bytes of ``info``, of the segment properties or of one object's skeleton file.

        Raises
        ------
        PrecomputedFileNotFoundError
            When ``path`` is neither ``info`` nor the decimal id of an object of the store.

        Examples
        --------
        >>> import pathlib, tempfile
        >>> import numpy as np
        >>> import zarr_vectors as zv
        >>> from zarr_vectors.precomputed.skeletons import SkeletonSource
        >>> path = pathlib.Path(tempfile.mkdtemp()) / "lines.zarr"
        >>> zv.write_polylines(path, [np.array([[0, 0], [5, 5.0]])], chunk_shape=10.0)
        >>> data = SkeletonSource(zv.open(path)).read("0")
        >>> np.frombuffer(data, "<u4", count=2).tolist()   # 2 vertices, 1 edge
        [2, 1]
        >>> SkeletonSource(zv.open(path)).read("7")
        Traceback (most recent call last):
            ...
        zarr_vectors.precomputed.source.PrecomputedFileNotFoundError: no skeleton 7: ...
        """
        if path == "info":
            return json_bytes(self.info())
        if path == PROPERTIES_INFO:
            return json_bytes(self._segments.info())
        object_id = segment_id(path)
        if object_id is None or object_id >= 2**63:
            raise PrecomputedFileNotFoundError(
                f"no file {path!r} in the skeletons source: its files are 'info', "
                f"{PROPERTIES_INFO!r} and the decimal id of each object"
            )
        try:
            found = self._store.read_objects(object_id)
        except ObjectNotFoundError as missing:
            raise PrecomputedFileNotFoundError(
                f"no skeleton {object_id}: the store has no object with this id"
            ) from missing
        return self._encoded(found)

    def _encoded(self, found: QueryResult) -> bytes:
        """One object read by id, as a skeleton file."""
        positions = found.positions
        edges = found.edges if found.edges is not None else _chain_edges(len(positions))
        values = [
            np.asarray(found.attributes[name]).reshape(len(positions), -1).astype(dtype)
            for name, (dtype, _) in self._attributes.items()
        ]
        first_extra = 3
        values += [
            positions[:, first_extra + axis].astype("<f4")
            for axis, name in enumerate(self._store.axis_names[3:])
            if name in self._extra_axes
        ]
        return encode_skeleton(stored_positions(positions), edges, values)


def skeleton_sources(store: VectorStore) -> list[SkeletonSource]:
    """The skeleton sources of ``store``: one for a line store with objects, else none.

    Examples
    --------
    >>> import pathlib, tempfile
    >>> import zarr_vectors as zv
    >>> from zarr_vectors.precomputed.skeletons import skeleton_sources
    >>> path = pathlib.Path(tempfile.mkdtemp()) / "cells.zarr"
    >>> zv.write_points(path, [[0.0, 0.0, 0.0]], chunk_shape=10.0)
    >>> skeleton_sources(zv.open(path))
    []
    """
    if store.kind not in SKELETON_KINDS or not store.object_count:
        return []
    return [SkeletonSource(store)]
