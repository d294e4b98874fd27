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
level's ``N_max`` is known. :func:`~zarr_vectors.write._spill_writes.write_spilled_level`
then writes every per-chunk array chunk by chunk in shard-major order, each chunk read back
from the files of the batches that hold it — the bytes the one-shot path writes for the
whole table. The encoded object index goes to spill files too, and the cross-chunk links
grouped by the chunk of their first vertex; their global arrays are written chunk by chunk
from the files (the links sorted one chunk at a time). Memory holds a batch, one chunk, one
shard being assembled, each object's vertex count and a few numbers per chunk and batch.
"""

from __future__ import annotations

from collections.abc import Sequence
from pathlib import Path
from typing import Any

import numpy as np

from zarr_vectors.errors import CorruptChunkError, InvalidInputError
from zarr_vectors.format.grid import ChunkGrid
from zarr_vectors.format.kinds import geometry_kind
from zarr_vectors.format.manifest import encode_object_index_bulk
from zarr_vectors.write._layouts import round_up
from zarr_vectors.write._object_runs import chunk_ids
from zarr_vectors.write._objects import ObjectTable, cut_level
from zarr_vectors.write._spill_files import SpillFile, SpillPiece
from zarr_vectors.write.options import WriteOptions

__all__ = ["LevelSpill"]


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
    >>> spill.chunk_counts().tolist()
    [4, 4]
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
        self.files: dict[str, SpillFile] = {}
        self.pieces: list[SpillPiece] = []
        self.holders: dict[int, list[tuple[int, int]]] = {}  # chunk -> (batch, rank)
        # chunk -> [rows, fragments, links]
        self.totals: dict[int, list[int]] = {f: list(v) for f, v in (before or {}).items()}
        self.counts: list[np.ndarray] = []
        # the files holding the encoded object index, in object order (several when joined)
        self.index_files: list[dict[str, SpillFile]] = [self.files]
        self.kind = ""
        self.n_vertices = 0

    def _file(self, name: str, values: np.ndarray) -> SpillFile:
        if name not in self.files:
            number = len(self.files)
            while (self.folder / f"{number}.bin").exists():  # a joined part's file
                number += 1
            path = self.folder / f"{number}.bin"
            self.files[name] = SpillFile(path, values.dtype, tuple(values.shape[1:]))
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
        self.pieces.append(SpillPiece(offsets[0], offsets[1], offsets[2], offsets[3], self.files))
        for rank, (flat, sizes) in enumerate(zip(flats.tolist(), per_chunk.tolist(), strict=True)):
            self.holders.setdefault(flat, []).append((batch, rank))
            total = self.totals.setdefault(flat, [0, 0, 0])
            for i in range(3):
                total[i] += int(sizes[i])

    # -- reading back ----------------------------------------------------------------------

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

    def gather(self, name: str, flat: int, family: int) -> np.ndarray:
        """A column's rows of one chunk, batch after batch (a copy); ``family`` 0 vertices,
        1 fragments, 2 links, 3 cross-chunk links (by the chunk of their first vertex)."""
        parts = [self.files[name].read(0, 0)] if name in self.files else []
        for batch, rank in self.holders[flat]:
            piece = self.pieces[batch]
            start, stop = piece.offsets(family)[rank : rank + 2].tolist()
            if stop > start:  # a batch without such rows may have no file of them
                parts.append(piece.files[name].read(start, stop))
        return np.concatenate(parts)

    def sorted_cross(self, n_max: int) -> np.ndarray | SpillFile:
        """The cross-chunk links as pairs of global vertex ids (``chunk * n_max + row``)
        sorted by first, then second id, and their link attributes in the same order, in
        new spill files (``"xs"``, ``"xa:<name>"``): chunk by chunk of the first vertex,
        ascending, so one chunk's links are held at a time."""
        if "cross" not in self.files:
            return np.empty((0, 2), np.int64)
        names = [name[3:] for name in self.files if name.startswith("ca:")]
        for flat in sorted(self.totals):
            codes = self.gather("cross", flat, 3)
            if not codes.shape[0]:
                continue
            pairs = np.stack(
                [codes[:, 0] * n_max + codes[:, 1], codes[:, 2] * n_max + codes[:, 3]], 1
            )
            order = np.lexsort((pairs[:, 1], pairs[:, 0]))
            self._append("xs", pairs[order])
            for name in names:
                self._append(f"xa:{name}", self.gather(f"ca:{name}", flat, 3)[order])
        return self.files["xs"]

    def close(self) -> None:
        """Close every spill file opened for reading (the level is written)."""
        for files in [self.files, *self.index_files, *(p.files for p in self.pieces)]:
            for file in files.values():
                file.close()
