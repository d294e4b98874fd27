"""PLY meshes (via plyfile, extra ``mesh``) ↔ mesh stores: see
:mod:`~zarr_vectors.converters.meshes` for what import and export keep, and
:mod:`~zarr_vectors.converters._ply` for the reader and writer.

Option ``object_property`` (import and export): the integer vertex property holding the
mesh object ids (default ``object_id``); export option ``encoding``: ``"binary"`` or
``"ascii"``.
"""

from __future__ import annotations

from zarr_vectors.converters._ply import read_ply, write_ply
from zarr_vectors.converters.meshes import mesh_converter

__all__ = ["PLY"]

PLY = mesh_converter(
    "ply", "mesh", read_ply, write_ply, ("object_property",), ("encoding", "object_property")
)
"""PLY meshes (plyfile, extra ``mesh``)."""
