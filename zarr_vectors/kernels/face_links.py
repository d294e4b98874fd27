"""Triangle links anchored and ordered in two passes (spec §5.1, §9.6, §10.3).

A face goes to the chunk of its centroid when one of its vertices lies there, anchored at
the first such vertex, else at its vertex 0; its link row holds, per vertex, the
chunk-local row when the vertex shares the anchor's chunk, else ``-(global id + 1)``. The
rows are stored by (anchor fragment, input order). The first pass finds each face's anchor
column and counts the faces per fragment; the second writes every face's row straight to
its sorted place, so no per-face entries or anchors are kept and gathered again (on a
10^6-face mesh those temporaries and their page faults cost more than the geometry).

Private ``_name`` functions are numba kernels (:func:`zarr_vectors.kernels._jit.njit`);
the public function allocates their outputs and calls them.
"""

from __future__ import annotations

import numpy as np
import numpy.typing as npt

from zarr_vectors.errors import InvalidInputError
from zarr_vectors.kernels._jit import njit
from zarr_vectors.kernels.binning import _chunk_index, _index_too_large

__all__ = ["anchor_faces"]

I64 = npt.NDArray[np.int64]
U8 = npt.NDArray[np.uint8]

_INT32_MAX = 2**31 - 1
"""Rows and global ids below this give entries (``row`` or ``-(gid + 1)``) that fit int32."""


@njit
def _anchor_columns(
    positions: npt.NDArray[np.floating],
    faces: I64,
    vertex_chunk: I64,
    vertex_fragment: I64,
    run_offsets: I64,
    chunk_grid: I64,
    chunk_shape: npt.NDArray[np.float64],
    origin: I64,
    column: U8,
    offsets: I64,
) -> int:
    # Per face: the centroid's chunk (float64: (p0 + p1) + p2, then / 3), the first vertex
    # in it (else vertex 0), and one more face in its anchor's fragment (offsets[key + 1]).
    f, dim = faces.shape[0], positions.shape[1]
    inv = 1.0 / chunk_shape
    target = np.empty(dim, np.int64)
    for i in range(f):
        for d in range(dim):
            c = (
                np.float64(positions[faces[i, 0], d]) + np.float64(positions[faces[i, 1], d])
            ) + np.float64(positions[faces[i, 2], d])
            c = c / 3.0
            if _index_too_large(c, chunk_shape[d], inv[d]):
                return i
            target[d] = int(_chunk_index(c, chunk_shape[d], inv[d])) - origin[d]
        col = 0
        for j in range(3):
            rank = vertex_chunk[faces[i, j]]
            same = True
            for d in range(dim):
                if chunk_grid[rank, d] != target[d]:
                    same = False
                    break
            if same:
                col = j
                break
        column[i] = col
        anchor = faces[i, col]
        offsets[run_offsets[vertex_chunk[anchor]] + vertex_fragment[anchor] + 1] += 1
    return -1


@njit
def _place_faces(
    faces: I64,
    column: U8,
    vertex_chunk: I64,
    vertex_row: I64,
    vertex_fragment: I64,
    run_offsets: I64,
    gid: I64,
    offsets: I64,
    rows: npt.NDArray[np.integer],
    order: I64,
) -> None:
    # offsets: faces per fragment (shifted by one) -> fragment starts; then every face's
    # entries written at the next place of its anchor's fragment, faces in input order.
    for k in range(offsets.shape[0] - 1):
        offsets[k + 1] += offsets[k]
    cursor = offsets[:-1].copy()
    for i in range(faces.shape[0]):
        anchor = faces[i, column[i]]
        home = vertex_chunk[anchor]
        key = run_offsets[home] + vertex_fragment[anchor]
        at = cursor[key]
        cursor[key] = at + 1
        order[at] = i
        for j in range(3):
            v = faces[i, j]
            rows[at, j] = vertex_row[v] if vertex_chunk[v] == home else -(gid[v] + 1)


def anchor_faces(
    positions: npt.NDArray[np.floating],
    faces: I64,
    places: tuple[I64, I64, I64],
    run_offsets: I64,
    gid: I64,
    chunk_grid: I64,
    grid: tuple[npt.NDArray[np.float64], I64],
) -> tuple[I64, I64, I64]:
    """The link rows of triangles, anchored (spec §10.3) and ordered by anchor fragment.

    A face goes to the chunk of its centroid (spec §5.1, in float64) when one of its
    vertices lies there, anchored at the first such vertex, else to its vertex 0's chunk.
    An entry is the vertex's chunk-local row when it shares the anchor's chunk, else the
    sentinel ``-(global id + 1)`` (spec §9.6).

    Parameters
    ----------
    positions
        ``(n, D)`` float32 or float64 vertex coordinates.
    faces
        ``(f, 3)`` vertex indices of each triangle.
    places
        ``(vertex_chunk, vertex_row, vertex_fragment)``: chunk rank, chunk-local row and
        fragment number in its chunk of every vertex.
    run_offsets
        ``(k + 1,)`` first fragment (storage order) of every chunk rank.
    gid
        ``(n,)`` global id of every vertex (spec §9.11).
    chunk_grid
        ``(k, D)`` grid index of every chunk rank.
    grid
        ``(chunk_shape, origin)``: chunk size per axis and the grid's origin chunk.

    Returns
    -------
    rows, order, offsets
        ``(f, 3)`` entries of the faces by (anchor fragment, input order), int32 when every
        row and global id fits (the dtype ``links/0`` then stores: no copy), else int64;
        ``order`` the input face of each row; the faces of fragment ``r`` are rows
        ``offsets[r]:offsets[r + 1]``.

    Raises
    ------
    InvalidInputError
        When a centroid is too large for its chunk shape (``|c / C| >= 2**52``).

    Examples
    --------
    >>> import numpy as np
    >>> positions = np.array([[0.5, 0.5], [1.5, 0.5], [0.6, 0.6], [1.6, 0.6]])
    >>> faces = np.array([[1, 3, 0], [0, 1, 2]])
    >>> zero = np.zeros(4, np.int64)
    >>> chunk, row = np.array([0, 1, 0, 1]), np.array([0, 0, 1, 1])
    >>> rows, order, offsets = anchor_faces(positions, faces, (chunk, row, zero),
    ...     np.array([0, 1, 2]), np.array([0, 5, 1, 6]), np.array([[0, 0], [1, 0]]),
    ...     (np.ones(2), np.zeros(2, np.int64)))
    >>> rows.tolist(), order.tolist(), offsets.tolist()
    ([[0, -6, 1], [0, 1, -1]], [1, 0], [0, 1, 2])
    """
    pos = np.ascontiguousarray(positions)
    faces = np.ascontiguousarray(faces, dtype=np.int64)
    chunk, row, fragment = (np.ascontiguousarray(a, dtype=np.int64) for a in places)
    run_offsets = np.ascontiguousarray(run_offsets, dtype=np.int64)
    column = np.empty(faces.shape[0], np.uint8)
    offsets = np.zeros(int(run_offsets[-1]) + 1, np.int64)
    bad = _anchor_columns(
        pos,
        faces,
        chunk,
        fragment,
        run_offsets,
        np.ascontiguousarray(chunk_grid, dtype=np.int64).reshape(-1, pos.shape[1]),
        np.ascontiguousarray(grid[0], dtype=np.float64),
        np.ascontiguousarray(grid[1], dtype=np.int64),
        column,
        offsets,
    )
    if bad >= 0:
        raise InvalidInputError(f"the centroid of face {bad} is too large for its chunk shape")
    gid = np.ascontiguousarray(gid, dtype=np.int64)
    largest = max(int(gid.max(initial=0)), int(row.max(initial=0)))
    narrow = largest < _INT32_MAX and int(min(gid.min(initial=0), row.min(initial=0))) >= 0
    rows = np.empty((faces.shape[0], 3), np.int32 if narrow else np.int64)
    order = np.empty(faces.shape[0], np.int64)
    _place_faces(faces, column, chunk, row, fragment, run_offsets, gid, offsets, rows, order)
    return rows, order, offsets
