"""The Blosc settings of row blocks per format version, kind and array (spec §9.0, §9.0.4).

Format 1.0 to 1.3 store every numeric row block with Blosc LZ4 level 5 and bit shuffle and
every fragment-index blob raw. Format 1.4 compresses the arrays of object kinds with Blosc
zstd: blobs (level 3) as one block per chunk (bit shuffle over 8-byte items, the width of the
blob's range table), mesh positions and vertex attributes without shuffle (their
coordinates repeat across a mesh's rings and grid lines, which zstd finds as matches and a
shuffle hides), fragment attributes with byte shuffle (runs of one object id), every other
numeric array with bit shuffle; the numeric arrays at level 1, which writes about twice as
fast as level 3 for a few percent more bytes. Point clouds keep the 1.3
settings in 1.4. Format 1.5 changed the blob settings (counts-form blobs); format 1.6 those
of graphs and skeletons: ``links/0`` and vertex attributes at zstd level 3 with bit shuffle,
``object_index`` and ``cross_chunk_links`` at zstd level 3 with byte shuffle. A writer
picks these by the store's version, so an append to an older store keeps that store's
codecs. This module does no I/O.
"""

from __future__ import annotations

from typing import Any

from zarr_vectors.format.kinds import geometry_kind
from zarr_vectors.format.names import (
    ATTRIBUTES,
    CROSS_CHUNK_LINKS,
    FRAGMENT_ATTRIBUTES,
    LINK_FRAGMENTS,
    LINKS,
    OBJECT_INDEX,
    POINT_CLOUD,
    VERTEX_FRAGMENTS,
    VERTICES,
)
from zarr_vectors.format.version import parse_version

__all__ = [
    "BLOB_ZSTD",
    "COUNTS_BLOB_ZSTD",
    "COMPRESSED_OBJECTS_VERSION",
    "LZ4_BITSHUFFLE",
    "ZSTD_BITSHUFFLE",
    "ZSTD_NOSHUFFLE",
    "ZSTD_SHUFFLE",
    "COUNTS_BLOBS_VERSION",
    "FRAGMENT_RECORDS_VERSION",
    "GLOBAL_LZ4_SHUFFLE",
    "GRAPH_CODECS_VERSION",
    "MANIFEST_ZSTD",
    "ZSTD3_BITSHUFFLE",
    "ZSTD3_SHUFFLE",
    "blob_blosc",
    "counts_blobs",
    "fragment_records",
    "global_blosc",
    "library_chains",
    "numeric_blosc",
]

COMPRESSED_OBJECTS_VERSION = "1.4"
"""The first version whose object kinds compress fragment blobs and use Blosc zstd."""

COUNTS_BLOBS_VERSION = "1.5"
"""The first version whose object kinds write tiling fragment blobs in the counts form."""

GRAPH_CODECS_VERSION = "1.6"
"""The first version whose graphs and skeletons write ``links/0``, vertex attributes,
``object_index`` and ``cross_chunk_links`` at zstd level 3 (spec §9.0.4)."""

FRAGMENT_RECORDS_VERSION = "1.6"
"""The first version whose object kinds keep level 0's fragments in ``fragment_records``
(spec §6.9) instead of ``vertex_fragments``, ``link_fragments`` and the fragments' object ids."""

LZ4_BITSHUFFLE: dict[str, Any] = {"cname": "lz4", "clevel": 5, "shuffle": "bitshuffle"}
"""Numeric row blocks of format 1.0 to 1.3, and of point clouds in 1.4."""

ZSTD_BITSHUFFLE: dict[str, Any] = {"cname": "zstd", "clevel": 1, "shuffle": "bitshuffle"}
"""Numeric row blocks of object kinds in 1.4 (mesh positions and vertex attributes aside)."""

ZSTD_NOSHUFFLE: dict[str, Any] = {"cname": "zstd", "clevel": 1, "shuffle": "noshuffle"}
"""Positions and vertex attributes of meshes in 1.4."""

ZSTD_SHUFFLE: dict[str, Any] = {"cname": "zstd", "clevel": 1, "shuffle": "shuffle"}
"""Fragment attributes of object kinds in 1.4: runs of equal values (a fragment's object id)
byte-shuffle into long runs of equal bytes."""

BLOB_ZSTD: dict[str, Any] = {"cname": "zstd", "clevel": 3, "shuffle": "bitshuffle", "typesize": 8}
"""Fragment-index blobs of object kinds in 1.4: the range table is pairs of ``int64``."""

COUNTS_BLOB_ZSTD: dict[str, Any] = {
    "cname": "zstd",
    "clevel": 1,
    "shuffle": "noshuffle",
    "typesize": 1,
}
"""Fragment-index blobs of object kinds in 1.5: counts-form blobs (spec §6.8) hold mostly
one-byte counts, which no shuffle separates further."""

ZSTD3_BITSHUFFLE: dict[str, Any] = {"cname": "zstd", "clevel": 3, "shuffle": "bitshuffle"}
"""``links/0`` and vertex attributes of graphs and skeletons from 1.6: against level 1,
edges ``[child, parent]`` shrink by a tenth and radii by 4 %, for about half as much encode
time again (``benchmarks/results/store_bytes.md``)."""

GLOBAL_LZ4_SHUFFLE: dict[str, Any] = {"cname": "lz4", "clevel": 5, "shuffle": "shuffle"}
"""Global arrays (spec §9.8) but ``object_index``, and ``vertex_counts``."""

MANIFEST_ZSTD: dict[str, Any] = {"cname": "zstd", "clevel": 1, "shuffle": "shuffle"}
"""``object_index/*`` (spec §9.8): manifests are mostly zero bytes of chunk coordinates,
which Zstandard packs to about a seventh (LZ4: a third). Level 1 encodes about as fast as
LZ4 level 5; Blosc's level 5 (Zstandard level 9) took 30 times as long for almost the same
size."""

ZSTD3_SHUFFLE: dict[str, Any] = {"cname": "zstd", "clevel": 3, "shuffle": "shuffle"}
"""``object_index/*`` and ``cross_chunk_links`` of graphs and skeletons from 1.6."""

_VERTEX_ROLES = frozenset({VERTICES, ATTRIBUTES})
_GRAPH_ROLES = frozenset({LINKS, ATTRIBUTES})
"""Per-chunk arrays of graphs and skeletons at zstd level 3 from 1.6."""


def _compressed_objects(version: str, kind: str) -> bool:
    return kind != POINT_CLOUD and parse_version(version) >= parse_version(
        COMPRESSED_OBJECTS_VERSION
    )


def _graph_codecs(version: str, kind: str) -> bool:
    """Whether a store of ``version`` and ``kind`` uses the graph settings of 1.6."""
    return geometry_kind(kind).stored_edges and parse_version(version) >= parse_version(
        GRAPH_CODECS_VERSION
    )


def numeric_blosc(version: str, kind: str, role: str) -> dict[str, Any]:
    """Blosc settings of a numeric per-chunk array (library default, spec §9.0.4).

    Parameters
    ----------
    version
        The store's ``zarr_vectors_version``.
    kind
        Its ``geometry_type``.
    role
        The array's node role: ``vertices``, ``attributes`` (any vertex attribute),
        ``links``, ``fragment_attributes``, ``link_attributes``...

    Examples
    --------
    >>> numeric_blosc("1.3", "mesh", "vertices")["cname"]
    'lz4'
    >>> numeric_blosc("1.4", "mesh", "vertices")["shuffle"]
    'noshuffle'
    >>> numeric_blosc("1.4", "streamline", "links")["cname"]
    'zstd'
    >>> numeric_blosc("1.4", "point_cloud", "vertices")["cname"]
    'lz4'
    >>> [numeric_blosc(v, "skeleton", "links")["clevel"] for v in ("1.5", "1.6")]
    [1, 3]
    """
    if not _compressed_objects(version, kind):
        return dict(LZ4_BITSHUFFLE)
    if role in _GRAPH_ROLES and _graph_codecs(version, kind):
        return dict(ZSTD3_BITSHUFFLE)
    if geometry_kind(kind).faces and role in _VERTEX_ROLES:
        return dict(ZSTD_NOSHUFFLE)
    if role == FRAGMENT_ATTRIBUTES:
        return dict(ZSTD_SHUFFLE)
    return dict(ZSTD_BITSHUFFLE)


def blob_blosc(version: str, kind: str) -> dict[str, Any] | None:
    """Blosc settings of the fragment-blob arrays, None for raw blocks (spec §9.0.4).

    Examples
    --------
    >>> blob_blosc("1.3", "skeleton") is None, blob_blosc("1.4", "point_cloud") is None
    (True, True)
    >>> blob_blosc("1.4", "skeleton")["typesize"], blob_blosc("1.5", "skeleton")["typesize"]
    (8, 1)
    """
    if not _compressed_objects(version, kind):
        return None
    return dict(COUNTS_BLOB_ZSTD if counts_blobs(version, kind) else BLOB_ZSTD)


def counts_blobs(version: str, kind: str) -> bool:
    """Whether the library writes tiling fragment blobs in the counts form (spec §6.8).

    Examples
    --------
    >>> counts_blobs("1.4", "skeleton"), counts_blobs("1.5", "skeleton")
    (False, True)
    >>> counts_blobs("1.5", "point_cloud")
    False
    """
    return kind != POINT_CLOUD and parse_version(version) >= parse_version(COUNTS_BLOBS_VERSION)


def fragment_records(version: str, kind: str) -> bool:
    """Whether level 0 of a store of ``version`` and ``kind`` keeps its fragments in
    ``fragment_records`` (spec §6.9, §9.7.1).

    Examples
    --------
    >>> fragment_records("1.5", "skeleton"), fragment_records("1.6", "mesh")
    (False, True)
    >>> fragment_records("1.6", "point_cloud")
    False
    """
    return kind != POINT_CLOUD and parse_version(version) >= parse_version(FRAGMENT_RECORDS_VERSION)


def global_blosc(version: str, kind: str, name: str) -> dict[str, Any]:
    """Blosc settings of the global array ``name`` (``object_index`` for both of its
    arrays, ``cross_chunk_links``, any other name) of a level (spec §9.0.4, §9.8).

    Examples
    --------
    >>> global_blosc("1.5", "skeleton", "object_index")["clevel"]
    1
    >>> global_blosc("1.6", "skeleton", "cross_chunk_links")
    {'cname': 'zstd', 'clevel': 3, 'shuffle': 'shuffle'}
    >>> global_blosc("1.6", "streamline", "cross_chunk_links")["cname"]
    'lz4'
    """
    if name in (OBJECT_INDEX, CROSS_CHUNK_LINKS) and _graph_codecs(version, kind):
        return dict(ZSTD3_SHUFFLE)
    return dict(MANIFEST_ZSTD if name == OBJECT_INDEX else GLOBAL_LZ4_SHUFFLE)


def library_chains(version: str, role: str) -> list[dict[str, Any]]:
    """Every Blosc setting this library writes for arrays of ``role`` in ``version``.

    ``role`` is :data:`~zarr_vectors.format.names.VERTEX_FRAGMENTS` or
    :data:`~zarr_vectors.format.names.LINK_FRAGMENTS` for blob arrays (an empty dict then
    stands for raw blocks), any other role for numeric arrays.
    """
    compressed = parse_version(version) >= parse_version(COMPRESSED_OBJECTS_VERSION)
    if role in (VERTEX_FRAGMENTS, LINK_FRAGMENTS):
        return [{}, dict(BLOB_ZSTD), dict(COUNTS_BLOB_ZSTD)] if compressed else [{}]
    if not compressed:
        return [dict(LZ4_BITSHUFFLE)]
    chains = [LZ4_BITSHUFFLE, ZSTD_BITSHUFFLE, ZSTD_NOSHUFFLE, ZSTD_SHUFFLE]
    if parse_version(version) >= parse_version(GRAPH_CODECS_VERSION):
        chains.append(ZSTD3_BITSHUFFLE)
    return [dict(c) for c in chains]
