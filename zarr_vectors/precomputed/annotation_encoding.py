"""Byte encodings of Neuroglancer's precomputed annotation format (``neuroglancer_annotations_v1``).

One annotation is its geometry (float32le: a point's position, a line's two end points),
then its property values (4-byte types first, then 2-byte, then 1-byte, each little-endian),
then zero padding to a multiple of 4 bytes. A *list* of annotations (spatial index cells,
related-object index) is a uint64le count, every annotation's bytes, then every id as
uint64le. The by-id index holds one annotation followed, per relationship, by a uint32le
count and that many uint64le related ids.

Vertex attributes become typed properties when Neuroglancer has a type that holds them
exactly or nearly: ``uint8``, ``int8``, ``uint16``, ``int16``, ``uint32``, ``int32`` and
``float32`` as they are, ``bool`` as ``uint8``, ``float16`` and ``float64`` as ``float32``
(float64 rounded to the nearest float32), and a ``uint8`` attribute of row shape ``(3,)`` or
``(4,)`` as ``rgb`` / ``rgba``. Left out, because no property type holds them: 64-bit
integers (Neuroglancer properties stop at 32 bits; a cast would wrap or round silently),
other vector attributes, and strings.
"""

from __future__ import annotations

import re
from collections.abc import Mapping, Sequence
from dataclasses import dataclass

import numpy as np

__all__ = [
    "AnnotationProperty",
    "annotation_properties",
    "encode_annotations",
    "encode_by_id",
    "encode_by_id_rows",
    "encode_list",
    "shuffled",
]

_SCALAR_TYPES = {
    "uint8": "uint8",
    "int8": "int8",
    "uint16": "uint16",
    "int16": "int16",
    "uint32": "uint32",
    "int32": "int32",
    "float32": "float32",
    "float16": "float32",
    "float64": "float32",
    "bool": "uint8",
}
_WIDTH = {"float32": 4, "uint32": 4, "int32": 4, "uint16": 2, "int16": 2}
_WIDTH |= {"uint8": 1, "int8": 1, "rgb": 3, "rgba": 4}
_ALIGN = {"float32": 4, "uint32": 4, "int32": 4, "uint16": 2, "int16": 2}
_ALIGN |= {"uint8": 1, "int8": 1, "rgb": 1, "rgba": 1}
_ID = re.compile(r"^[a-z][a-zA-Z0-9_]*$")


@dataclass(frozen=True, slots=True)
class AnnotationProperty:
    """One typed property of the annotations: a vertex attribute as Neuroglancer shows it.

    Attributes
    ----------
    id
        The property id (``^[a-z][a-zA-Z0-9_]*$``), from the attribute name.
    type
        Neuroglancer's type (``"float32"``, ``"uint8"``, ``"rgb"``...).
    attribute
        The vertex attribute it is read from.

    Examples
    --------
    >>> from zarr_vectors.precomputed.annotation_encoding import AnnotationProperty
    >>> AnnotationProperty("volume", "float32", "volume").info()
    {'id': 'volume', 'type': 'float32', 'description': 'vertex attribute volume'}
    """

    id: str
    type: str
    attribute: str

    def info(self) -> dict[str, str]:
        """The property's entry in the ``properties`` list of the ``info`` file."""
        return {
            "id": self.id,
            "type": self.type,
            "description": f"vertex attribute {self.attribute}",
        }

    @property
    def dtype(self) -> np.dtype[np.generic]:
        """The little-endian dtype of one encoded value (rgb, rgba: uint8 components)."""
        return np.dtype("u1" if self.type in ("rgb", "rgba") else self.type).newbyteorder("<")


def _property_type(dtype: np.dtype[np.generic], row_shape: tuple[int, ...]) -> str | None:
    if row_shape == ():
        return _SCALAR_TYPES.get(dtype.name)
    if dtype == np.uint8 and row_shape in ((3,), (4,)):
        return "rgb" if row_shape == (3,) else "rgba"
    return None


def _property_id(name: str, taken: set[str]) -> str:
    """A valid, unused property id for the attribute ``name``."""
    text = name if _ID.match(name) else re.sub(r"[^a-zA-Z0-9_]", "_", name)
    if not _ID.match(text):
        text = f"a_{text}"
    found, n = text, 1
    while found in taken:
        found, n = f"{text}_{n}", n + 1
    return found


def annotation_properties(
    columns: Mapping[str, tuple[np.dtype[np.generic], tuple[int, ...]]],
) -> tuple[list[AnnotationProperty], list[str]]:
    """The properties of attributes by name (dtype, row shape), in encoding order.

    Returns
    -------
    tuple
        The properties, sorted by alignment (4-byte types, then 2-byte, then 1-byte; the
        order the encoding stores them, so the ``info`` lists them in that order too), and
        the names of the attributes left out (no Neuroglancer type holds them).

    Examples
    --------
    >>> import numpy as np
    >>> from zarr_vectors.precomputed.annotation_encoding import annotation_properties
    >>> found, left = annotation_properties(
    ...     {"Kind": (np.dtype("u1"), ()), "w": (np.dtype("f8"), ()), "n": (np.dtype("i8"), ())})
    >>> [(p.id, p.type) for p in found], left
    ([('w', 'float32'), ('a_Kind', 'uint8')], ['n'])
    """
    found: list[AnnotationProperty] = []
    left: list[str] = []
    taken: set[str] = set()
    for name, (dtype, shape) in columns.items():
        kind = _property_type(np.dtype(dtype), tuple(shape))
        if kind is None:
            left.append(name)
            continue
        found.append(AnnotationProperty(_property_id(name, taken), kind, name))
        taken.add(found[-1].id)
    found.sort(key=lambda p: -_ALIGN[p.type])
    return found, left


def encode_annotations(
    geometry: np.ndarray,
    values: Sequence[np.ndarray],
    properties: Sequence[AnnotationProperty],
) -> np.ndarray:
    """Each annotation's bytes: geometry, property values, padding; ``(n, stride)`` uint8.

    Parameters
    ----------
    geometry
        ``(n, k)`` coordinates (a point: its ``D`` coordinates; a line: ``2 D``), written as
        float32le.
    values
        One array per property, ``n`` rows, in the order of ``properties``.
    properties
        The properties, in encoding order (:func:`annotation_properties`).

    Examples
    --------
    >>> import numpy as np
    >>> from zarr_vectors.precomputed.annotation_encoding import (
    ...     AnnotationProperty, encode_annotations)
    >>> rows = encode_annotations(np.array([[1.0, 2.0]]), [np.array([7])],
    ...                           [AnnotationProperty("n", "uint8", "n")])
    >>> rows.shape, rows[0, 8:].tolist()
    ((1, 12), [7, 0, 0, 0])
    """
    n = geometry.shape[0]
    coords = np.ascontiguousarray(geometry, dtype="<f4")
    parts = [coords.view(np.uint8).reshape(n, 4 * coords.shape[1])]
    for prop, column in zip(properties, values, strict=True):
        typed = np.ascontiguousarray(column, dtype=prop.dtype)
        parts.append(typed.view(np.uint8).reshape(n, _WIDTH[prop.type]))
    width = sum(p.shape[1] for p in parts)
    parts.append(np.zeros((n, -width % 4), dtype=np.uint8))
    return np.concatenate(parts, axis=1)


def shuffled(ids: np.ndarray) -> np.ndarray:
    """A pseudo-random order of annotations, a function of their ids alone (SplitMix64 of
    each id): the format asks spatial cells to list annotations in random order, because
    Neuroglancer draws a prefix of a cell's list when it shows fewer than all.

    Examples
    --------
    >>> import numpy as np
    >>> from zarr_vectors.precomputed.annotation_encoding import shuffled
    >>> order = shuffled(np.arange(6))
    >>> sorted(order.tolist()), bool((order == shuffled(np.arange(6))).all())
    ([0, 1, 2, 3, 4, 5], True)
    """
    h = np.asarray(ids, dtype=np.uint64) + np.uint64(0x9E3779B97F4A7C15)
    h = (h ^ (h >> np.uint64(30))) * np.uint64(0xBF58476D1CE4E5B9)
    h = (h ^ (h >> np.uint64(27))) * np.uint64(0x94D049BB133111EB)
    out: np.ndarray = np.argsort(h ^ (h >> np.uint64(31)), kind="stable")
    return out


def encode_list(records: np.ndarray, ids: np.ndarray) -> bytes:
    """The multiple-annotation encoding: uint64le count, the records, the uint64le ids.

    Examples
    --------
    >>> import numpy as np
    >>> from zarr_vectors.precomputed.annotation_encoding import encode_list
    >>> data = encode_list(np.zeros((1, 4), np.uint8), np.array([5]))
    >>> len(data), data[:8] == (1).to_bytes(8, "little"), data[-8:] == (5).to_bytes(8, "little")
    (20, True, True)
    """
    count = np.array([ids.shape[0]], dtype="<u8").tobytes()
    return count + np.ascontiguousarray(records).tobytes() + ids.astype("<u8").tobytes()


def encode_by_id(record: np.ndarray, related: Sequence[Sequence[int]]) -> bytes:
    """One annotation of the by-id index: its record, then per relationship a uint32le
    count and the uint64le related ids.

    Examples
    --------
    >>> import numpy as np
    >>> from zarr_vectors.precomputed.annotation_encoding import encode_by_id
    >>> len(encode_by_id(np.zeros(12, np.uint8), [[3]]))
    24
    """
    out = [np.ascontiguousarray(record, dtype=np.uint8).tobytes()]
    for ids in related:
        out.append(np.array([len(ids)], dtype="<u4").tobytes())
        out.append(np.asarray(ids, dtype="<u8").tobytes())
    return b"".join(out)


def encode_by_id_rows(records: np.ndarray, objects: np.ndarray | None) -> np.ndarray:
    """By-id files of many annotations as rows: each record, then (with ``objects``, the
    one relationship) a uint32le count 1 and its uint64le object id, as :func:`encode_by_id`.

    Examples
    --------
    >>> import numpy as np
    >>> from zarr_vectors.precomputed.annotation_encoding import encode_by_id, encode_by_id_rows
    >>> rows = encode_by_id_rows(np.zeros((2, 12), np.uint8), np.array([3, 4]))
    >>> rows.shape, rows[1].tobytes() == encode_by_id(np.zeros(12, np.uint8), [[4]])
    ((2, 24), True)
    """
    records = np.ascontiguousarray(records, dtype=np.uint8)
    if objects is None:
        return records
    n = records.shape[0]
    count = np.ones(n, dtype="<u4").view(np.uint8).reshape(n, 4)
    related = np.asarray(objects).astype("<u8").view(np.uint8).reshape(n, 8)
    return np.concatenate([records, count, related], axis=1)
