"""The object kinds' writers by kind name, from the record each kind's module declares."""

from __future__ import annotations

from zarr_vectors.errors import InvalidInputError
from zarr_vectors.geometry.graphs import GRAPHS, SKELETONS
from zarr_vectors.geometry.meshes import MESHES
from zarr_vectors.geometry.polylines import POLYLINES
from zarr_vectors.write import KindWriter

__all__ = ["OBJECT_WRITERS", "object_writer"]

OBJECT_WRITERS: dict[str, KindWriter] = {
    kind: writer for writer in (POLYLINES, GRAPHS, SKELETONS, MESHES) for kind in writer.kinds
}
"""The :class:`~zarr_vectors.write.KindWriter` of each object kind, by kind name."""


def object_writer(kind: str) -> KindWriter:
    """The writer of the object kind ``kind``.

    Raises
    ------
    InvalidInputError
        For a kind that is not an object kind.
    """
    try:
        return OBJECT_WRITERS[kind]
    except KeyError:
        raise InvalidInputError(
            f"kind must be one of {sorted(OBJECT_WRITERS)}, got {kind!r}"
        ) from None
