"""What a query returns: :class:`QueryResult` and its plots, shapes, tables and summaries.

Other packages import from this face only.
"""

from __future__ import annotations

from zarr_vectors.result.query_result import QueryResult

__all__ = ["QueryResult"]
