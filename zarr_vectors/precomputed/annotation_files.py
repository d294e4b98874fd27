"""What the point and line annotation sources share: the ``info`` document, the file names
and the dispatch of a path to the file it names (``neuroglancer_annotations_v1``, unsharded).

``spatial<k>/<i>_<j>_<l>`` is a cell of spatial level k, ``by_id/<id>`` one annotation,
``by_object/<id>`` the annotations of one object; a subclass computes each.
"""

from __future__ import annotations

import json
import re
from abc import ABC, abstractmethod
from collections.abc import Iterator
from typing import Any, ClassVar

import numpy as np

from zarr_vectors.dataset import VectorStore
from zarr_vectors.precomputed.annotation_encoding import AnnotationProperty
from zarr_vectors.precomputed.annotation_index import AnnotationPlan
from zarr_vectors.precomputed.source import PrecomputedFileNotFoundError

__all__ = ["DEFAULT_LIMIT", "AnnotationFiles", "neuroglancer_dimensions"]

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


class AnnotationFiles(ABC):
    """The files of an annotation source; subclasses compute cells, ids and objects.

    A subclass sets ``store``, ``chunk_shape``, ``plan``, ``properties`` and
    ``has_objects``, and implements ``_cell_bytes``, ``_by_id``, ``_by_object`` and
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
        relationships = [{"id": "object", "key": "by_object"}] if self.has_objects else []
        return {
            "@type": "neuroglancer_annotations_v1",
            "dimensions": neuroglancer_dimensions(self.store.axis_names, self.store.axis_units),
            "lower_bound": lo.tolist(),
            "upper_bound": (lo + self.plan.span * self.chunk_shape).tolist(),
            "annotation_type": self.annotation_type,
            "properties": [p.info() for p in self.properties],
            "relationships": relationships,
            "by_id": {"key": "by_id"},
            "spatial": spatial,
        }

    def paths(self) -> Iterator[str]:
        """Every file: ``info``, the occupied spatial cells, every id, every object."""
        yield "info"
        for k, lv in enumerate(self.plan.levels):
            for cell in lv.cells:
                yield f"spatial{k}/{lv.cell_name(cell)}"
        ids, objects = self._ids_and_objects()
        for annotation in ids:
            yield f"by_id/{annotation}"
        for obj in objects:
            yield f"by_object/{obj}"

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
        if folder == "by_object" and _SIGNED.match(name) and self.has_objects:
            return self._by_object(int(name), path)
        raise PrecomputedFileNotFoundError(f"{path!r} is not a file of the annotation source")

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
