"""Levels of detail: the ``coarsening`` key of a level and the point methods' parameters
(spec §4.3).

A level N >= 1 records how it was computed in its ``coarsening`` object. This module names
the point-cloud methods and reductions and parses their parameters strictly; it does no I/O.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

import numpy as np

from zarr_vectors.errors import InvalidInputError, MetadataError
from zarr_vectors.format.names import check_name

__all__ = [
    "AGGREGATE",
    "CLUSTER",
    "COUNT_ATTRIBUTE",
    "DEFAULT_OBJECTS_KEPT",
    "DEFAULT_OBJECTS_PER_CELL",
    "DEFAULT_PER_BIN",
    "OBJECT_SPARSITY",
    "DEFAULT_TARGET",
    "LEVEL_SCHEDULE",
    "IMPORTED",
    "OBJECT_METHODS",
    "POINT_METHODS",
    "REDUCTIONS",
    "RUNS",
    "SAMPLE",
    "SAMPLE_KEY",
    "THIN",
    "aggregate_coarsening",
    "allowed_reductions",
    "check_coarsening",
    "check_schedule",
    "LEVEL_MIN_ROWS_PER_BLOCK",
    "LEVEL_SHARD_NBYTES",
    "level_most_rows",
    "level_rows_per_block",
    "level_shard_chunks",
    "object_sparsity_rule",
    "cluster_coarsening",
    "default_reduction",
    "runs_coarsening",
    "sample_coarsening",
    "thin_coarsening",
]

SAMPLE = "sample"
"""Point method: nested subsets, ``per_bin`` vertices per coarse bin (spec §4.3.2)."""
AGGREGATE = "aggregate"
"""Point method: one vertex per occupied coarse bin, reduced from level 0 (spec §4.3.2)."""
POINT_METHODS = (SAMPLE, AGGREGATE)
RUNS = "runs"
"""Polyline and streamline method: each run of vertices in one coarse bin becomes one
vertex, end points kept (spec §4.3.3)."""
THIN = "thin"
"""Skeleton method: roots, leaves, branch points and chunk crossings kept, the rest thinned
per coarse bin; still trees (spec §4.3.3)."""
CLUSTER = "cluster"
"""Graph and mesh method: vertices merged per coarse bin (within a connected component for
graphs, an object for meshes), links remapped (spec §4.3.3)."""
OBJECT_METHODS = (RUNS, THIN, CLUSTER)
"""The object kinds' methods (spec §4.3.3)."""
IMPORTED = "imported"
"""Object kinds: coarse levels another implementation computed, stored as they were given
(spec §4.3.4); never built by this library's writers."""
SAMPLE_KEY = "splitmix64"
"""The name of the sample key of spec §4.3.2, recorded as ``coarsening.key``."""
REDUCTIONS = ("mean", "sum", "min", "max", "mode")
"""Reductions of an attribute by ``aggregate``."""
COUNT_ATTRIBUTE = "count"
"""Default name of the attribute ``aggregate`` adds (level-0 vertices per coarse vertex)."""
DEFAULT_PER_BIN = 256
"""Default ``per_bin`` cap of the first ``sample`` levels."""
DEFAULT_TARGET = 100_000
"""Levels are added until one holds at most this many vertices (``levels="auto"``)."""
OBJECT_SPARSITY = ("coverage", "length")
"""What ``Levels.objects`` may ask for: rules ``"spatial_coverage"`` and ``"length"``
(spec §4.3.3)."""
DEFAULT_OBJECTS_PER_CELL = 4
"""Default objects kept per coarse bin by ``objects="coverage"``."""
DEFAULT_OBJECTS_KEPT = 1000
"""Default objects kept by ``objects="length"``."""
LEVEL_MIN_ROWS_PER_BLOCK = 16
"""The smallest row block ``R`` :func:`level_rows_per_block` gives a coarse point level."""
LEVEL_SHARD_NBYTES = 1 << 20
"""Bytes a coarse level's shard holds at most, uncompressed, at full occupancy, in its
widest per-vertex array (:func:`level_shard_chunks`)."""
LEVEL_SCHEDULE = "level_schedule"
"""The root key recording the level schedule a writer was asked for (spec §3.1, §4.3.1)."""
_SCHEDULE_COUNTS = ("target", "per_bin", "objects_per_cell", "objects_kept")
_SCHEDULE_KEYS = ("count", "method", *_SCHEDULE_COUNTS, "reductions", "count_name", "objects")


def allowed_reductions(dtype: np.dtype[Any]) -> tuple[str, ...]:
    """The reductions spec §4.3.2 allows for an attribute of ``dtype``.

    Examples
    --------
    >>> import numpy as np
    >>> allowed_reductions(np.dtype(np.int32))
    ('min', 'max', 'mode')
    """
    if np.issubdtype(dtype, np.floating):
        return ("mean", "sum", "min", "max")
    return ("min", "max", "mode")


def default_reduction(dtype: np.dtype[Any]) -> str:
    """``"mean"`` for floating dtypes, ``"mode"`` for integer and bool dtypes (spec §4.3.2).

    Examples
    --------
    >>> import numpy as np
    >>> default_reduction(np.dtype(np.float32)), default_reduction(np.dtype(bool))
    ('mean', 'mode')
    """
    return "mean" if np.issubdtype(dtype, np.floating) else "mode"


def sample_coarsening(per_bin: int) -> dict[str, Any]:
    """The ``coarsening`` object of a ``sample`` level with cap ``per_bin``.

    Examples
    --------
    >>> sample_coarsening(64)
    {'method': 'sample', 'key': 'splitmix64', 'per_bin': 64}
    """
    return {"method": SAMPLE, "key": SAMPLE_KEY, "per_bin": int(per_bin)}


def level_rows_per_block(
    rows_per_block: int, bins_per_chunk: int, coarsening: Mapping[str, Any]
) -> int:
    """The row block ``R`` of a coarse point level's per-vertex arrays (spec §9.0, library
    default): the smallest power of two, at least :data:`LEVEL_MIN_ROWS_PER_BLOCK`, that
    holds the most rows a chunk of the level can hold, and at most level 0's ``R``.

    A chunk of a ``sample`` level holds at most ``per_bin`` rows per coarse bin, one of an
    ``aggregate`` level one per coarse bin, so ``R`` follows from the recorded parameters
    alone and every write path gives the same bytes.

    Parameters
    ----------
    rows_per_block
        Level 0's ``R``.
    bins_per_chunk
        The level's coarse bins per chunk (the product over the axes).
    coarsening
        The level's ``coarsening`` object (``sample`` or ``aggregate``).

    Returns
    -------
    int
        The level's ``R``.

    Examples
    --------
    >>> level_rows_per_block(4096, 1, sample_coarsening(64))
    64
    >>> level_rows_per_block(4096, 8, sample_coarsening(256))
    2048
    >>> level_rows_per_block(4096, 1, {"method": "aggregate"})
    16
    >>> level_rows_per_block(8, 1, sample_coarsening(64))
    8
    """
    most = level_most_rows(bins_per_chunk, coarsening)
    size = LEVEL_MIN_ROWS_PER_BLOCK
    while size < most and size < rows_per_block:
        size *= 2
    return min(int(rows_per_block), size)


def level_most_rows(bins_per_chunk: int, coarsening: Mapping[str, Any]) -> int:
    """The most rows a chunk of a coarse point level can hold: ``per_bin`` times its coarse
    bins per chunk for ``sample``, its coarse bins per chunk for ``aggregate``.

    Examples
    --------
    >>> level_most_rows(8, sample_coarsening(64)), level_most_rows(8, {"method": "aggregate"})
    (512, 8)
    """
    most = int(bins_per_chunk)
    if coarsening["method"] == SAMPLE:
        most *= int(coarsening["per_bin"])
    return most


def level_shard_chunks(
    grid_shape: tuple[int, ...] | Any, chunk_nbytes: int, target: int | None = None
) -> tuple[int, ...]:
    """``S_N``, the spatial chunks per shard of a coarse level (spec §9.0.1, library default).

    Starting from one chunk per shard, ``S`` doubles along the axes in turn (the first axis
    first) while the shard still holds at most ``target`` bytes when every chunk is full
    (``prod(S) * chunk_nbytes <= target``) and the doubled axis does not yet cover the grid
    (``S_d < G_d``). ``S`` follows from the grid shape and the level's recorded parameters
    alone, so every write path of the level gives the same ``S``.

    Parameters
    ----------
    grid_shape
        ``G``, the store's chunks along each axis.
    chunk_nbytes
        Bytes of one full chunk of the level's widest per-vertex array (its most rows per
        chunk times its bytes per row).
    target
        Bytes a shard may hold at full occupancy (default :data:`LEVEL_SHARD_NBYTES`).

    Returns
    -------
    tuple of int
        ``S`` per axis, or ``()`` for one chunk per shard (as
        :meth:`~zarr_vectors.WriteOptions.shard_shape` gives it).

    Examples
    --------
    >>> level_shard_chunks((13, 13, 13), 64 * 12)   # 1365 chunks fit: S = 1024 chunks
    (16, 8, 8)
    >>> level_shard_chunks((3, 2), 16)               # the grid is covered
    (4, 2)
    >>> level_shard_chunks((13, 13, 13), 4096 * 12)  # 21 chunks fit
    (4, 2, 2)
    >>> level_shard_chunks((4, 4), 2**20)            # a full chunk fills a shard
    ()
    """
    shape = [int(g) for g in grid_shape]
    per = [1] * len(shape)
    target = LEVEL_SHARD_NBYTES if target is None else target
    room = max(1, int(target) // max(1, int(chunk_nbytes)))
    grew = True
    while grew:
        grew = False
        for d, g in enumerate(shape):
            if per[d] < g and 2 * int(np.prod(per)) <= room:
                per[d] *= 2
                grew = True
    return tuple(per) if any(p != 1 for p in per) else ()


def runs_coarsening() -> dict[str, Any]:
    """The ``coarsening`` object of a ``runs`` level with every object kept (spec §4.3.3).

    Examples
    --------
    >>> runs_coarsening()
    {'method': 'runs', 'representative': 'ends_and_middle'}
    """
    return {"method": RUNS, "representative": "ends_and_middle"}


def object_sparsity_rule(objects: str, per_cell: int, kept: int) -> dict[str, Any]:
    """The ``coarsening.objects`` record of object sparsity (spec §4.3.3).

    Parameters
    ----------
    objects
        ``"coverage"`` (rule ``"spatial_coverage"``, priority ``"id_hash"``) or ``"length"``.
    per_cell, kept
        Objects kept per coarse bin (coverage), or in all (length).

    Examples
    --------
    >>> object_sparsity_rule("coverage", 4, 1000)
    {'rule': 'spatial_coverage', 'per_cell': 4, 'priority': 'id_hash'}
    >>> object_sparsity_rule("length", 4, 10)
    {'rule': 'length', 'count': 10}
    """
    if objects == "length":
        return {"rule": "length", "count": int(kept)}
    return {"rule": "spatial_coverage", "per_cell": int(per_cell), "priority": "id_hash"}


def thin_coarsening() -> dict[str, Any]:
    """The ``coarsening`` object of a skeleton ``thin`` level, every object kept (spec §4.3.3).

    Examples
    --------
    >>> thin_coarsening()
    {'method': 'thin'}
    """
    return {"method": THIN}


def cluster_coarsening(within: str) -> dict[str, Any]:
    """The ``coarsening`` object of a ``cluster`` level, every object kept (spec §4.3.3).

    Parameters
    ----------
    within
        ``"component"`` (graphs) or ``"object"`` (meshes): what a cluster stays inside.

    Examples
    --------
    >>> cluster_coarsening("object")
    {'method': 'cluster', 'within': 'object', 'representative': 'closest_to_mean'}
    """
    return {"method": CLUSTER, "within": within, "representative": "closest_to_mean"}


def aggregate_coarsening(
    dtypes: Mapping[str, np.dtype[Any]],
    reductions: Mapping[str, str] | None = None,
    count_name: str = COUNT_ATTRIBUTE,
) -> dict[str, Any]:
    """The ``coarsening`` object of an ``aggregate`` level, checking the caller's choices.

    Parameters
    ----------
    dtypes
        Every level-0 attribute's dtype, by name.
    reductions
        Reductions chosen by name; the others take :func:`default_reduction`.
    count_name
        Name of the count attribute.

    Raises
    ------
    InvalidInputError
        For a reduction of an attribute that does not exist, a reduction the dtype does not
        allow, or a count name that is not a valid name or is taken by an attribute.

    Examples
    --------
    >>> import numpy as np
    >>> aggregate_coarsening({"size": np.dtype(np.float32)}, {"size": "max"})
    {'method': 'aggregate', 'count': 'count', 'reductions': {'size': 'max'}}
    """
    chosen = dict(reductions or {})
    unknown = sorted(set(chosen) - set(dtypes))
    if unknown:
        raise InvalidInputError(
            f"reductions name attributes that do not exist: {', '.join(unknown)}; "
            f"the attributes are {', '.join(sorted(dtypes)) or 'none'}"
        )
    check_name(count_name, "count attribute")
    if count_name in dtypes:
        raise InvalidInputError(
            f"an attribute is already named {count_name!r}; aggregate levels add a count "
            "attribute: pass count_name= another name"
        )
    out = {}
    for name, dtype in sorted(dtypes.items()):
        reduction = chosen.get(name, default_reduction(dtype))
        if reduction not in allowed_reductions(dtype):
            raise InvalidInputError(
                f"reduction {reduction!r} of attribute {name!r} ({dtype}) is not allowed; "
                f"use one of {', '.join(allowed_reductions(dtype))}"
            )
        out[name] = reduction
    return {"method": AGGREGATE, "count": count_name, "reductions": out}


def check_coarsening(value: Any) -> dict[str, Any]:
    """Parse a level's ``coarsening`` object (spec §4.1, §4.3), strictly for point methods.

    A method this library does not know is accepted with any parameters (object kinds,
    §4.3.3); ``sample`` and ``aggregate`` must have exactly their parameters' types.

    Raises
    ------
    MetadataError
        When the value is not an object with a string ``method``, or a point method's
        parameters are malformed.

    Examples
    --------
    >>> check_coarsening({"method": "sample", "key": "splitmix64", "per_bin": 8})["per_bin"]
    8
    """
    if not isinstance(value, dict) or not isinstance(value.get("method"), str):
        raise MetadataError(f"coarsening must be an object with a string method, got {value!r}")
    if value["method"] == SAMPLE:
        per_bin = value.get("per_bin")
        if value.get("key") != SAMPLE_KEY or not _positive_int(per_bin):
            raise MetadataError(
                f"sample coarsening needs key {SAMPLE_KEY!r} and an integer per_bin >= 1, "
                f"got {value!r}"
            )
    elif value["method"] == AGGREGATE:
        reductions, count = value.get("reductions"), value.get("count")
        if (
            not isinstance(count, str)
            or not isinstance(reductions, dict)
            or not all(r in REDUCTIONS for r in reductions.values())
            or count in reductions
        ):
            raise MetadataError(
                "aggregate coarsening needs a string count and reductions mapping attribute "
                f"names to one of {', '.join(REDUCTIONS)}, got {value!r}"
            )
    return value


def _positive_int(value: Any) -> bool:
    return isinstance(value, int) and not isinstance(value, bool) and value >= 1


def check_schedule(value: Any) -> dict[str, Any]:
    """Parse a root's ``level_schedule`` object (spec §3.1, §4.3.1), strictly.

    Raises
    ------
    MetadataError
        When the value is not an object with exactly the schedule's members, each of its
        type: ``count`` ``"auto"`` or an integer >= 1, ``method`` a string, ``target``,
        ``per_bin``, ``objects_per_cell`` and ``objects_kept`` integers >= 1,
        ``reductions`` null or an object of reductions, ``count_name`` a string,
        ``objects`` null, ``"coverage"`` or ``"length"``.

    Examples
    --------
    >>> record = {"count": 2, "method": "sample", "target": 100000, "per_bin": 8,
    ...     "objects_per_cell": 4, "objects_kept": 1000, "reductions": None,
    ...     "count_name": "count", "objects": None}
    >>> check_schedule(record)["per_bin"]
    8
    """
    problem = _schedule_problem(value)
    if problem:
        raise MetadataError(f"level_schedule {problem}, got {value!r}")
    return dict(value)


def _schedule_problem(value: Any) -> str:
    """What is wrong with a ``level_schedule`` value, or ``""``."""
    if not isinstance(value, dict) or sorted(value) != sorted(_SCHEDULE_KEYS):
        return f"must be an object with exactly the members {', '.join(_SCHEDULE_KEYS)}"
    if value["count"] != "auto" and not _positive_int(value["count"]):
        return "count must be 'auto' or an integer >= 1"
    if not all(_positive_int(value[name]) for name in _SCHEDULE_COUNTS):
        return f"{', '.join(_SCHEDULE_COUNTS)} must be integers >= 1"
    if not isinstance(value["method"], str) or not isinstance(value["count_name"], str):
        return "method and count_name must be strings"
    reductions = value["reductions"]
    if reductions is not None and (
        not isinstance(reductions, dict) or not all(r in REDUCTIONS for r in reductions.values())
    ):
        return f"reductions must be null or map attribute names to one of {', '.join(REDUCTIONS)}"
    if value["objects"] not in (None, *OBJECT_SPARSITY):
        return f"objects must be null or one of {', '.join(OBJECT_SPARSITY)}"
    return ""
