"""What the point and line annotation sources share: the ``info`` document, the file names
and the dispatch of a path to the file it names (``neuroglancer_annotations_v1``).

``spatial<k>/<i>_<j>_<l>`` is a cell of spatial level k, ``by_id/<id>`` one annotation,
``by_object/<id>`` the annotations of one object; a subclass computes each. A source with a
``sharding`` (:mod:`~zarr_vectors.precomputed.sharding`) lists its by-id index as shard files
``by_id/<shard>.shard`` instead (``by_id/<id>`` is still answered), each computed from the
contiguous id range it holds; with an ``object_sharding``, the relationship index is the
shard files ``by_object/<shard>.shard`` (the shards of the object ids some object has).
"""

from __future__ import annotations

import json
import re
import threading
from abc import ABC, abstractmethod
from collections import OrderedDict
from collections.abc import Callable, Iterator
from typing import Any, ClassVar

import numpy as np

from zarr_vectors.dataset import VectorStore
from zarr_vectors.precomputed.annotation_encoding import AnnotationProperty
from zarr_vectors.precomputed.annotation_index import AnnotationPlan
from zarr_vectors.precomputed.sharding import ShardingSpec, encode_shard
from zarr_vectors.precomputed.source import PrecomputedFileNotFoundError

__all__ = ["DEFAULT_LIMIT", "AnnotationFiles", "ShardCache", "neuroglancer_dimensions"]

DEFAULT_LIMIT = 10_000
"""The most annotations a spatial cell holds, unless a single chunk of a level holds more."""

_UNITS = {
    "angstrom": (1e-10, "m"),
    "nanometer": (1e-9, "m"),
    "micrometer": (1e-6, "m"),
    "millimeter": (1e-3, "m"),
    "centimeter": (1e-2, "m"),
    "meter": (1.0, "m"),
    "kilometer": (1e3, "m"),
    "nm": (1e-9, "m"),
    "um": (1e-6, "m"),
    "µm": (1e-6, "m"),
    "mm": (1e-3, "m"),
    "m": (1.0, "m"),
    "second": (1.0, "s"),
    "millisecond": (1e-3, "s"),
    "s": (1.0, "s"),
    "ms": (1e-3, "s"),
}
_CELL = re.compile(r"^spatial(\d+)/(\d+(?:_\d+)*)$")
_NUMBER = re.compile(r"^\d+$")
_SIGNED = re.compile(r"^-?\d+$")
_SHARD = re.compile(r"^[0-9a-f]+\.shard$")


def neuroglancer_dimensions(names: tuple[str, ...], units: tuple[str, ...]) -> dict[str, Any]:
    """Neuroglancer's ``dimensions`` (name → ``[scale, unit]``) from axis names and units.

    Lengths and times become metres and seconds; an unknown unit is dimensionless
    (``[1, ""]``).

    Examples
    --------
    >>> from zarr_vectors.precomputed.annotation_files import neuroglancer_dimensions
    >>> neuroglancer_dimensions(("x", "y"), ("micrometer", "unknown"))
    {'x': [1e-06, 'm'], 'y': [1.0, '']}
    """
    return {n: list(_UNITS.get(u.lower(), (1.0, ""))) for n, u in zip(names, units, strict=True)}


class ShardCache:
    """The last few shard files computed: Neuroglancer reads a shard by three byte ranges
    (shard index, minishard index, data), each a request of its own.

    Examples
    --------
    >>> from zarr_vectors.precomputed.annotation_files import ShardCache
    >>> cache = ShardCache()
    >>> cache.get(("by_id", 0), lambda: b"shard"), cache.get(("by_id", 0), lambda: b"other")
    (b'shard', b'shard')
    """

    def __init__(self, size: int = 2) -> None:
        self.size = size
        self._files: OrderedDict[tuple[str, int], bytes] = OrderedDict()
        self._lock = threading.Lock()  # a server reads files from several threads

    def get(self, key: tuple[str, int], compute: Callable[[], bytes]) -> bytes:
        """The file of ``key``, computed by ``compute()`` unless it is kept.

        Examples
        --------
        >>> from zarr_vectors.precomputed.annotation_files import ShardCache
        >>> cache = ShardCache(size=1)
        >>> _ = cache.get(("by_id", 0), lambda: b"a"), cache.get(("by_id", 1), lambda: b"b")
        >>> cache.get(("by_id", 0), lambda: b"again")  # only the last one is kept
        b'again'
        """
        with self._lock:
            found = self._files.get(key)
        if found is None:
            found = compute()
            with self._lock:
                self._files[key] = found
                while len(self._files) > self.size:
                    self._files.popitem(last=False)
        return found


class AnnotationFiles(ABC):
    """The files of an annotation source; subclasses compute cells, ids and objects.

    A subclass sets ``store``, ``chunk_shape``, ``plan``, ``properties``, ``has_objects``
    and ``shard_cache``, and implements ``_cell_bytes``, ``_by_id``, ``_by_object`` and
    ``_ids_and_objects``.

    Examples
    --------
    >>> import pathlib, tempfile
    >>> import zarr_vectors as zv
    >>> from zarr_vectors.precomputed import PointAnnotations
    >>> from zarr_vectors.precomputed.annotation_files import AnnotationFiles
    >>> path = pathlib.Path(tempfile.mkdtemp()) / "cells.zarr"
    >>> zv.write_points(path, [[1.0, 1, 1], [7, 7, 7]], chunk_shape=5.0)
    >>> source = PointAnnotations(zv.open(path))
    >>> isinstance(source, AnnotationFiles), source.info()["spatial"][0]["grid_shape"]
    (True, [1, 1, 1])
    """

    name = "annotations"
    annotation_type: ClassVar[str] = "point"
    store: VectorStore
    chunk_shape: np.ndarray
    plan: AnnotationPlan
    properties: list[AnnotationProperty]
    has_objects: bool
    sharding: ShardingSpec | None = None
    object_sharding: ShardingSpec | None = None
    shard_cache: ShardCache

    def info(self) -> dict[str, Any]:
        """The ``info`` document."""
        lo = self.plan.origin * self.chunk_shape
        spatial = [
            {
                "key": f"spatial{k}",
                "grid_shape": lv.grid_shape.tolist(),
                "chunk_size": ((1 << lv.shift) * self.chunk_shape).tolist(),
                "limit": lv.limit,
            }
            for k, lv in enumerate(self.plan.levels)
        ]
        relationships: list[dict[str, Any]] = []
        if self.has_objects:
            relationships.append({"id": "object", "key": "by_object"})
            if self.object_sharding is not None:
                relationships[0]["sharding"] = self.object_sharding.info()
        return {
            "@type": "neuroglancer_annotations_v1",
            "dimensions": neuroglancer_dimensions(self.store.axis_names, self.store.axis_units),
            "lower_bound": lo.tolist(),
            "upper_bound": (lo + self.plan.span * self.chunk_shape).tolist(),
            "annotation_type": self.annotation_type,
            "properties": [p.info() for p in self.properties],
            "relationships": relationships,
            "by_id": self._by_id_info(),
            "spatial": spatial,
        }

    def paths(self) -> Iterator[str]:
        """Every file: ``info``, the occupied spatial cells, every id, every object."""
        yield "info"
        for k, lv in enumerate(self.plan.levels):
            for cell in lv.cells:
                yield f"spatial{k}/{lv.cell_name(cell)}"
        ids, objects = self._ids_and_objects()
        if self.sharding is None:
            yield from (f"by_id/{annotation}" for annotation in ids)
        else:
            for shard in range(self.sharding.shard_count(max(ids, default=-1) + 1)):
                yield f"by_id/{self.sharding.shard_name(shard)}"
        if self.object_sharding is None:
            yield from (f"by_object/{obj}" for obj in objects)
        else:
            spec = self.object_sharding
            shift = spec.preshift_bits + spec.minishard_bits
            for shard in np.unique(np.asarray(objects, dtype=np.int64) >> shift).tolist():
                yield f"by_object/{spec.shard_name(shard)}"

    def read(self, path: str) -> bytes:
        """The bytes of one file (see the module).

        Raises
        ------
        PrecomputedFileNotFoundError
            For a path that names no file of the source.
        """
        if path == "info":
            return json.dumps(self.info(), indent=1).encode()
        cell = _CELL.match(path)
        if cell is not None:
            return self._cell(int(cell.group(1)), cell.group(2), path)
        folder, _, name = path.partition("/")
        if folder == "by_id" and _NUMBER.match(name):
            return self._by_id(int(name), path)
        if folder == "by_id" and self.sharding is not None and _SHARD.match(name):
            return self._shard(int(name.partition(".")[0], 16), path)
        if folder == "by_object" and self.object_sharding is not None and _SHARD.match(name):
            return self._object_shard(int(name.partition(".")[0], 16), path)
        if folder == "by_object" and _SIGNED.match(name) and self.has_objects:
            return self._by_object(int(name), path)
        raise PrecomputedFileNotFoundError(f"{path!r} is not a file of the annotation source")

    def _by_id_info(self) -> dict[str, Any]:
        if self.sharding is None:
            return {"key": "by_id"}
        return {"key": "by_id", "sharding": self.sharding.info()}

    def _shard(self, shard: int, path: str) -> bytes:
        spec = self.sharding
        if spec is None or shard >= 1 << spec.shard_bits:
            raise PrecomputedFileNotFoundError(f"{path!r}: the by-id index has no such shard")
        return self.shard_cache.get(
            ("by_id", shard), lambda: encode_shard(spec, *self._by_id_block(*spec.id_range(shard)))
        )

    def _object_shard(self, shard: int, path: str) -> bytes:
        spec = self.object_sharding
        if spec is None or shard >= 1 << spec.shard_bits:
            raise PrecomputedFileNotFoundError(f"{path!r}: the object index has no such shard")
        return self.shard_cache.get(
            ("by_object", shard),
            lambda: encode_shard(spec, *self._by_object_block(*spec.id_range(shard))),
        )

    def _by_object_block(self, first: int, stop: int) -> tuple[np.ndarray, list[bytes]]:
        """The object ids in ``[first, stop)`` and their relationship files (one file at a
        time; a subclass may compute them together)."""
        ids = [i for i in self._ids_and_objects()[1] if first <= i < stop]
        files = [self._by_object(i, f"by_object/{i}") for i in ids]
        return np.asarray(ids, dtype=np.uint64), files

    def _by_id_block(self, first: int, stop: int) -> tuple[np.ndarray, np.ndarray]:
        """The ids in ``[first, stop)`` and their by-id files as rows (one file at a time;
        a subclass may compute them together)."""
        ids = [i for i in self._ids_and_objects()[0] if first <= i < stop]
        rows = [np.frombuffer(self._by_id(i, f"by_id/{i}"), dtype=np.uint8) for i in ids]
        data = np.stack(rows) if rows else np.zeros((0, 0), dtype=np.uint8)
        return np.asarray(ids, dtype=np.uint64), data

    def _cell(self, k: int, name: str, path: str) -> bytes:
        if k >= len(self.plan.levels):
            raise PrecomputedFileNotFoundError(f"{path!r}: the source has no spatial level {k}")
        cell = np.array([int(c) for c in name.split("_")], dtype=np.int64)
        lv = self.plan.levels[k]
        if cell.size != lv.grid_shape.size or np.any(cell >= lv.grid_shape):
            raise PrecomputedFileNotFoundError(f"{path!r} is outside the grid of level {k}")
        return self._cell_bytes(k, *self.plan.cell_chunks(k, cell))

    @abstractmethod
    def _ids_and_objects(self) -> tuple[list[int], list[int]]:
        """Every annotation id and every object id (for :meth:`paths`)."""
        raise NotImplementedError

    @abstractmethod
    def _cell_bytes(self, k: int, first: np.ndarray, stop: np.ndarray) -> bytes:
        """The annotations of spatial level ``k`` in the chunks ``[first, stop)``."""
        raise NotImplementedError

    @abstractmethod
    def _by_id(self, annotation: int, path: str) -> bytes:
        """The by-id file of ``annotation`` (``path``: for the error when there is none)."""
        raise NotImplementedError

    @abstractmethod
    def _by_object(self, obj: int, path: str) -> bytes:
        """The annotations of object ``obj`` (``path``: for the error when there is none)."""
        raise NotImplementedError
