"""One coarse object level written out of core: spilled batch by batch, written shard by
shard (spec §4.3.3, §10.3).

A coarse level of an object kind is the object write path (:func:`~zarr_vectors.write.
_objects.write_object_level`) applied to the coarse table of every object. The table comes
batch by batch (consecutive objects), and a level's chunk holds its rows ordered by
(object, run order): the rows batch ``k`` puts in a chunk come after those of the batches
before it. So each batch is cut into runs alone (:func:`~zarr_vectors.write._objects.
cut_level`) and its per-chunk rows go to spill files at once, their chunk-local row and
fragment numbers moved by what the earlier batches put in the same chunk, and the global
vertex ids it names (``cross_chunk_links``, mesh sentinels) kept as (chunk, row) until the
level's ``N_max`` is known. :meth:`LevelSpill.write` then writes every per-chunk array
chunk by chunk in shard-major order, each chunk read back from the files of the batches
that hold it — the bytes the one-shot path writes for the whole table. The encoded object
index goes to spill files too, and the cross-chunk links grouped by the chunk of their
first vertex; their global arrays are written chunk by chunk from the files (the links
sorted one chunk at a time). Memory holds a batch, one chunk, one shard being assembled,
each object's vertex count and a few numbers per chunk and batch.
"""

from __future__ import annotations

import dataclasses
import os
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import Any

import numpy as np

from zarr_vectors.errors import CorruptChunkError, InvalidInputError
from zarr_vectors.format.fragment_encoding import encode_ranges_ragged
from zarr_vectors.format.grid import ChunkGrid
from zarr_vectors.format.kinds import geometry_kind
from zarr_vectors.format.manifest import encode_object_index_bulk
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
from zarr_vectors.write._level_writer import LevelStats, LevelWriter, write_chunk_array
from zarr_vectors.write._object_runs import chunk_ids
from zarr_vectors.write._objects import (
    ObjectTable,
    cut_level,
    write_encoded_object_index,
    write_global,
    write_object_columns,
)
from zarr_vectors.write._shard_writes import shard_major_order
from zarr_vectors.write.options import WriteOptions

__all__ = ["LevelSpill"]

_INT32 = np.iinfo(np.int32)


class _File:
    """An append-only file of rows of one dtype and row shape."""

    def __init__(self, path: Path, dtype: np.dtype[Any], row_shape: tuple[int, ...]) -> None:
        self.path, self.dtype, self.row_shape = path, np.dtype(dtype), row_shape
        self.width = int(np.prod(row_shape, dtype=np.int64))
        self.rows = 0
        self.fd: int | None = None
        path.touch()

    def append(self, values: np.ndarray) -> None:
        with self.path.open("ab") as handle:
            np.ascontiguousarray(values, dtype=self.dtype).tofile(handle)
        self.rows += int(values.shape[0])

    def read(self, start: int, stop: int) -> np.ndarray:
        """Rows ``[start, stop)`` (read-only); the file stays open until :meth:`close`."""
        if self.fd is None:
            self.fd = os.open(self.path, os.O_RDONLY)
        row = self.width * self.dtype.itemsize
        raw = os.pread(self.fd, (stop - start) * row, start * row)
        return np.frombuffer(raw, self.dtype).reshape(stop - start, *self.row_shape)

    def close(self) -> None:
        if self.fd is not None:
            os.close(self.fd)
            self.fd = None


class _Chain:
    """The rows of spill files one after another, each file's values moved by its shift
    (the object index of a joined spill: each part's offsets by the data before it).

    Examples
    --------
    >>> import tempfile
    >>> folder = Path(tempfile.mkdtemp())
    >>> a, b = (_File(folder / name, np.dtype(np.int64), ()) for name in "ab")
    >>> a.append(np.array([0, 2]))
    >>> b.append(np.array([0, 1, 3]))
    >>> _Chain([(a, 0), (b, 5)]).read(1, 4).tolist()
    [2, 5, 6]
    """

    def __init__(self, files: list[tuple[_File, int]]) -> None:
        self.files = files
        self.dtype, self.row_shape = files[0][0].dtype, files[0][0].row_shape
        self.bounds = np.cumsum([0, *(file.rows for file, _ in files)]).tolist()
        self.rows = int(self.bounds[-1])

    def read(self, start: int, stop: int) -> np.ndarray:
        """Rows ``[start, stop)`` of the chain."""
        parts = [np.empty((0, *self.row_shape), self.dtype)]
        for (file, shift), low, high in zip(self.files, self.bounds, self.bounds[1:], strict=False):
            a, b = max(start, low), min(stop, high)
            if a < b:
                rows = file.read(a - low, b - low)
                parts.append(rows + np.asarray(shift, self.dtype) if shift else rows)
        return np.concatenate(parts)


@dataclasses.dataclass(slots=True)
class _Piece:
    """Where one batch's part of its chunks is in the spill files (absolute rows)."""

    vertices: np.ndarray  # (k + 1,)
    fragments: np.ndarray  # (k + 1,)
    links: np.ndarray  # (k + 1,)
    cross: np.ndarray  # (k + 1,) cross-chunk links by the chunk of their first vertex
    files: dict[str, _File]  # the files of the spill that wrote the batch

    def offsets(self, family: int) -> np.ndarray:
        """The row offsets of a family: 0 vertices, 1 fragments, 2 links, 3 cross-chunk
        links."""
        return (self.vertices, self.fragments, self.links, self.cross)[family]


class _Lazy(Sequence[np.ndarray]):
    """``per_chunk[j]`` computed when asked (one chunk in memory at a time)."""

    def __init__(self, n: int, get: Callable[[int], np.ndarray]) -> None:
        self.n, self.get = n, get

    def __len__(self) -> int:
        return self.n

    def __getitem__(self, j: Any) -> Any:
        return self.get(int(j))


def _check_seeded(parts: Sequence[LevelSpill], totals: dict[int, list[int]]) -> None:
    """Raise CorruptChunkError unless each part's sums in every chunk it holds are those of
    the parts before it plus its own, and all of them ``totals`` (:meth:`LevelSpill.joined`)."""
    through: dict[int, list[int]] = {}  # the sums through each part
    for part in parts:
        for flat in part.holders:
            own = part.own(flat)
            sums = [a + b for a, b in zip(through.get(flat, [0, 0, 0]), own, strict=True)]
            if part.totals[flat] != sums:
                raise CorruptChunkError(
                    f"a spilled part's rows of chunk {flat} do not follow the parts before it"
                )
            through[flat] = sums
    if through != totals:
        raise CorruptChunkError("the spilled parts do not hold the rows of every chunk")


class LevelSpill:
    """A coarse object level gathered batch by batch on disk, then written (spec §4.3.3).

    Parameters
    ----------
    folder
        An empty directory for the spill files (the caller removes it).
    grid
        The level's grid (the store's chunks, the level's bin shape).
    options
        The store's write options.
    bounds
        Level 0's per-axis minimum and maximum (every coarse vertex lies inside).
    most
        An upper bound on the vertices of the level (level 0's count).
    before
        Rows, fragments and links that batches spilled elsewhere put before this spill's
        batches in each chunk (flat index; default none): the spills of consecutive runs
        of objects, each seeded with the sums of those before it, are
        :meth:`joined` into the spill of all the objects.

    Examples
    --------
    >>> import tempfile
    >>> from zarr.storage import MemoryStore
    >>> one = np.ones(1, int)
    >>> grid = ChunkGrid(np.array([4.0]), np.array([2.0]), np.array([2]), 0 * one, 2 * one)
    >>> line = np.arange(8.0).reshape(8, 1)
    >>> table = ObjectTable("polyline", line, np.array([0, 4, 8]), None, {}, {}, None,
    ...                     None, {})
    >>> options = WriteOptions().with_kind_defaults("polyline")
    >>> spill = LevelSpill(Path(tempfile.mkdtemp()), grid, options, (line[0], line[-1]), 8)
    >>> spill.add(table, 0)
    >>> spill.n_vertices, spill.object_counts().tolist()
    (8, [4, 4])
    >>> spill.write(StoreIO(MemoryStore()), 1, table, options).vertex_count
    8
    """

    def __init__(
        self,
        folder: Path,
        grid: ChunkGrid,
        options: WriteOptions,
        bounds: tuple[np.ndarray, np.ndarray],
        most: int,
        before: dict[int, list[int]] | None = None,
    ) -> None:
        self.folder, self.grid, self.options, self.bounds = folder, grid, options, bounds
        self.cells = int(np.prod(np.asarray(grid.shape, dtype=np.float64)))
        self.scale = max(1, int(most))  # rows of a chunk are below it: (chunk, row) codes
        if float(self.cells) * self.scale >= 2.0**63:
            raise InvalidInputError(
                f"the chunk grid {tuple(int(g) for g in grid.shape)} is too large for a "
                "level of this many vertices (spec §9.11); use a larger chunk_shape"
            )
        self.files: dict[str, _File] = {}
        self.pieces: list[_Piece] = []
        self.holders: dict[int, list[tuple[int, int]]] = {}  # chunk -> (batch, rank)
        # chunk -> [rows, fragments, links]
        self.totals: dict[int, list[int]] = {f: list(v) for f, v in (before or {}).items()}
        self.counts: list[np.ndarray] = []
        # the files holding the encoded object index, in object order (several when joined)
        self.index_files: list[dict[str, _File]] = [self.files]
        self.kind = ""
        self.n_vertices = 0

    def _file(self, name: str, values: np.ndarray) -> _File:
        if name not in self.files:
            number = len(self.files)
            while (self.folder / f"{number}.bin").exists():  # a joined part's file
                number += 1
            path = self.folder / f"{number}.bin"
            self.files[name] = _File(path, values.dtype, tuple(values.shape[1:]))
        return self.files[name]

    def _rows(self, name: str) -> int:
        """Rows spilled so far to a column's file (0 before its first)."""
        return self.files[name].rows if name in self.files else 0

    def _append(self, name: str, values: np.ndarray) -> int:
        """Append rows to a column's file; the row where they start."""
        file = self._file(name, values)
        start = file.rows
        file.append(values)
        return start

    def object_counts(self) -> np.ndarray:
        """``(m,)`` every object's vertex count on the level so far.

        Examples
        --------
        >>> import tempfile
        >>> one = np.ones(1, int)
        >>> grid = ChunkGrid(np.array([4.0]), np.array([2.0]), np.array([2]), 0 * one, one)
        >>> bounds = (np.zeros(1), np.ones(1))
        >>> LevelSpill(Path(tempfile.mkdtemp()), grid, WriteOptions(), bounds, 1).object_counts()
        array([], dtype=int64)
        """
        return np.concatenate([np.empty(0, np.int64), *self.counts]).astype(np.int64)

    def add(self, table: ObjectTable, first: int) -> None:
        """Spill the coarse table of the next batch (objects ``first``, ``first + 1``, ...).

        Examples
        --------
        >>> import tempfile
        >>> one = np.ones(1, int)
        >>> grid = ChunkGrid(np.array([4.0]), np.array([2.0]), np.array([2]), 0 * one, one)
        >>> table = ObjectTable("polyline", np.array([[0.5], [2.5]]), np.array([0, 2]), None,
        ...                     {}, {}, None, None, {})
        >>> options = WriteOptions().with_kind_defaults("polyline")
        >>> bounds = (np.zeros(1), np.ones(1) * 3)
        >>> spill = LevelSpill(Path(tempfile.mkdtemp()), grid, options, bounds, 2)
        >>> spill.add(table, 0)
        >>> spill.n_vertices
        2
        """
        self.kind = table.kind
        self.counts.append(np.diff(table.offsets).astype(np.int64))
        if not table.positions.shape[0]:
            empty = np.empty(0, np.int64)
            ndim = table.positions.shape[1]
            self._spill_index((empty, np.empty((0, ndim), np.int64), empty), table.n_objects)
            return
        runs, links, n_max, flats, per_chunk = self._cut(table)
        shift = np.asarray([self.totals.get(f, [0, 0, 0])[:2] for f in flats.tolist()], np.int64)
        shift = shift.reshape(-1, 2)
        place = runs.place
        columns = [table.positions, *table.vertex_attributes.values()]
        names = ["v:", *(f"va:{name}" for name in table.vertex_attributes)]
        starts = [self._append(n, runs.rows.stored(c)) for n, c in zip(names, columns, strict=True)]
        fragment_rows = place.fragment_row + np.repeat(shift[:, 0], per_chunk[:, 1])
        frag_start = self._append("frow", fragment_rows)
        self._append("flen", place.fragment_length)
        self._append("fobj", place.fragment_object + first)
        self._append("lcount", links.fragment_counts)
        rows = self._shifted_links(
            links.rows, np.repeat(shift[:, 0], per_chunk[:, 2]), flats, n_max
        )
        link_row_start = self._append("links", rows)
        if links.source is not None:
            for name, values in table.link_attributes.items():
                self._append(f"la:{name}", values[links.source])
        cross_start = self._rows("cross")
        cross = self._cross(links, table, flats, shift[:, 0], n_max)
        per_chunk = np.column_stack(
            [per_chunk, np.bincount(np.searchsorted(flats, cross), minlength=flats.shape[0])]
        )
        self._object_index(runs, table.n_objects, shift[:, 1])
        self._record(flats, per_chunk, (starts[0], frag_start, link_row_start, cross_start))
        self.n_vertices += runs.n_vertices

    def _cut(self, table: ObjectTable) -> tuple[Any, Any, int, np.ndarray, np.ndarray]:
        """A batch's runs and links, its ``N_max``, its chunks (flat indices, ascending) and
        their ``(k, 3)`` rows, fragments and links."""
        runs, links = cut_level(table, self.grid, self.options, self.bounds)
        n_max = round_up(int(runs.rows.counts.max(initial=0)), self.options.block_rows)
        flats = chunk_ids(runs, self.grid, n_max)
        per_chunk = np.stack(
            [runs.rows.counts, np.diff(runs.place.run_offsets), np.diff(links.chunk_offsets)],
            axis=1,
        )
        return runs, links, n_max, flats, per_chunk

    def sizes(self, table: ObjectTable) -> tuple[np.ndarray, np.ndarray]:
        """The chunks (flat indices, ascending) the coarse table of a batch puts rows in,
        and their ``(k, 3)`` rows, fragments and links, without spilling anything.

        Examples
        --------
        >>> import tempfile
        >>> one = np.ones(1, int)
        >>> grid = ChunkGrid(np.array([4.0]), np.array([2.0]), np.array([2]), 0 * one, 2 * one)
        >>> table = ObjectTable("polyline", np.array([[0.5], [5.5]]), np.array([0, 2]), None,
        ...                     {}, {}, None, None, {})
        >>> options = WriteOptions().with_kind_defaults("polyline")
        >>> spill = LevelSpill(Path(tempfile.mkdtemp()), grid, options, (np.zeros(1), 6 * one), 2)
        >>> flats, per_chunk = spill.sizes(table)
        >>> flats.tolist(), per_chunk.tolist()
        ([0, 1], [[1, 1, 0], [1, 1, 0]])
        """
        if not table.positions.shape[0]:
            return np.empty(0, np.int64), np.empty((0, 3), np.int64)
        _, _, _, flats, per_chunk = self._cut(table)
        return flats, per_chunk

    @classmethod
    def joined(cls, parts: Sequence[LevelSpill], totals: dict[int, list[int]]) -> LevelSpill:
        """The spill of consecutive runs of objects, each spilled alone (in order) seeded
        with what the runs before it put in each chunk (``before``), as one spill of
        every object; ``totals`` gives every chunk's rows, fragments and links.

        Raises
        ------
        CorruptChunkError
            When a part's rows in a chunk do not follow those of the parts before it (it
            was not seeded with them), or the parts do not add up to ``totals``.
        """
        _check_seeded(parts, totals)
        first = parts[0]
        out = cls(first.folder, first.grid, first.options, first.bounds, first.scale)
        out.totals = {f: list(v) for f, v in totals.items()}
        for part in parts:
            shift = len(out.pieces)
            out.pieces.extend(part.pieces)
            for flat, held in part.holders.items():
                out.holders.setdefault(flat, []).extend((b + shift, r) for b, r in held)
            out.counts += part.counts
            out.n_vertices += part.n_vertices
            out.kind = part.kind or out.kind
        out.index_files = [files for part in parts for files in part.index_files]
        for part in parts:  # a file of every column: names, dtypes and row shapes
            for name, file in part.files.items():
                out.files.setdefault(name, file)
        return out

    def own(self, flat: int) -> list[int]:
        """Rows, fragments and links this spill's batches put in chunk ``flat``."""
        sums = [0, 0, 0]
        for batch, rank in self.holders.get(flat, []):
            piece = self.pieces[batch]
            for family in range(3):
                offsets = piece.offsets(family)
                sums[family] += int(offsets[rank + 1] - offsets[rank])
        return sums

    def _codes(
        self, gids: np.ndarray, flats: np.ndarray, rows_before: np.ndarray, n_max: int
    ) -> tuple[np.ndarray, np.ndarray]:
        """(chunk, final row) of the batch's global ids ``gids`` (batch ``n_max``)."""
        chunk, row = np.divmod(gids, n_max)
        at = np.searchsorted(flats, chunk)
        return chunk, row + rows_before[at]

    def _shifted_links(
        self, rows: np.ndarray, shift: np.ndarray, flats: np.ndarray, n_max: int
    ) -> np.ndarray:
        """Link rows with chunk-local rows moved by ``shift`` (per link row); a mesh's
        sentinels ``-(gid + 1)`` are kept as ``-(chunk * scale + row + 1)``."""
        rows = np.asarray(rows, dtype=np.int64)
        out = np.where(rows >= 0, rows + shift[:, None], rows)
        if geometry_kind(self.kind).faces and rows.size:
            outside = rows < 0
            gids = -rows[outside] - 1
            rows_before = self._rows_before(flats)
            chunk, row = self._codes(gids, flats, rows_before, n_max)
            out[outside] = -(chunk * self.scale + row + 1)
        return out

    def _rows_before(self, flats: np.ndarray) -> np.ndarray:
        return np.asarray([self.totals.get(f, [0])[0] for f in flats.tolist()], np.int64)

    def _cross(
        self, links: Any, table: ObjectTable, flats: np.ndarray, rows_before: np.ndarray, n_max: int
    ) -> np.ndarray:
        """Spill the batch's cross-chunk links as (chunk, row, chunk, row) codes, grouped by
        the chunk of their first vertex (in order within it), with their link attributes;
        return those chunks."""
        if not geometry_kind(table.kind).cross_chunk_links or not links.cross.shape[0]:
            return np.empty(0, np.int64)
        a = self._codes(links.cross[:, 0], flats, rows_before, n_max)
        b = self._codes(links.cross[:, 1], flats, rows_before, n_max)
        order = np.argsort(a[0], kind="stable")
        self._append("cross", np.stack([a[0], a[1], b[0], b[1]], axis=1)[order])
        if links.cross_source is not None:
            for name, values in table.link_attributes.items():
                self._append(f"ca:{name}", values[links.cross_source[order]])
        return np.asarray(a[0][order], np.int64)

    def _object_index(self, runs: Any, n_objects: int, fragments_before: np.ndarray) -> None:
        fragment = runs.run_fragment + fragments_before[runs.run_chunk]
        chunks = np.take(runs.chunk_grid, runs.run_chunk, axis=0)  # faster than indexing
        self._spill_index((runs.run_object, chunks, fragment), n_objects)

    def _spill_index(self, refs: tuple[np.ndarray, np.ndarray, np.ndarray], n: int) -> None:
        """Append the encoded object index of the batch's ``n`` objects to the spill, its
        offsets counted from the start of this spill's data."""
        data, offsets = encode_object_index_bulk(*refs, n)
        before = self._rows("oi:data")
        self._append("oi:data", data)
        self._append("oi:offsets", np.asarray(offsets, np.int64) + before)

    def _record(self, flats: np.ndarray, per_chunk: np.ndarray, starts: tuple[int, ...]) -> None:
        batch = len(self.pieces)
        offsets = [
            np.concatenate([[0], np.cumsum(per_chunk[:, i])]).astype(np.int64) + start
            for i, start in enumerate(starts)
        ]
        self.pieces.append(_Piece(offsets[0], offsets[1], offsets[2], offsets[3], self.files))
        for rank, (flat, sizes) in enumerate(zip(flats.tolist(), per_chunk.tolist(), strict=True)):
            self.holders.setdefault(flat, []).append((batch, rank))
            total = self.totals.setdefault(flat, [0, 0, 0])
            for i in range(3):
                total[i] += int(sizes[i])

    # -- writing -------------------------------------------------------------------------

    def columns(self) -> list[np.ndarray]:
        """The level's positions and vertex attributes without rows (dtypes and row shapes).

        Examples
        --------
        >>> import tempfile
        >>> one = np.ones(1, int)
        >>> grid = ChunkGrid(np.array([4.0]), np.array([2.0]), np.array([2]), 0 * one, one)
        >>> table = ObjectTable("polyline", np.array([[0.5], [2.5]]), np.array([0, 2]), None,
        ...                     {}, {}, None, None, {})
        >>> options = WriteOptions().with_kind_defaults("polyline")
        >>> bounds = (np.zeros(1), np.ones(1) * 3)
        >>> spill = LevelSpill(Path(tempfile.mkdtemp()), grid, options, bounds, 2)
        >>> spill.add(table, 0)
        >>> [column.shape for column in spill.columns()]
        [(0, 1)]
        """
        files = [f for n, f in self.files.items() if n == "v:" or n.startswith("va:")]
        return [np.empty((0, *f.row_shape), f.dtype) for f in files]

    def chunk_counts(self) -> np.ndarray:
        """``(k,)`` vertices of every occupied chunk of the level.

        Examples
        --------
        >>> import tempfile
        >>> one = np.ones(1, int)
        >>> grid = ChunkGrid(np.array([4.0]), np.array([2.0]), np.array([2]), 0 * one, one)
        >>> bounds = (np.zeros(1), np.ones(1))
        >>> LevelSpill(Path(tempfile.mkdtemp()), grid, WriteOptions(), bounds, 1).chunk_counts()
        array([], dtype=int64)
        """
        return np.asarray([self.totals[f][0] for f in sorted(self.totals)], np.int64)

    def _gather(self, name: str, flat: int, family: int) -> np.ndarray:
        """A column's rows of one chunk, batch after batch (a copy); ``family`` 0 vertices,
        1 fragments, 2 links, 3 cross-chunk links (by the chunk of their first vertex)."""
        parts = [self.files[name].read(0, 0)] if name in self.files else []
        for batch, rank in self.holders[flat]:
            piece = self.pieces[batch]
            start, stop = piece.offsets(family)[rank : rank + 2].tolist()
            if stop > start:  # a batch without such rows may have no file of them
                parts.append(piece.files[name].read(start, stop))
        return np.concatenate(parts)

    def _fragment_blob(self, flat: int) -> np.ndarray:
        starts, counts = self._gather("frow", flat, 1), self._gather("flen", flat, 1)
        form = self.options.counts_blobs()
        return encode_ranges_ragged(starts, counts, [0, starts.shape[0]], counts_form=form)[0]

    def _link_blob(self, flat: int) -> np.ndarray:
        counts = self._gather("lcount", flat, 1)
        starts, form = np.cumsum(counts) - counts, self.options.counts_blobs()
        return encode_ranges_ragged(starts, counts, [0, counts.shape[0]], counts_form=form)[0]

    def _links(self, flat: int, n_max: int) -> np.ndarray:
        rows = self._gather("links", flat, 2)
        if geometry_kind(self.kind).faces:
            outside = rows < 0
            chunk, row = np.divmod(-rows[outside] - 1, self.scale)
            rows[outside] = -(chunk * n_max + row + 1)
        return rows

    def write(
        self, io: StoreIO, number: int, objects: ObjectTable, options: WriteOptions
    ) -> LevelStats:
        """Write the level's nodes as :func:`~zarr_vectors.write._objects.write_object_level`
        writes them for the whole coarse table (level metadata and ``object_vertex_counts``
        are the caller's); ``objects`` gives level 0's per-object fields, ``options`` the
        level's settings (its ``shard_chunks``).

        Examples
        --------
        >>> import tempfile
        >>> from zarr.storage import MemoryStore
        >>> one = np.ones(1, int)
        >>> grid = ChunkGrid(np.array([4.0]), np.array([2.0]), np.array([2]), 0 * one, one)
        >>> table = ObjectTable("polyline", np.array([[0.5], [2.5]]), np.array([0, 2]), None,
        ...                     {}, {}, None, None, {})
        >>> options = WriteOptions().with_kind_defaults("polyline")
        >>> spill = LevelSpill(Path(tempfile.mkdtemp()), grid, options,
        ...                    (np.zeros(1), np.ones(1) * 3), 2)
        >>> spill.add(table, 0)
        >>> spill.write(StoreIO(MemoryStore()), 1, table, options).chunk_count
        1
        """
        flats = sorted(self.totals)
        shape = tuple(int(g) for g in self.grid.shape)
        chunks = np.stack(np.unravel_index(np.asarray(flats, np.int64), shape), axis=1)
        chunks = chunks.astype(np.int64).reshape(-1, self.grid.ndim)
        totals = np.asarray([self.totals[f] for f in flats], np.int64).reshape(-1, 3)
        r = options.block_rows
        n_max = round_up(int(totals[:, 0].max(initial=0)), r)
        stats = self._write_vertices(io, number, (flats, chunks), n_max, options)
        base = str(number)
        self._write_links(
            io, base, (flats, chunks), (n_max, int(totals[:, 2].max(initial=0))), options
        )
        self._write_fragment_columns(io, base, (flats, chunks), objects, options)
        self._write_globals(io, base, objects, n_max, options)
        for files in [self.files, *self.index_files, *(p.files for p in self.pieces)]:
            for file in files.values():
                file.close()
        return stats

    def _write_vertices(
        self,
        io: StoreIO,
        number: int,
        chunks: tuple[list[int], np.ndarray],
        n_max: int,
        options: WriteOptions,
    ) -> LevelStats:
        flats, grid_chunks = chunks
        names = [n for n in self.files if n == "v:" or n.startswith("va:")]
        sample = {n: self.files[n] for n in names}
        positions = np.empty((0, *sample["v:"].row_shape), sample["v:"].dtype)
        attributes = {
            n[3:]: np.empty((0, *f.row_shape), f.dtype) for n, f in sample.items() if n != "v:"
        }
        shapes = (column_shapes(positions), {k: column_shapes(v) for k, v in attributes.items()})
        longest = max((len(self._fragment_blob(f)) for f in flats), default=16)
        layout = blob_layout(longest, None, options.blob_blosc())
        writer = LevelWriter(io, number, self.grid, shapes, n_max, options, blobs=layout)
        for j in shard_major_order(grid_chunks, writer.shard_chunks).tolist():
            rows = [self._gather(n, flats[j], 0) for n in names]
            writer.add_chunk(grid_chunks[j], rows, self._fragment_blob(flats[j]))
        return writer.finish()

    def _write_links(
        self,
        io: StoreIO,
        base: str,
        chunks: tuple[list[int], np.ndarray],
        sizes: tuple[int, int],
        options: WriteOptions,
    ) -> None:
        flats, grid_chunks = chunks
        n_max, longest = sizes
        r, shards = options.block_rows, options.shard_shape(self.grid.ndim)
        kind = geometry_kind(self.kind)
        low, high, blob = 0, 0, 16
        for f in flats:
            rows = self._links(f, n_max)
            if rows.size:
                low, high = min(low, int(rows.min())), max(high, int(rows.max()))
            blob = max(blob, len(self._link_blob(f)))
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
            self.grid,
            grid_chunks,
            _Lazy(n, lambda j: self._links(flats[j], n_max).astype(dtype, copy=False)),
            layout,
            {"zv_array": "links", "link_width": kind.link_width, "level_delta": 0},
            shard_chunks=shards,
        )
        write_chunk_array(
            io,
            f"{base}/{LINK_FRAGMENTS}",
            self.grid,
            grid_chunks,
            _Lazy(n, lambda j: self._link_blob(flats[j])),
            blob_layout(blob, None, options.blob_blosc()),
            {"zv_array": LINK_FRAGMENTS, "encoding": "fragment_index_v1"},
            shard_chunks=shards,
        )
        names = [name[3:] for name in self.files if name.startswith("la:")]
        if not names:
            return
        io.set(f"{base}/{LINK_ATTRIBUTES}/zarr.json", group_metadata({}))
        if kind.cross_chunk_links:
            io.set(f"{base}/{CROSS_CHUNK_LINK_ATTRIBUTES}/zarr.json", group_metadata({}))
        for name in names:
            file = self.files[f"la:{name}"]
            blosc = options.blosc(LINK_ATTRIBUTES)
            column = RowLayout(file.dtype, file.row_shape, r, round_up(longest, r), blosc)
            write_chunk_array(
                io,
                f"{base}/{LINK_ATTRIBUTES}/{name}",
                self.grid,
                grid_chunks,
                _Lazy(n, self._column_of(f"la:{name}", flats, 2)),
                column,
                {"zv_array": "link_attribute", "name": name},
                shard_chunks=shards,
            )

    def _column_of(self, name: str, flats: list[int], family: int) -> Callable[[int], np.ndarray]:
        """The rows of column ``name`` of the ``j``-th chunk of ``flats``."""
        return lambda j: self._gather(name, flats[j], family)

    def _write_fragment_columns(
        self,
        io: StoreIO,
        base: str,
        chunks: tuple[list[int], np.ndarray],
        objects: ObjectTable,
        options: WriteOptions,
    ) -> None:
        flats, grid_chunks = chunks
        longest = max((self.totals[f][1] for f in flats), default=0)
        r, n = options.block_rows, len(flats)
        owners = self.files["fobj"]
        names = [OBJECT_ID_ATTRIBUTE, *options.fragment_attributes]
        io.set(f"{base}/{FRAGMENT_ATTRIBUTES}/zarr.json", group_metadata({}))
        for name in names:

            def rows(j: int, name: str = name) -> np.ndarray:
                own = self._gather("fobj", flats[j], 1)
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
                self.grid,
                grid_chunks,
                _Lazy(n, rows),
                layout,
                {"zv_array": "fragment_attribute", "name": name},
                shard_chunks=options.shard_shape(self.grid.ndim),
            )

    def _write_globals(
        self, io: StoreIO, base: str, objects: ObjectTable, n_max: int, options: WriteOptions
    ) -> None:
        """The object index, object columns, groups and cross-chunk links (with columns),
        each global array written chunk by chunk from the spill files."""
        n_objects = sum(int(counts.shape[0]) for counts in self.counts)
        index, ndim = self._index(), self.grid.ndim
        blosc = options.global_blosc(OBJECT_INDEX)
        write_encoded_object_index(io, base, index, n_objects, ndim, blosc=blosc)
        kind = geometry_kind(self.kind)
        cross: np.ndarray | _File = np.empty((0, 2), np.int64)
        if kind.cross_chunk_links:
            cross = self._sorted_cross(n_max)
        cross_blosc = options.global_blosc(CROSS_CHUNK_LINKS)
        write_object_columns(io, base, objects, cross, cross_blosc=cross_blosc)
        if not kind.cross_chunk_links or not objects.link_attributes:
            return
        for name, values in objects.link_attributes.items():
            column = self.files.get(f"xa:{name}")
            tag = {"zv_array": "cross_chunk_link_attribute", "name": name}
            write_global(
                io,
                f"{base}/{CROSS_CHUNK_LINK_ATTRIBUTES}/{name}",
                values[:0] if column is None else column,
                0,
                tag,
            )

    def _index(self) -> tuple[np.ndarray | _Chain, np.ndarray | _Chain]:
        """The encoded object index (data, offsets) of every object, from the spill files
        of each joined part in turn (each part's offsets moved by the data before it)."""
        held = [files for files in self.index_files if "oi:data" in files]
        if not held:
            return np.empty(0, np.uint8), np.empty(0, np.int64)
        before = np.cumsum([0, *(files["oi:data"].rows for files in held)]).tolist()
        data = _Chain([(files["oi:data"], 0) for files in held])
        offsets = _Chain([(files["oi:offsets"], b) for files, b in zip(held, before, strict=False)])
        return data, offsets

    def _sorted_cross(self, n_max: int) -> np.ndarray | _File:
        """The cross-chunk links as pairs of global vertex ids (``chunk * n_max + row``)
        sorted by first, then second id, and their link attributes in the same order, in
        new spill files (``"xs"``, ``"xa:<name>"``): chunk by chunk of the first vertex,
        ascending, so one chunk's links are held at a time."""
        if "cross" not in self.files:
            return np.empty((0, 2), np.int64)
        names = [name[3:] for name in self.files if name.startswith("ca:")]
        for flat in sorted(self.totals):
            codes = self._gather("cross", flat, 3)
            if not codes.shape[0]:
                continue
            pairs = np.stack(
                [codes[:, 0] * n_max + codes[:, 1], codes[:, 2] * n_max + codes[:, 3]], 1
            )
            order = np.lexsort((pairs[:, 1], pairs[:, 0]))
            self._append("xs", pairs[order])
            for name in names:
                self._append(f"xa:{name}", self._gather(f"ca:{name}", flat, 3)[order])
        return self.files["xs"]
