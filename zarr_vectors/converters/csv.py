"""CSV tables of vertices (via pyarrow, extra ``tables``; column types kept in CSVW
metadata beside the file) ↔ point cloud stores; export writes the vertices of every kind.
See :mod:`~zarr_vectors.converters.tables` for what import and export keep, and the options.
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

__all__ = ["CSV"]

CSV = FileConverter(
    "csv",
    (".csv",),
    "tables",
    GEOMETRY_TYPES,
    import_table,
    export_table,
    IMPORT_OPTIONS,
    EXPORT_OPTIONS[:1],
)
"""CSV tables of vertices (pyarrow, extra ``tables``); types kept in CSVW metadata."""
