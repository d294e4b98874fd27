"""Writing a spilled coarse object level (:class:`~zarr_vectors.write._level_spill.LevelSpill`)
chunk by chunk in shard-major order (spec §4.3.3, §10.3).

Every per-chunk array is written chunk by chunk, each chunk read back from the spill files
of the batches that hold it — the bytes the one-shot path writes for the whole table; the
global arrays (object index, cross-chunk links and their columns) are written from the
spill files too.
"""

from __future__ import annotations

from collections.abc import Callable

import numpy as np

from zarr_vectors.format.fragment_encoding import encode_ranges_ragged
from zarr_vectors.format.kinds import geometry_kind
from zarr_vectors.format.names import (
    CROSS_CHUNK_LINK_ATTRIBUTES,
    CROSS_CHUNK_LINKS,
    FRAGMENT_ATTRIBUTES,
    LINK_ATTRIBUTES,
    LINK_FRAGMENTS,
    LINKS,
    OBJECT_ID_ATTRIBUTE,
    OBJECT_INDEX,
)
from zarr_vectors.store.arrays import group_metadata
from zarr_vectors.store.io import StoreIO
from zarr_vectors.store.shards import RowLayout
from zarr_vectors.write._layouts import blob_layout, column_shapes, round_up
from zarr_vectors.write._level_spill import LevelSpill
from zarr_vectors.write._level_writer import LevelStats, LevelWriter, write_chunk_array
from zarr_vectors.write._objects import (
    ObjectTable,
    write_encoded_object_index,
    write_global,
    write_object_columns,
)
from zarr_vectors.write._shard_writes import shard_major_order
from zarr_vectors.write._spill_files import FileChain, LazyChunks, SpillFile
from zarr_vectors.write.options import WriteOptions

__all__ = ["write_spilled_level"]

_INT32 = np.iinfo(np.int32)


def write_spilled_level(
    spill: LevelSpill, io: StoreIO, number: int, objects: ObjectTable, options: WriteOptions
) -> LevelStats:
    """Write the nodes of a spilled coarse object level as
    :func:`~zarr_vectors.write._objects.write_object_level` writes them for the whole coarse
    table (level metadata and ``object_vertex_counts`` are the caller's); ``objects`` gives
    level 0's per-object fields, ``options`` the level's settings (its ``shard_chunks``).

    Examples
    --------
    >>> import tempfile
    >>> from pathlib import Path
    >>> from zarr.storage import MemoryStore
    >>> from zarr_vectors.format.grid import ChunkGrid
    >>> one = np.ones(1, int)
    >>> grid = ChunkGrid(np.array([4.0]), np.array([2.0]), np.array([2]), 0 * one, one)
    >>> table = ObjectTable("polyline", np.array([[0.5], [2.5]]), np.array([0, 2]), None,
    ...                     {}, {}, None, None, {})
    >>> options = WriteOptions().with_kind_defaults("polyline")
    >>> spill = LevelSpill(Path(tempfile.mkdtemp()), grid, options,
    ...                    (np.zeros(1), np.ones(1) * 3), 2)
    >>> spill.add(table, 0)
    >>> write_spilled_level(spill, StoreIO(MemoryStore()), 1, table, options).chunk_count
    1
    """
    flats = sorted(spill.totals)
    shape = tuple(int(g) for g in spill.grid.shape)
    chunks = np.stack(np.unravel_index(np.asarray(flats, np.int64), shape), axis=1)
    chunks = chunks.astype(np.int64).reshape(-1, spill.grid.ndim)
    totals = np.asarray([spill.totals[f] for f in flats], np.int64).reshape(-1, 3)
    r = options.block_rows
    n_max = round_up(int(totals[:, 0].max(initial=0)), r)
    stats = _write_vertices(spill, io, number, (flats, chunks), n_max, options)
    base = str(number)
    _write_links(
        spill, io, base, (flats, chunks), (n_max, int(totals[:, 2].max(initial=0))), options
    )
    _write_fragment_columns(spill, io, base, (flats, chunks), objects, options)
    _write_globals(spill, io, base, objects, n_max, options)
    spill.close()
    return stats


def _fragment_blob(spill: LevelSpill, flat: int) -> np.ndarray:
    starts, counts = spill.gather("frow", flat, 1), spill.gather("flen", flat, 1)
    form = spill.options.counts_blobs()
    return encode_ranges_ragged(starts, counts, [0, starts.shape[0]], counts_form=form)[0]


def _link_blob(spill: LevelSpill, flat: int) -> np.ndarray:
    counts = spill.gather("lcount", flat, 1)
    starts, form = np.cumsum(counts) - counts, spill.options.counts_blobs()
    return encode_ranges_ragged(starts, counts, [0, counts.shape[0]], counts_form=form)[0]


def _links(spill: LevelSpill, flat: int, n_max: int) -> np.ndarray:
    rows = spill.gather("links", flat, 2)
    if geometry_kind(spill.kind).faces:
        outside = rows < 0
        chunk, row = np.divmod(-rows[outside] - 1, spill.scale)
        rows[outside] = -(chunk * n_max + row + 1)
    return rows


def _write_vertices(
    spill: LevelSpill,
    io: StoreIO,
    number: int,
    chunks: tuple[list[int], np.ndarray],
    n_max: int,
    options: WriteOptions,
) -> LevelStats:
    flats, grid_chunks = chunks
    names = [n for n in spill.files if n == "v:" or n.startswith("va:")]
    sample = {n: spill.files[n] for n in names}
    positions = np.empty((0, *sample["v:"].row_shape), sample["v:"].dtype)
    attributes = {
        n[3:]: np.empty((0, *f.row_shape), f.dtype) for n, f in sample.items() if n != "v:"
    }
    shapes = (column_shapes(positions), {k: column_shapes(v) for k, v in attributes.items()})
    longest = max((len(_fragment_blob(spill, f)) for f in flats), default=16)
    layout = blob_layout(longest, None, options.blob_blosc())
    writer = LevelWriter(io, number, spill.grid, shapes, n_max, options, blobs=layout)
    for j in shard_major_order(grid_chunks, writer.shard_chunks).tolist():
        rows = [spill.gather(n, flats[j], 0) for n in names]
        writer.add_chunk(grid_chunks[j], rows, _fragment_blob(spill, flats[j]))
    return writer.finish()


def _write_links(
    spill: LevelSpill,
    io: StoreIO,
    base: str,
    chunks: tuple[list[int], np.ndarray],
    sizes: tuple[int, int],
    options: WriteOptions,
) -> None:
    flats, grid_chunks = chunks
    n_max, longest = sizes
    r, shards = options.block_rows, options.shard_shape(spill.grid.ndim)
    kind = geometry_kind(spill.kind)
    low, high, blob = 0, 0, 16
    for f in flats:
        rows = _links(spill, f, n_max)
        if rows.size:
            low, high = min(low, int(rows.min())), max(high, int(rows.max()))
        blob = max(blob, len(_link_blob(spill, f)))
    wide = low < _INT32.min or high > _INT32.max
    dtype = np.dtype(np.int64 if wide else np.int32)
    layout = RowLayout(
        dtype, (kind.link_width,), r, round_up(longest, r), options.blosc(LINKS), fill=-1
    )
    io.set(f"{base}/{LINKS}/zarr.json", group_metadata({}))
    n = len(flats)
    write_chunk_array(
        io,
        f"{base}/{LINKS}/0",
        spill.grid,
        grid_chunks,
        LazyChunks(n, lambda j: _links(spill, flats[j], n_max).astype(dtype, copy=False)),
        layout,
        {"zv_array": "links", "link_width": kind.link_width, "level_delta": 0},
        shard_chunks=shards,
    )
    write_chunk_array(
        io,
        f"{base}/{LINK_FRAGMENTS}",
        spill.grid,
        grid_chunks,
        LazyChunks(n, lambda j: _link_blob(spill, flats[j])),
        blob_layout(blob, None, options.blob_blosc()),
        {"zv_array": LINK_FRAGMENTS, "encoding": "fragment_index_v1"},
        shard_chunks=shards,
    )
    names = [name[3:] for name in spill.files if name.startswith("la:")]
    if not names:
        return
    io.set(f"{base}/{LINK_ATTRIBUTES}/zarr.json", group_metadata({}))
    if kind.cross_chunk_links:
        io.set(f"{base}/{CROSS_CHUNK_LINK_ATTRIBUTES}/zarr.json", group_metadata({}))
    for name in names:
        file = spill.files[f"la:{name}"]
        blosc = options.blosc(LINK_ATTRIBUTES)
        column = RowLayout(file.dtype, file.row_shape, r, round_up(longest, r), blosc)
        write_chunk_array(
            io,
            f"{base}/{LINK_ATTRIBUTES}/{name}",
            spill.grid,
            grid_chunks,
            LazyChunks(n, _column_of(spill, f"la:{name}", flats, 2)),
            column,
            {"zv_array": "link_attribute", "name": name},
            shard_chunks=shards,
        )


def _column_of(
    spill: LevelSpill, name: str, flats: list[int], family: int
) -> Callable[[int], np.ndarray]:
    """The rows of column ``name`` of the ``j``-th chunk of ``flats``."""
    return lambda j: spill.gather(name, flats[j], family)


def _write_fragment_columns(
    spill: LevelSpill,
    io: StoreIO,
    base: str,
    chunks: tuple[list[int], np.ndarray],
    objects: ObjectTable,
    options: WriteOptions,
) -> None:
    flats, grid_chunks = chunks
    longest = max((spill.totals[f][1] for f in flats), default=0)
    r, n = options.block_rows, len(flats)
    owners = spill.files["fobj"]
    names = [OBJECT_ID_ATTRIBUTE, *options.fragment_attributes]
    io.set(f"{base}/{FRAGMENT_ATTRIBUTES}/zarr.json", group_metadata({}))
    for name in names:

        def rows(j: int, name: str = name) -> np.ndarray:
            own = spill.gather("fobj", flats[j], 1)
            return own if name == OBJECT_ID_ATTRIBUTE else objects.object_attributes[name][own]

        values = rows(0) if n else np.empty(0, owners.dtype)
        layout = RowLayout(
            values.dtype,
            values.shape[1:],
            r,
            round_up(longest, r),
            options.blosc(FRAGMENT_ATTRIBUTES),
        )
        write_chunk_array(
            io,
            f"{base}/{FRAGMENT_ATTRIBUTES}/{name}",
            spill.grid,
            grid_chunks,
            LazyChunks(n, rows),
            layout,
            {"zv_array": "fragment_attribute", "name": name},
            shard_chunks=options.shard_shape(spill.grid.ndim),
        )


def _write_globals(
    spill: LevelSpill,
    io: StoreIO,
    base: str,
    objects: ObjectTable,
    n_max: int,
    options: WriteOptions,
) -> None:
    """The object index, object columns, groups and cross-chunk links (with columns),
    each global array written chunk by chunk from the spill files."""
    n_objects = sum(int(counts.shape[0]) for counts in spill.counts)
    index, ndim = (
        _index(
            spill,
        ),
        spill.grid.ndim,
    )
    blosc = options.global_blosc(OBJECT_INDEX)
    write_encoded_object_index(io, base, index, n_objects, ndim, blosc=blosc)
    kind = geometry_kind(spill.kind)
    cross: np.ndarray | SpillFile = np.empty((0, 2), np.int64)
    if kind.cross_chunk_links:
        cross = spill.sorted_cross(n_max)
    cross_blosc = options.global_blosc(CROSS_CHUNK_LINKS)
    write_object_columns(io, base, objects, cross, cross_blosc=cross_blosc)
    if not kind.cross_chunk_links or not objects.link_attributes:
        return
    for name, values in objects.link_attributes.items():
        column = spill.files.get(f"xa:{name}")
        tag = {"zv_array": "cross_chunk_link_attribute", "name": name}
        write_global(
            io,
            f"{base}/{CROSS_CHUNK_LINK_ATTRIBUTES}/{name}",
            values[:0] if column is None else column,
            0,
            tag,
        )


def _index(spill: LevelSpill) -> tuple[np.ndarray | FileChain, np.ndarray | FileChain]:
    """The encoded object index (data, offsets) of every object, from the spill files
    of each joined part in turn (each part's offsets moved by the data before it)."""
    held = [files for files in spill.index_files if "oi:data" in files]
    if not held:
        return np.empty(0, np.uint8), np.empty(0, np.int64)
    before = np.cumsum([0, *(files["oi:data"].rows for files in held)]).tolist()
    data = FileChain([(files["oi:data"], 0) for files in held])
    offsets = FileChain([(files["oi:offsets"], b) for files, b in zip(held, before, strict=False)])
    return data, offsets
