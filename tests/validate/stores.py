"""Small stores for the validator tests, and helpers that damage them in one precise way.

Every store lives in a :class:`zarr.storage.MemoryStore`. The point cloud of
:func:`point_store` has negative coordinates, an empty chunk inside its grid, shards of
several row blocks (R = 16) and 8 bins per chunk (so the fragment bitmap has padding).
"""

from __future__ import annotations

import json
from collections.abc import Callable
from pathlib import Path
from typing import Any

import numpy as np
import zarr
from zarr.core.sync import sync
from zarr.storage import MemoryStore

import zarr_vectors as zv
from zarr_vectors.format.dimensions import named_array_document
from zarr_vectors.format.fragment_decoding import decode_dense_ranges
from zarr_vectors.format.fragment_records import (
    FragmentRecord,
    decode_fragment_record,
    encode_fragment_record,
)
from zarr_vectors.format.place import CHUNK_TABLE_KEY, place_record
from zarr_vectors.format.version import has_place_records
from zarr_vectors.store.arrays import row_array_metadata
from zarr_vectors.store.io import StoreIO
from zarr_vectors.store.shards import RowLayout

Doc = dict[str, Any]
NDIM = 3
CHUNK = 10.0
BIN = 5.0
ROWS_PER_BLOCK = 16
EMPTY_CHUNK = (2, 1, 0)
"""Grid index of the chunk of :func:`point_store` that holds no vertex."""
BLOSC = {"cname": "lz4", "clevel": 5, "shuffle": "bitshuffle"}
_MISSING = 2**64 - 1


def points(seed: int = 7, n: int = 300) -> np.ndarray:
    """``n`` float64 points in ``[-10, 20) x [0, 20) x [0, 10)``, none in chunk (1, 1, 0)."""
    rng = np.random.default_rng(seed)
    pts = rng.uniform([-10.0, 0.0, 0.0], [20.0, 20.0, 10.0], (n, NDIM))
    return pts[~((pts[:, 0] >= 10.0) & (pts[:, 1] >= 10.0))]


def write(store: Any, pts: np.ndarray, *, object_ids: bool = True) -> None:
    """Write ``pts`` with the attributes the tests use (scalar float32, vector float64)."""
    n = pts.shape[0]
    rng = np.random.default_rng(1)
    zv.write_points(
        store,
        pts,
        chunk_shape=CHUNK,
        bin_shape=BIN,
        attributes={"a": rng.random(n).astype(np.float32), "v": rng.random((n, 2))},
        object_ids=np.arange(n, dtype=np.int64) if object_ids else None,
        # the reference store of format 1.2 (the index: test_object_chunks_corruption)
        options=zv.WriteOptions(
            rows_per_block=ROWS_PER_BLOCK, object_chunk_index=False, shard_chunks=1
        ),
    )


def point_store(*, object_ids: bool = True) -> MemoryStore:
    """The reference point cloud (valid at every level)."""
    store = MemoryStore()
    write(store, points(), object_ids=object_ids)
    return store


def declare_older_version(store: MemoryStore, version: str) -> None:
    """Make a store declare format ``version`` (1.0 to 1.2), with the ``.zattrs`` mirrors of
    its root and level groups that those formats have (spec §2.3)."""
    edit_root(store, lambda a: a.__setitem__("zarr_vectors_version", version))
    root = read_json(store, "zarr.json")["attributes"]
    write_json(store, ".zattrs", root)
    for entry in root["multiscales"][0]["datasets"]:
        write_json(
            store,
            f"{entry['path']}/.zattrs",
            read_json(store, f"{entry['path']}/zarr.json")["attributes"],
        )


def legacy_point_store() -> MemoryStore:
    """The 1.2 golden point cloud (with ``.zattrs`` mirrors, spec §2.3) in memory."""
    store = MemoryStore()
    io(store).set_many(
        [(str(p.relative_to(LEGACY)), p.read_bytes()) for p in LEGACY.rglob("*") if p.is_file()]
    )
    return store


LEGACY = Path(__file__).parents[1] / "data" / "golden" / "1.2" / "points_3d_attributes.zarrvectors"


# -- raw access ---------------------------------------------------------------------------


def io(store: MemoryStore) -> StoreIO:
    """Synchronous access to ``store``."""
    return StoreIO(store)


def get(store: MemoryStore, key: str) -> bytes:
    """The bytes at ``key`` (which must exist)."""
    raw = io(store).get(key)
    assert raw is not None, key
    return raw


def put(store: MemoryStore, key: str, value: bytes) -> None:
    """Write ``value`` at ``key``."""
    io(store).set(key, value)


def delete(store: MemoryStore, key: str) -> None:
    """Delete one key."""
    sync(store.delete(key))


def delete_prefix(store: MemoryStore, prefix: str) -> None:
    """Delete every key below ``prefix``."""
    for key in io(store).list_prefix(prefix):
        delete(store, key)


def read_json(store: MemoryStore, key: str) -> Any:
    """Parse the JSON document at ``key``."""
    return json.loads(get(store, key))


def write_json(store: MemoryStore, key: str, doc: Any) -> None:
    """Write ``doc`` at ``key`` (NaN and infinities allowed, as Python writes them)."""
    put(store, key, json.dumps(doc).encode())


def edit(store: MemoryStore, key: str, change: Callable[[Any], Any]) -> None:
    """Apply ``change`` in place to the document at ``key`` (its return value is ignored)."""
    doc = read_json(store, key)
    change(doc)
    write_json(store, key, doc)


def edit_attrs(store: MemoryStore, group: str, change: Callable[[Doc], Any]) -> None:
    """Change a group's attributes in ``zarr.json`` and, in a store of format 1.2 or older,
    in its ``.zattrs`` mirror (``""`` = root)."""
    prefix = f"{group}/" if group else ""
    edit(store, f"{prefix}zarr.json", lambda d: change(d["attributes"]))
    if io(store).get(f"{prefix}.zattrs") is not None:
        edit(store, f"{prefix}.zattrs", change)


def edit_root(store: MemoryStore, change: Callable[[Doc], Any]) -> None:
    """Change the root metadata (both copies)."""
    edit_attrs(store, "", change)


def edit_level(store: MemoryStore, change: Callable[[Doc], Any], level: int = 0) -> None:
    """Change a level's metadata (both copies)."""
    edit_attrs(store, str(level), change)


def edit_array(store: MemoryStore, path: str, change: Callable[[Doc], Any]) -> None:
    """Change an array's ``zarr.json``."""
    edit(store, f"{path}/zarr.json", change)


def group_doc(attributes: Doc | None = None) -> Doc:
    """A group ``zarr.json``."""
    return {"zarr_format": 3, "node_type": "group", "attributes": attributes or {}}


def array_doc(**kwargs: Any) -> Doc:
    """The ``zarr.json`` zarr-python writes for ``zarr.create_array(**kwargs)``."""
    scratch = MemoryStore()
    zarr.create_array(scratch, name="a", zarr_format=3, **kwargs)
    return read_json(scratch, "a/zarr.json")


def root_attrs(store: MemoryStore) -> Doc:
    """The root metadata."""
    attrs: Doc = read_json(store, "zarr.json")["attributes"]
    return attrs


# -- chunks -------------------------------------------------------------------------------


def occupied(store: MemoryStore, level: int = 0) -> list[tuple[tuple[int, ...], int]]:
    """``(grid index, row count)`` of every occupied chunk, in C order."""
    counts = np.asarray(zarr.open_array(store, path=f"{level}/vertex_counts", mode="r")[...])
    return [(tuple(int(c) for c in g), int(counts[tuple(g)])) for g in np.argwhere(counts > 0)]


def first_chunk(store: MemoryStore) -> tuple[tuple[int, ...], int]:
    """The first occupied chunk and its row count."""
    return occupied(store)[0]


def layout(store: MemoryStore, path: str) -> RowLayout:
    """The row layout of a per-chunk array."""
    version = read_json(store, "zarr.json")["attributes"]["zarr_vectors_version"]
    meta = read_json(store, f"{path}/zarr.json")
    found = RowLayout.from_array_metadata(meta, NDIM, path, placed=has_place_records(version))
    assert found is not None
    return found


def shard_key(store: MemoryStore, path: str, g: tuple[int, ...]) -> str:
    """Key of the shard of chunk ``g`` (a coarse level packs several chunks per shard)."""
    lay = layout(store, path)
    shard = [int(c) for c in lay.shard_of(g)]
    return f"{path}/c/" + "/".join([str(c) for c in shard] + ["0"] * (1 + len(lay.row_shape)))


def get_rows(store: MemoryStore, path: str, g: tuple[int, ...], n: int) -> np.ndarray:
    """Rows ``[0, n)`` of chunk ``g`` from its shard."""
    lay = layout(store, path)
    key = shard_key(store, path, g)
    shard = get(store, key)
    index = lay.chunk_entries(lay.decode_index(shard, key), g)
    out = np.empty((n, *lay.row_shape), dtype=lay.dtype)
    lay.decode_rows_into(shard, index, 0, (0, n), out, key)
    return out


def put_rows(store: MemoryStore, path: str, g: tuple[int, ...], rows: np.ndarray) -> None:
    """Re-encode the shard of chunk ``g`` with ``rows`` as the chunk's rows (the other
    chunks of a shard of several keep their row blocks)."""
    lay = layout(store, path)
    key = shard_key(store, path, g)
    if lay.chunks_per_shard == 1:
        put(store, key, lay.encode_shard(rows, key))
        return
    shard = get(store, key)
    index = lay.decode_index(shard, key).reshape(lay.chunks_per_shard, lay.n_blocks, 2)
    mine = lay.local_chunk(g)
    chunks = []
    for local in range(lay.chunks_per_shard):
        if local == mine:
            chunks.append((local, lay.encode_blocks(rows)))
            continue
        kept = [(int(o), int(n)) for o, n in index[local] if int(o) != _MISSING]
        if kept:
            chunks.append((local, [bytes(shard[o : o + n]) for o, n in kept]))
    put(store, key, lay.assemble_shard(chunks, key))


def edit_rows(
    store: MemoryStore, path: str, change: Callable[[np.ndarray], Any], g: Any = None
) -> None:
    """Apply ``change`` (in place) to the rows of chunk ``g`` (default: the first chunk)."""
    chunk, n = first_chunk(store) if g is None else g
    rows = get_rows(store, path, chunk, n)
    change(rows)
    put_rows(store, path, chunk, rows)


def get_blob_bytes(store: MemoryStore, path: str, g: tuple[int, ...]) -> np.ndarray:
    """The stored blocks of chunk ``g``'s blob in blob array ``path``, in order (a blob
    array stores only the blocks its blob covers, spec §9.2)."""
    lay = layout(store, path)
    key = shard_key(store, path, g)
    shard = get(store, key)
    index = lay.chunk_entries(lay.decode_index(shard, key), g)
    stored = int(np.argmin(np.append(index[:, 0] != np.iinfo(np.uint64).max, False)))
    out = np.empty(stored * lay.rows_per_block, dtype=np.uint8)
    lay.decode_rows_into(shard, index, 0, (0, out.shape[0]), out, key)
    return out


def get_blob(store: MemoryStore, g: tuple[int, ...] | None = None) -> tuple[np.ndarray, np.ndarray]:
    """Dense ``(starts, counts)`` of a chunk's fragment index (default: the first chunk)."""
    chunk = first_chunk(store)[0] if g is None else g
    if has_records(store):
        return get_record(store, chunk).vertex_ranges()
    return decode_dense_ranges(get_blob_bytes(store, "0/vertex_fragments", chunk))


def put_blob(store: MemoryStore, blob: bytes, g: tuple[int, ...] | None = None) -> None:
    """Store ``blob`` as the fragment index of a chunk (default: the first chunk)."""
    chunk = first_chunk(store)[0] if g is None else g
    put_rows(store, "0/vertex_fragments", chunk, np.frombuffer(blob, dtype=np.uint8))


def edit_index(store: MemoryStore, path: str, change: Callable[[np.ndarray], Any]) -> None:
    """Apply ``change`` to the shard index of the first chunk and re-seal its CRC32C."""
    import google_crc32c

    key = shard_key(store, path, first_chunk(store)[0])
    lay = layout(store, path)
    shard = get(store, key)
    body, start = shard[: -lay.index_nbytes], len(shard) - lay.index_nbytes
    index = np.frombuffer(shard[start : start + 16 * lay.n_blocks], dtype="<u8").copy()
    change(index.reshape(-1, 2))
    raw = index.tobytes()
    put(store, key, body + raw + google_crc32c.value(raw).to_bytes(4, "little"))


def set_count(store: MemoryStore, g: tuple[int, ...], value: int) -> None:
    """Overwrite ``vertex_counts[g]``."""
    array = zarr.open_array(store, path="0/vertex_counts", mode="r+")
    array[g] = value


def set_count_and_total(store: MemoryStore, g: tuple[int, ...], value: int) -> None:
    """Overwrite ``vertex_counts[g]`` and the level's ``vertex_count`` with it, so that the
    totals agree (spec §9.3) and only the chunk's own rows tell the edit."""
    old = int(np.asarray(zarr.open_array(store, path="0/vertex_counts", mode="r")[g]))
    set_count(store, g, value)
    edit_level(store, lambda a: a.__setitem__("vertex_count", a["vertex_count"] + value - old))


def retable(store: MemoryStore, path: str) -> None:
    """Make the chunk table of the global array at ``path`` (spec §9.8.1) list its chunks as
    they are now: values edited with every checksum made valid."""
    keys = io(store).list_prefix(f"{path}/c/")
    keys.sort(key=lambda k: [int(part) for part in k[len(path) + 3 :].split("/")])
    tails = [int.from_bytes(get(store, k)[-4:], "little") for k in keys]
    edit_array(store, path, lambda d: d["attributes"].__setitem__(CHUNK_TABLE_KEY, tails))


# -- other kinds and pyramids -------------------------------------------------------------

EDGE_KINDS = ("polyline", "streamline", "graph", "skeleton")


def object_store(kind: str) -> MemoryStore:
    """A hand-built object-kind store whose metadata passes L1 and L2 (no link data)."""
    store = point_store(object_ids=False)
    edit_root(store, lambda a: a.update(geometry_type=kind))
    edit_level(store, lambda a: a.update(object_count=2))
    grid = tuple(read_json(store, "0/vertices/zarr.json")["shape"][:NDIM])
    width = 3 if kind == "mesh" else 2
    links = RowLayout(np.dtype(np.int32), (width,), ROWS_PER_BLOCK, ROWS_PER_BLOCK, BLOSC)
    links_doc = json.loads(
        row_array_metadata(
            grid, links, {"zv_array": "links", "link_width": width, "level_delta": 0}
        )
    )
    links_doc["fill_value"] = -1
    fragments_doc = read_json(store, "0/vertex_fragments/zarr.json")
    fragments_doc["attributes"] = {"zv_array": "link_fragments", "encoding": "fragment_index_v1"}
    docs = {
        "0/links/zarr.json": group_doc(),
        "0/links/0/zarr.json": links_doc,
        "0/link_fragments/zarr.json": fragments_doc,
        "0/object_index/zarr.json": group_doc(
            {"zv_array": "object_index", "num_objects": 2, "sid_ndim": NDIM}
        ),
        "0/object_index/data/zarr.json": global_array(
            (8,), "uint8", 0, {"zv_array": "object_index_data"}
        ),
        "0/object_index/offsets/zarr.json": global_array(
            (2,), "int64", 0, {"zv_array": "object_index_offsets"}
        ),
    }
    if kind in EDGE_KINDS:
        docs["0/cross_chunk_links/zarr.json"] = global_array(
            (0, 2), "int64", -1, {"zv_array": "cross_chunk_links", "num_links": 0, "level_delta": 0}
        )
    for key, doc in docs.items():
        if doc.get("node_type") == "array":  # format 1.3 names every dimension (§9.0.3)
            doc = named_array_document(key.removesuffix("/zarr.json"), doc, "xyz")
        write_json(store, key, doc)
    return store


def global_array(shape: tuple[int, ...], dtype: str, fill: int, attributes: Doc) -> Doc:
    """``zarr.json`` of a small unsharded global array."""
    chunks = tuple(max(1, s) for s in shape)
    return array_doc(
        shape=shape,
        dtype=dtype,
        chunks=chunks,
        fill_value=fill,
        attributes=attributes,
        compressors=None,
    )


def add_groupings(store: MemoryStore) -> None:
    """Add a valid ``groupings`` array (one group of both objects) to an object store."""
    write_json(
        store,
        "0/groupings/zarr.json",
        global_array((1, 2), "int64", -1, {"zv_array": "groupings", "num_groups": 1}),
    )


def rekey(raw: bytes, key: str, new_key: str) -> bytes:
    """The file ``raw`` read from ``key``, for storing at ``new_key``: a shard's place record
    (spec §9.0.2) names the new key; any other file is returned as it is."""
    for data_type in _DATA_TYPES:
        record = place_record(key, data_type)
        if raw.count(record) == 1:
            return raw.replace(record, place_record(new_key, data_type))
    return raw


_DATA_TYPES = ("float32", "float64", "int64", "int32", "int16", "int8", "uint64", "uint32")
_DATA_TYPES += ("uint16", "uint8", "bool", "float16")


HAND_MADE = "hand_made"
"""The ``coarsening.method`` of the levels :func:`add_level` makes: a method the validator does
not know (``L2.coarsening_method_unknown``, a warning), so the L5 method checks are skipped and
the generic L5 checks run on levels of any content."""


def add_level(store: MemoryStore, level: int, ratio: int, pts: np.ndarray) -> None:
    """Add pyramid level ``level`` holding ``pts`` (inside the level-0 bounding box); the store
    then declares format 1.3 (levels of detail, spec §3.3)."""
    scratch = MemoryStore()
    write(scratch, pts)
    source = io(scratch)
    for key in source.list_prefix("0/"):
        raw = source.get(key)
        assert raw is not None
        put(store, f"{level}/{key[2:]}", rekey(raw, key, f"{level}/{key[2:]}"))
    shape = [BIN * ratio] * NDIM

    def level_attrs(attrs: Doc) -> None:
        attrs.update(level=level, bin_ratio=[ratio] * NDIM, bin_shape=shape)
        attrs["coarsening"] = {"method": HAND_MADE}

    edit_level(store, level_attrs, level)
    entry = {
        "path": str(level),
        "level": level,
        "bin_ratio": [ratio] * NDIM,
        "bin_shape": shape,
        "object_sparsity": 1.0,
        "coordinateTransformations": [
            {"type": "scale", "scale": [float(ratio)] * NDIM},
            {"type": "translation", "translation": [s / 2 for s in shape]},
        ],
    }

    def add_entry(attrs: Doc) -> None:
        attrs["multiscales"][0]["datasets"].append(entry)
        attrs["zarr_vectors_version"] = "1.3"

    edit_root(store, add_entry)


def pyramid_store(ratios: tuple[int, ...] = (2,)) -> MemoryStore:
    """The reference point cloud plus coarser levels 1, 2… holding the same points (format 1.3,
    method :data:`HAND_MADE`)."""
    store = point_store()
    for level, ratio in enumerate(ratios, start=1):
        add_level(store, level, ratio, points())
    return store


def missing_block(index: np.ndarray) -> None:
    """Mark row block 0 of a shard index missing."""
    index[0] = _MISSING


def has_records(store: MemoryStore) -> bool:
    """Whether level 0 keeps its fragments in ``fragment_records`` (format 1.6, §6.9)."""
    return io(store).get("0/fragment_records/zarr.json") is not None


def get_record(store: MemoryStore, g: tuple[int, ...]) -> FragmentRecord:
    """The decoded fragment record of chunk ``g`` (format 1.6)."""
    return decode_fragment_record(get_blob_bytes(store, "0/fragment_records", g))


def put_record(
    store: MemoryStore,
    g: tuple[int, ...],
    vertex_counts: np.ndarray,
    link_counts: np.ndarray,
    owners: np.ndarray,
) -> None:
    """Store a chunk's fragment record (format 1.6) made of these columns."""
    blob = encode_fragment_record(vertex_counts, link_counts, owners)
    put_rows(store, "0/fragment_records", g, np.frombuffer(blob, dtype=np.uint8))
