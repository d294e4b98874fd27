"""zarr_vectors: vector geometry in spatially chunked Zarr v3 stores (Zarr Vectors Format).

Write a point cloud, open it, query a box, validate it::

    import zarr_vectors as zv
    zv.write_points("cells.zv", xyz, chunk_shape=100.0, attributes={"volume": vol})
    store = zv.open("cells.zv")
    hits = store.query(([0, 0, 0], [50, 50, 50]))   # half-open box [lo, hi)
    report = zv.validate("cells.zv", level=2)
"""

from __future__ import annotations

from zarr_vectors import errors
from zarr_vectors._version import __version__
from zarr_vectors._warmup import WarmupReport, warmup
from zarr_vectors.converters import convert
from zarr_vectors.dataset import VectorStore, open
from zarr_vectors.errors import (
    ConcurrentWriteError,
    CorruptChunkError,
    FormatError,
    FragmentIndexError,
    InvalidInputError,
    InvalidNameError,
    ManifestError,
    MetadataError,
    MisplacedChunkError,
    MissingDependencyError,
    NotAZarrVectorsStoreError,
    ObjectNotFoundError,
    ParallelWriteError,
    StoreAccessError,
    StoreChangedError,
    StoreExistsError,
    StoreNotFoundError,
    UnsupportedVersionError,
    ZarrVectorsError,
)
from zarr_vectors.format.version import FORMAT_VERSION
from zarr_vectors.geometry import (
    write_graph,
    write_mesh,
    write_points,
    write_polylines,
    write_skeletons,
)
from zarr_vectors.parallel import write_objects_parallel, write_points_parallel
from zarr_vectors.precomputed import serve
from zarr_vectors.query import QueryRegion, ball, box, polygon
from zarr_vectors.result import QueryResult
from zarr_vectors.store_summary import LevelInfo
from zarr_vectors.update import (
    ObjectWriter,
    PointWriter,
    UpgradeReport,
    append_graph,
    append_mesh,
    append_points,
    append_polylines,
    append_skeletons,
    build_levels,
    build_object_order,
    drop_object_order,
    upgrade,
    write_objects_stream,
    write_points_stream,
)
from zarr_vectors.validate import validate
from zarr_vectors.validate.report import Problem, ValidationReport
from zarr_vectors.write import Levels, WriteOptions

__all__ = [
    "__version__",
    "FORMAT_VERSION",
    "write_points",
    "write_points_stream",
    "write_points_parallel",
    "append_points",
    "build_levels",
    "build_object_order",
    "drop_object_order",
    "upgrade",
    "UpgradeReport",
    "PointWriter",
    "write_polylines",
    "write_graph",
    "write_skeletons",
    "write_mesh",
    "append_polylines",
    "ObjectWriter",
    "write_objects_stream",
    "write_objects_parallel",
    "append_graph",
    "append_skeletons",
    "append_mesh",
    "open",
    "VectorStore",
    "LevelInfo",
    "QueryResult",
    "QueryRegion",
    "box",
    "ball",
    "polygon",
    "WriteOptions",
    "Levels",
    "validate",
    "ValidationReport",
    "warmup",
    "WarmupReport",
    "Problem",
    "errors",
    "ZarrVectorsError",
    "InvalidInputError",
    "InvalidNameError",
    "StoreExistsError",
    "StoreNotFoundError",
    "StoreChangedError",
    "StoreAccessError",
    "ConcurrentWriteError",
    "NotAZarrVectorsStoreError",
    "UnsupportedVersionError",
    "FormatError",
    "MetadataError",
    "CorruptChunkError",
    "MisplacedChunkError",
    "FragmentIndexError",
    "ManifestError",
    "ObjectNotFoundError",
    "MissingDependencyError",
    "ParallelWriteError",
    "convert",
    "serve",
]
