"""Parallel writes on dask.distributed: partitions in, one store out, nothing lost.

Needs the ``distributed`` extra (``pip install 'zarr-vectors[distributed]'``); dask is
imported only when a write starts.
"""

from __future__ import annotations

from zarr_vectors.parallel.objects import write_objects_parallel
from zarr_vectors.parallel.points import write_points_parallel

__all__ = ["write_objects_parallel", "write_points_parallel"]
