"""Parquet tables of vertices (via pyarrow, extra ``tables``) ↔ point cloud stores; export
writes the vertices of every kind. See :mod:`~zarr_vectors.converters.tables` for what
import and export keep, and the options.
"""

from __future__ import annotations

from zarr_vectors.converters.converter import FileConverter
from zarr_vectors.converters.tables import (
    EXPORT_OPTIONS,
    IMPORT_OPTIONS,
    export_table,
    import_table,
)
from zarr_vectors.format.names import GEOMETRY_TYPES

__all__ = ["PARQUET"]

PARQUET = FileConverter(
    "parquet",
    (".parquet", ".pq"),
    "tables",
    GEOMETRY_TYPES,
    import_table,
    export_table,
    (*IMPORT_OPTIONS[:3], "object_order"),
    EXPORT_OPTIONS,
)
"""Parquet tables of vertices (pyarrow, extra ``tables``)."""
