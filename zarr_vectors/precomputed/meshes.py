"""The ``meshes`` source: every object of a mesh store as a Neuroglancer mesh, by id.

Two of Neuroglancer's precomputed mesh formats, both read by cloud-volume:

* a store with levels of detail is a **multi-resolution** source
  (``neuroglancer_multilod_draco``): object ``id`` has a manifest ``<id>.index`` and a data
  file ``<id>`` holding one Draco-encoded fragment per level the object is in (level N is
  LOD N; a coarse level that leaves the object out ends its LODs), so Neuroglancer draws the
  coarse level far away and refines as it zooms in. Each LOD is one fragment at grid
  position 0, the grid cell being the object's bounding box over its levels; positions are
  quantized to 16 bits of that box (LOD N: of a box 2**N as large), as the format requires.
* a store without levels is a **legacy single-resolution** source
  (``neuroglancer_legacy_mesh``): manifest ``<id>:0`` (JSON naming one fragment) and the
  fragment ``<id>:0:1`` (``uint32`` vertex count, ``float32`` positions in nanometres,
  ``uint32`` triangle indices), exact to ``float32`` with no Draco decoder needed.

Every file is computed from by-id reads of the store (only the chunks the object's
manifests name). Vertex and face attributes are not shown: neither format carries them.
"""

from __future__ import annotations

import struct
import threading
from collections import OrderedDict
from collections.abc import Iterator
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

import numpy as np

from zarr_vectors._optional import require
from zarr_vectors.errors import InvalidInputError, ObjectNotFoundError
from zarr_vectors.format.levels import IMPORTED
from zarr_vectors.precomputed._model_space import (
    json_bytes,
    scale_of,
    segment_id,
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

__all__ = [
    "QUANTIZATION_BITS",
    "MeshSource",
    "encode_legacy_fragment",
    "mesh_sources",
]

QUANTIZATION_BITS = 16
"""Bits per position component of a multi-resolution fragment (Neuroglancer: 10 or 16)."""

_RECENT = 16
"""Objects whose encoded multi-resolution files a source keeps (a manifest, then its data)."""


def encode_legacy_fragment(positions: np.ndarray, faces: np.ndarray) -> bytes:
    """One mesh as a legacy precomputed fragment.

    Parameters
    ----------
    positions
        ``(n, 3)`` vertex positions (written as little-endian ``float32``).
    faces
        ``(f, 3)`` vertex indices of each triangle (written as little-endian ``uint32``).

    Returns
    -------
    bytes
        ``uint32`` vertex count, the positions, the triangle indices.

    Examples
    --------
    >>> import numpy as np
    >>> from zarr_vectors.precomputed.meshes import encode_legacy_fragment
    >>> data = encode_legacy_fragment(np.eye(3), np.array([[0, 1, 2]]))
    >>> len(data), data[:4].hex()
    (52, '03000000')
    """
    return b"".join(
        [
            struct.pack("<I", len(positions)),
            np.ascontiguousarray(positions, dtype="<f4").tobytes(),
            np.ascontiguousarray(faces, dtype="<u4").tobytes(),
        ]
    )


@dataclass(frozen=True)
class _Lod:
    """One level of detail of one object: its positions (stored model units) and faces."""

    positions: np.ndarray
    faces: np.ndarray
    scale: float


def _quantized(positions: np.ndarray, origin: np.ndarray, cell: np.ndarray) -> np.ndarray:
    """Positions as integers in ``[0, 2**bits - 1]`` of the cell ``[origin, origin + cell]``."""
    top = 2**QUANTIZATION_BITS - 1
    steps: np.ndarray = np.clip(np.rint((positions - origin) / cell * top), 0, top)
    return steps.astype(np.uint32)


def _multilod_files(lods: list[_Lod]) -> tuple[bytes, bytes]:
    """The manifest and the data file of one object's levels of detail (finest first).

    Each LOD is one Draco fragment at grid position 0; the grid cell is the bounding box of
    every LOD (an axis of zero extent gets 1), so LOD N's cell, 2**N as large, holds it too
    and no triangle of LOD N > 0 crosses the 2x2x2 split of its cell (all lie in the first
    octant), as the format requires. The positions are the quantized integers, given to
    Draco as ``uint32`` so that it stores an integer attribute without quantizing it again
    (the format does not support Draco's quantization); vertex and face order are kept.
    """
    draco = require("DracoPy", extra="neuroglancer", purpose="multi-resolution meshes")
    everything = np.concatenate([lod.positions for lod in lods])
    origin = everything.min(axis=0) if len(everything) else np.zeros(3)
    extent = everything.max(axis=0) - origin if len(everything) else np.ones(3)
    cell = np.where(extent > 0, extent, 1.0).astype(np.float32).astype(np.float64)
    origin = origin.astype(np.float32).astype(np.float64)
    fragments = []
    for level, lod in enumerate(lods):
        if len(lod.faces) == 0:
            fragments.append(b"")
            continue
        steps = _quantized(lod.positions, origin, cell * 2**level)
        faces = np.asarray(lod.faces, dtype=np.uint32)
        fragments.append(draco.encode(steps, faces, preserve_order=True))
    return _manifest(lods, origin, cell, fragments), b"".join(fragments)


def _manifest(lods: list[_Lod], origin: np.ndarray, cell: np.ndarray, sizes: list[bytes]) -> bytes:
    """The ``<id>.index`` file: grid, LOD scales and offsets, one fragment per LOD."""
    count = len(lods)
    parts = [
        np.asarray(cell, dtype="<f4").tobytes(),
        np.asarray(origin, dtype="<f4").tobytes(),
        struct.pack("<I", count),
        np.asarray([lod.scale for lod in lods], dtype="<f4").tobytes(),
        np.zeros((count, 3), dtype="<f4").tobytes(),
        np.ones(count, dtype="<u4").tobytes(),
    ]
    for fragment in sizes:
        parts.append(np.zeros(3, dtype="<u4").tobytes())
        parts.append(struct.pack("<I", len(fragment)))
    return b"".join(parts)


class MeshSource:
    """A mesh store's objects as a Neuroglancer mesh source, one manifest per id.

    Multi-resolution (``neuroglancer_multilod_draco``, one LOD per level) when the store
    has levels of detail, else legacy single-resolution (``neuroglancer_legacy_mesh``).

    Parameters
    ----------
    store
        An open mesh store.

    Attributes
    ----------
    name
        ``"meshes"``, the source's folder.

    Examples
    --------
    >>> import pathlib, tempfile, json
    >>> import numpy as np
    >>> import zarr_vectors as zv
    >>> from zarr_vectors.precomputed.meshes import MeshSource
    >>> path = pathlib.Path(tempfile.mkdtemp()) / "tet.zarr"
    >>> xyz = np.array([[0, 0, 0], [1, 0, 0], [0, 1, 0], [0, 0, 1]], dtype=np.float32)
    >>> faces = np.array([[0, 2, 1], [0, 1, 3], [0, 3, 2], [1, 2, 3]])
    >>> zv.write_mesh(path, xyz, faces, chunk_shape=4.0, progress=False)
    >>> source = MeshSource(zv.open(path))
    >>> list(source.paths())
    ['info', 'segment_properties/info', '0:0', '0:0:1']
    >>> json.loads(source.read("0:0"))
    {'fragments': ['0:0:1']}
    >>> len(source.read("0:0:1"))   # 4 + 4 * 12 + 4 * 12
    100
    """

    name = "meshes"

    def __init__(self, store: VectorStore) -> None:
        if store.kind != "mesh":
            raise InvalidInputError(
                f"a {store.kind} store has no meshes; meshes are of mesh stores"
            )
        self._store = store
        # imported levels (spec §4.3.4) hold no faces: not levels of detail of a mesh
        levels = [info for info in store.levels if info.method != IMPORTED]
        self._levels = [info.level for info in levels]
        self._scales = [float(max(info.bin_shape or store.bin_shape)) for info in levels]
        self._segments = Segments(store)
        self._recent: OrderedDict[int, tuple[bytes, bytes]] = OrderedDict()
        self._recent_lock = threading.Lock()  # a server answers requests in threads

    @property
    def multiresolution(self) -> bool:
        """True when the source is ``neuroglancer_multilod_draco`` (the store has levels).

        Examples
        --------
        >>> import pathlib, tempfile
        >>> import numpy as np
        >>> import zarr_vectors as zv
        >>> from zarr_vectors.precomputed.meshes import MeshSource
        >>> path = pathlib.Path(tempfile.mkdtemp()) / "tri.zarr"
        >>> zv.write_mesh(path, np.eye(3), [[0, 1, 2]], chunk_shape=4.0, progress=False)
        >>> MeshSource(zv.open(path)).multiresolution
        False
        """
        return len(self._levels) > 1

    def info(self) -> dict[str, Any]:
        """The source's ``info`` document.

        Examples
        --------
        >>> import pathlib, tempfile
        >>> import numpy as np
        >>> import zarr_vectors as zv
        >>> from zarr_vectors.precomputed.meshes import MeshSource
        >>> path = pathlib.Path(tempfile.mkdtemp()) / "tri.zarr"
        >>> zv.write_mesh(path, np.eye(3), [[0, 1, 2]], chunk_shape=4.0, progress=False)
        >>> MeshSource(zv.open(path)).info()
        {'@type': 'neuroglancer_legacy_mesh', 'segment_properties': 'segment_properties'}
        """
        if not self.multiresolution:
            return {"@type": "neuroglancer_legacy_mesh", "segment_properties": PROPERTIES_FOLDER}
        return {
            "@type": "neuroglancer_multilod_draco",
            "vertex_quantization_bits": QUANTIZATION_BITS,
            "transform": transform_of(self._store.axis_units),
            "lod_scale_multiplier": 1.0,
            "segment_properties": PROPERTIES_FOLDER,
        }

    def _files_of(self, object_id: int) -> tuple[str, str]:
        """The manifest's and the data file's names of one object."""
        if self.multiresolution:
            return f"{object_id}.index", f"{object_id}"
        return f"{object_id}:0", f"{object_id}:0:1"

    def segment_ids(self) -> np.ndarray:
        """The ids of the objects this source has a mesh of (non-negative), ascending."""
        return self._segments.ids()

    def paths(self) -> Iterator[str]:
        """``"info"``, the segment properties, then each object's manifest and data file.

        Examples
        --------
        >>> import pathlib, tempfile
        >>> import numpy as np
        >>> import zarr_vectors as zv
        >>> from zarr_vectors.precomputed.meshes import MeshSource
        >>> path = pathlib.Path(tempfile.mkdtemp()) / "tri.zarr"
        >>> zv.write_mesh(path, np.eye(3), [[0, 1, 2]], chunk_shape=4.0, progress=False,
        ...               levels=1)
        >>> list(MeshSource(zv.open(path)).paths())
        ['info', 'segment_properties/info', '0.index', '0']
        """
        yield "info"
        yield PROPERTIES_INFO
        for object_id in self.segment_ids():
            yield from self._files_of(int(object_id))

    def read(self, path: str) -> bytes:
        """The bytes of ``info``, of the segment properties, of a manifest or of a data file.

        Raises
        ------
        PrecomputedFileNotFoundError
            When ``path`` is not ``info`` nor a file of an object of the store.

        Examples
        --------
        >>> import pathlib, tempfile
        >>> import numpy as np
        >>> import zarr_vectors as zv
        >>> from zarr_vectors.precomputed.meshes import MeshSource
        >>> path = pathlib.Path(tempfile.mkdtemp()) / "tri.zarr"
        >>> zv.write_mesh(path, np.eye(3), [[0, 1, 2]], chunk_shape=4.0, progress=False)
        >>> np.frombuffer(MeshSource(zv.open(path)).read("0:0:1")[:4], "<u4").tolist()
        [3]
        >>> MeshSource(zv.open(path)).read("0.index")
        Traceback (most recent call last):
            ...
        zarr_vectors.precomputed.source.PrecomputedFileNotFoundError: no file '0.index' ...
        """
        if path == "info":
            return json_bytes(self.info())
        if path == PROPERTIES_INFO:
            return json_bytes(self._segments.info())
        object_id, manifest = self._parsed(path)
        if self.multiresolution:
            files = self._multilod(object_id)
            return files[0] if manifest else files[1]
        if manifest:
            return json_bytes({"fragments": [self._files_of(object_id)[1]]})
        return self._legacy(object_id)

    def _parsed(self, path: str) -> tuple[int, bool]:
        """The object id a file name names and whether it is the manifest."""
        stem = path.removesuffix(".index") if self.multiresolution else path.split(":")[0]
        object_id = segment_id(stem)
        if object_id is not None and path in self._files_of(object_id):
            if not self._segments.has(object_id):
                raise PrecomputedFileNotFoundError(
                    f"no mesh {object_id}: the store has no object with this id"
                )
            return object_id, path == self._files_of(object_id)[0]
        layout = "'<id>.index' and '<id>'" if self.multiresolution else "'<id>:0' and '<id>:0:1'"
        raise PrecomputedFileNotFoundError(
            f"no file {path!r} in the meshes source: its files are 'info', "
            f"{PROPERTIES_INFO!r} and {layout} for the decimal id of each object"
        )

    def _read_object(self, object_id: int, level: int) -> Any:
        """One object of one level, or PrecomputedFileNotFoundError for an unknown id."""
        if object_id >= 2**63:
            raise PrecomputedFileNotFoundError(f"no mesh {object_id}: ids are below 2**63")
        try:
            return self._store.read_objects(object_id, level=level)
        except ObjectNotFoundError as missing:
            raise PrecomputedFileNotFoundError(
                f"no mesh {object_id}: the store has no object with this id"
            ) from missing

    def _legacy(self, object_id: int) -> bytes:
        """The legacy fragment of one object: positions in nanometres."""
        found = self._read_object(object_id, 0)
        nanometres = stored_positions(found.positions) * scale_of(self._store.axis_units)
        return encode_legacy_fragment(nanometres, found.faces)

    def _multilod(self, object_id: int) -> tuple[bytes, bytes]:
        """The manifest and data file of one object, encoded once for its next requests."""
        with self._recent_lock:
            known = self._recent.get(object_id)
            if known is not None:
                self._recent.move_to_end(object_id)
                return known
        files = _multilod_files(self._lods(object_id))
        with self._recent_lock:
            self._recent[object_id] = files
            while len(self._recent) > _RECENT:
                self._recent.popitem(last=False)
        return files

    def _lods(self, object_id: int) -> list[_Lod]:
        """The object at each level from 0 up to the first level that leaves it out."""
        lods = []
        for level, scale in zip(self._levels, self._scales, strict=True):
            try:
                found = self._read_object(object_id, level)
            except PrecomputedFileNotFoundError:
                if level == 0:
                    raise
                break
            lods.append(_Lod(stored_positions(found.positions), found.faces, scale))
        return lods


def mesh_sources(store: VectorStore) -> list[MeshSource]:
    """The mesh sources of ``store``: one for a mesh store with objects, else none.

    Examples
    --------
    >>> import pathlib, tempfile
    >>> import zarr_vectors as zv
    >>> from zarr_vectors.precomputed.meshes import mesh_sources
    >>> path = pathlib.Path(tempfile.mkdtemp()) / "cells.zarr"
    >>> zv.write_points(path, [[0.0, 0.0, 0.0]], chunk_shape=10.0)
    >>> mesh_sources(zv.open(path))
    []
    """
    return [MeshSource(store)] if store.kind == "mesh" and store.object_count else []
