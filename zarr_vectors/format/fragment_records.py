"""The per-chunk fragment record of object kinds (ZVFR v1, format 1.6, spec §6.9).

At level 0 of an object kind, every fragment of a chunk is a range and the ranges tile the
chunk's vertex rows and its ``links/0`` rows in fragment order, and the rows are sorted by
object (spec §10.3). One record then holds all of a chunk's fragment metadata: the vertex
count and the link count of every fragment and the fragments' owner objects as runs
``(object, number of fragments)``::

    offset  size             field
    0       4                magic 0x5A564652 (on disk ``52 46 56 5A``)
    4       2                version 1
    6       2                flags: bits 0-1 wv, 2-3 wl, 4-5 wo, 6-7 wr (widths 2**w bytes)
    8       4                F, number of fragments (>= 1)
    12      4                P, number of object runs (1 <= P <= F)
    16      F * 2**wv        vertex counts (each >= 1)
            F * 2**wl        link counts
            P * 2**wo        run objects (strictly increasing)
            P * 2**wr        run lengths in fragments (each >= 1, summing to F)

A reader turns a record into exactly what the three arrays it replaces gave: the
``(starts, counts)`` of the vertex fragments and of the link fragments (prefix sums of the
counts) and the owner object of every fragment.
"""

from __future__ import annotations

import struct
from dataclasses import dataclass
from typing import Final

import numpy as np
import numpy.typing as npt

from zarr_vectors.errors import FragmentIndexError
from zarr_vectors.format.fragments import I64_MAX, U32_MAX, BytesLike, IntArray, byte_view

__all__ = [
    "FRAGMENT_RECORD_HEADER_NBYTES",
    "FRAGMENT_RECORD_MAGIC",
    "FRAGMENT_RECORD_VERSION",
    "FragmentRecord",
    "decode_fragment_record",
    "encode_fragment_record",
    "encode_records_ragged",
    "fragment_record_size",
]

FRAGMENT_RECORD_MAGIC: Final[int] = 0x5A564652
"""``magic`` of a fragment record (uint32 little-endian; on disk ``52 46 56 5A``)."""
FRAGMENT_RECORD_VERSION: Final[int] = 1
"""The only record version."""
FRAGMENT_RECORD_HEADER_NBYTES: Final[int] = 16
"""Bytes of the header: magic, version, flags, F, P."""
_HEADER = struct.Struct("<IHHII")
_KNOWN_FLAGS: Final[int] = 0x00FF
_SPEC = "spec §6.9"


@dataclass(frozen=True, eq=False)
class FragmentRecord:
    """A decoded fragment record: one chunk's fragments at level 0 of an object kind.

    Parameters
    ----------
    vertex_counts, link_counts : numpy.ndarray of int64, shape (F,)
        Vertex rows and ``links/0`` rows of every fragment, in fragment (row) order.
    run_objects, run_lengths : numpy.ndarray of int64, shape (P,)
        The owner objects of the fragments as runs: fragments ``sum(run_lengths[:p])`` to
        ``sum(run_lengths[:p + 1]) - 1`` belong to object ``run_objects[p]``.
    """

    vertex_counts: IntArray
    link_counts: IntArray
    run_objects: IntArray
    run_lengths: IntArray

    @property
    def n_fragments(self) -> int:
        """F, the number of fragments."""
        return int(self.vertex_counts.shape[0])

    def vertex_ranges(self) -> tuple[IntArray, IntArray]:
        """``(starts, counts)`` of the vertex fragments (they tile the chunk's rows)."""
        return _tiling(self.vertex_counts)

    def link_ranges(self) -> tuple[IntArray, IntArray]:
        """``(starts, counts)`` of the link fragments (they tile the chunk's ``links/0``)."""
        return _tiling(self.link_counts)

    def fragment_objects(self) -> IntArray:
        """``(F,)`` the owner object of every fragment."""
        return np.repeat(self.run_objects, self.run_lengths)


def _tiling(counts: IntArray) -> tuple[IntArray, IntArray]:
    starts = np.cumsum(counts) - counts
    return starts, counts


def _width_code(largest: int) -> int:
    """The smallest ``w`` whose ``2**w``-byte unsigned integer holds ``largest``."""
    for code in range(3):
        if largest < 1 << (8 << code):
            return code
    return 3


def _runs(objects: IntArray) -> tuple[IntArray, IntArray]:
    cut = np.flatnonzero(objects[1:] != objects[:-1]) + 1
    first = np.concatenate([[0], cut])
    lengths = np.diff(np.concatenate([first, [objects.shape[0]]]))
    return objects[first], lengths


def fragment_record_size(flags: int, n_fragments: int, n_runs: int) -> int:
    """``S`` of a record: the header, two count columns and two run columns."""
    wv, wl, wo, wr = (1 << ((flags >> shift) & 3) for shift in (0, 2, 4, 6))
    return FRAGMENT_RECORD_HEADER_NBYTES + n_fragments * (wv + wl) + n_runs * (wo + wr)


def encode_fragment_record(
    vertex_counts: npt.ArrayLike, link_counts: npt.ArrayLike, objects: npt.ArrayLike
) -> bytes:
    """The record of one chunk's fragments, each column at its narrowest width.

    Parameters
    ----------
    vertex_counts, link_counts, objects
        ``(F,)`` per fragment in row order: vertex rows (each ≥ 1), ``links/0`` rows
        (≥ 0) and owner object (non-decreasing, ≥ 0); F ≥ 1.

    Returns
    -------
    bytes
        The record (``S`` bytes, no padding).

    Raises
    ------
    FragmentIndexError
        Columns of different lengths, F = 0 or F beyond uint32, a vertex count below 1,
        a negative link count or object, objects that decrease.

    Examples
    --------
    >>> encode_fragment_record([3, 2], [2, 1], [7, 7]).hex(" ")
    '52 46 56 5a 01 00 00 00 02 00 00 00 01 00 00 00 03 02 02 01 07 02'
    """
    vc, lc, ob = (
        np.asarray(x, dtype=np.int64).reshape(-1) for x in (vertex_counts, link_counts, objects)
    )
    n = vc.shape[0]
    if not 0 < n <= U32_MAX or lc.shape[0] != n or ob.shape[0] != n:
        raise _fail(
            8,
            f"needs 1 to 2**32 - 1 fragments in three equal columns, "
            f"got {n}, {lc.shape[0]}, {ob.shape[0]}",
        )
    if vc.min() < 1 or lc.min() < 0 or ob.min() < 0 or (np.diff(ob) < 0).any():
        raise _fail(
            16, "vertex counts must be >= 1, link counts and objects >= 0, objects non-decreasing"
        )
    run_objects, run_lengths = _runs(ob)
    columns = (vc, lc, run_objects, run_lengths)
    codes = [_width_code(int(c.max())) for c in columns]
    flags = codes[0] | codes[1] << 2 | codes[2] << 4 | codes[3] << 6
    head = _HEADER.pack(
        FRAGMENT_RECORD_MAGIC, FRAGMENT_RECORD_VERSION, flags, n, run_objects.shape[0]
    )
    body = b"".join(c.astype(f"<u{1 << w}").tobytes() for c, w in zip(columns, codes, strict=True))
    return head + body


def encode_records_ragged(
    vertex_counts: IntArray, link_counts: IntArray, objects: IntArray, bounds: IntArray
) -> list[npt.NDArray[np.uint8]]:
    """The records of chunks ``j`` holding fragments ``bounds[j]:bounds[j+1]`` (each chunk
    at least one), built for all chunks at once: the bytes of :func:`encode_fragment_record`
    of each chunk.

    Raises
    ------
    FragmentIndexError
        As :func:`encode_fragment_record`, for any chunk.

    Examples
    --------
    >>> out = encode_records_ragged(
    ...     np.array([3, 2, 5]), np.array([2, 1, 4]), np.array([0, 1, 1]), np.array([0, 2, 3])
    ... )
    >>> [len(x) for x in out]
    [24, 20]
    >>> out[1].tobytes() == encode_fragment_record([5], [4], [1])
    True
    """
    vc, lc, ob = (
        np.asarray(x, dtype=np.int64).reshape(-1) for x in (vertex_counts, link_counts, objects)
    )
    edges = np.asarray(bounds, dtype=np.int64)
    sizes = np.diff(edges)
    if sizes.size and (sizes.min() < 1 or sizes.max() > U32_MAX):
        raise _fail(8, "every chunk needs 1 to 2**32 - 1 fragments")
    if not sizes.size:
        return []
    chunk = np.repeat(np.arange(sizes.shape[0]), sizes)
    first = np.zeros(vc.shape[0], bool)
    first[edges[:-1]] = True
    step = np.diff(ob, prepend=ob[:1])
    if vc.min() < 1 or lc.min() < 0 or ob.min() < 0 or (step[~first] < 0).any():
        raise _fail(
            16, "vertex counts must be >= 1, link counts and objects >= 0, objects non-decreasing"
        )
    starts = first | (step != 0)
    run_at = np.flatnonzero(starts)
    run_chunk = chunk[run_at]
    run_len = np.diff(np.append(run_at, vc.shape[0]))
    n_runs = np.bincount(run_chunk, minlength=sizes.shape[0])
    run_edges = np.concatenate([[0], np.cumsum(n_runs)])
    columns = (
        (vc, chunk, edges),
        (lc, chunk, edges),
        (ob[run_at], run_chunk, run_edges),
        (run_len, run_chunk, run_edges),
    )
    codes = [_width_codes(values, edge) for values, _, edge in columns]
    widths = [1 << c for c in codes]
    nbytes = FRAGMENT_RECORD_HEADER_NBYTES + sizes * (widths[0] + widths[1])
    nbytes += n_runs * (widths[2] + widths[3])
    ends = np.cumsum(nbytes)
    begins = ends - nbytes
    out = np.zeros(int(ends[-1]), np.uint8)
    flags = codes[0] | codes[1] << 2 | codes[2] << 4 | codes[3] << 6
    _put_headers(out, begins, flags, sizes, n_runs)
    at = begins + FRAGMENT_RECORD_HEADER_NBYTES
    for (values, owner, edge), width in zip(columns, widths, strict=True):
        _put_column(out, values, owner, edge, at, width)
        at = at + np.diff(edge) * width
    return [out[a:b] for a, b in zip(begins.tolist(), ends.tolist(), strict=True)]


def _width_codes(values: IntArray, edges: IntArray) -> IntArray:
    """Per chunk, the width code of its largest value (``values[edges[j]:edges[j+1]]``)."""
    largest = np.maximum.reduceat(values, edges[:-1])
    codes = np.zeros(largest.shape[0], np.int64)
    for code in (1, 2, 3):
        codes[largest >= 1 << (8 << (code - 1))] = code
    return codes


def _put_headers(
    out: npt.NDArray[np.uint8], begins: IntArray, flags: IntArray, sizes: IntArray, runs: IntArray
) -> None:
    head = np.zeros(
        begins.shape[0],
        dtype=[("m", "<u4"), ("v", "<u2"), ("f", "<u2"), ("n", "<u4"), ("p", "<u4")],
    )
    head["m"], head["v"], head["f"], head["n"], head["p"] = (
        FRAGMENT_RECORD_MAGIC,
        FRAGMENT_RECORD_VERSION,
        flags,
        sizes,
        runs,
    )
    out[begins[:, None] + np.arange(FRAGMENT_RECORD_HEADER_NBYTES)] = head.view(np.uint8).reshape(
        -1, 16
    )


def _put_column(
    out: npt.NDArray[np.uint8],
    values: IntArray,
    owner: IntArray,
    edges: IntArray,
    at: IntArray,
    width: IntArray,
) -> None:
    """Write each chunk's values at ``at[chunk]``, ``width[chunk]`` bytes each.

    Per width, the values of the chunks of that width are cast at once; their bytes, a
    chunk's contiguous both there and in ``out``, go to ``out`` by one 1-D scatter.
    """
    sizes = np.diff(edges)
    for w in np.unique(width).tolist():
        chunks = width == w
        stream = values[chunks[owner]].astype(f"<u{w}").view(np.uint8)
        nbytes = sizes[chunks] * w
        shift = at[chunks] - (np.cumsum(nbytes) - nbytes)
        out[np.arange(stream.shape[0]) + np.repeat(shift, nbytes)] = stream


def _column(mv: memoryview, offset: int, code: int, count: int) -> IntArray:
    raw = np.frombuffer(mv, dtype=f"<u{1 << code}", count=count, offset=offset)
    if code == 3 and count and raw.max() > I64_MAX:
        raise _fail(offset, "a value exceeds 2**63 - 1")
    return raw.astype(np.int64)


def _header(mv: memoryview) -> tuple[int, int, int]:
    if len(mv) < FRAGMENT_RECORD_HEADER_NBYTES:
        raise _fail(0, f"needs a 16-byte header, the buffer has {len(mv)} bytes")
    magic, version, flags, n_frag, n_runs = _HEADER.unpack_from(mv, 0)
    if magic != FRAGMENT_RECORD_MAGIC:
        raise _fail(0, f"bad magic 0x{magic:08X}")
    if version != FRAGMENT_RECORD_VERSION:
        raise _fail(4, f"unknown version {version}")
    if flags & ~_KNOWN_FLAGS:
        raise _fail(6, f"unknown flag bits 0x{flags & ~_KNOWN_FLAGS:04X}")
    if not 0 < n_runs <= n_frag:
        raise _fail(8, f"needs 1 <= P <= F, got F={n_frag}, P={n_runs}")
    return flags, n_frag, n_runs


def _check_sum(values: IntArray, offset: int, what: str) -> int:
    if float(values.sum(dtype=np.float64)) >= 2.0**62 and sum(values.tolist()) > I64_MAX:
        raise _fail(offset, f"the {what} sum beyond 2**63 - 1")
    return int(values.sum())


def decode_fragment_record(
    buf: BytesLike,
    *,
    n_rows: int | None = None,
    n_links: int | None = None,
    n_objects: int | None = None,
) -> FragmentRecord:
    """Strictly decode a fragment record (spec §6.9).

    Parameters
    ----------
    buf
        The record, possibly followed by zero padding (a chunk's row of the array).
    n_rows, n_links, n_objects
        When given, the chunk's vertex rows (``vertex_counts[g]``), its ``links/0`` rows
        and the level's object count: the vertex counts must sum to ``n_rows``, the link
        counts to ``n_links``, and every object must be below ``n_objects``.

    Returns
    -------
    FragmentRecord

    Raises
    ------
    FragmentIndexError
        Any rule of spec §6.9: short buffer, bad magic, version or flags, P outside
        ``[1, F]``, a truncated column, a vertex count or run length of 0, objects not
        strictly increasing, run lengths not summing to F, non-zero bytes after the record,
        sums or objects that disagree with the context.

    Examples
    --------
    >>> rec = decode_fragment_record(encode_fragment_record([3, 2], [2, 1], [7, 7]) + bytes(4))
    >>> rec.vertex_ranges()[0].tolist(), rec.fragment_objects().tolist()
    ([0, 3], [7, 7])
    """
    mv = byte_view(buf)
    flags, n_frag, n_runs = _header(mv)
    end = fragment_record_size(flags, n_frag, n_runs)
    if end > len(mv):
        raise _fail(16, f"truncated record: needs {end} bytes, the buffer has {len(mv)}")
    columns, offset = [], FRAGMENT_RECORD_HEADER_NBYTES
    for shift, count in ((0, n_frag), (2, n_frag), (4, n_runs), (6, n_runs)):
        code = (flags >> shift) & 3
        columns.append(_column(mv, offset, code, count))
        offset += count << code
    record = FragmentRecord(*columns)
    _check_columns(record, n_frag)
    if len(mv) > end and (tail := np.frombuffer(mv, np.uint8, offset=end)).any():
        raise _fail(end + int(np.argmax(tail != 0)), "non-zero byte after the record")
    _check_context(record, n_rows, n_links, n_objects)
    return record


def _check_columns(record: FragmentRecord, n_frag: int) -> None:
    if record.vertex_counts.min() < 1:
        raise _fail(16, "a fragment with no vertex row")
    if record.run_lengths.min() < 1 or _check_sum(record.run_lengths, 16, "run lengths") != n_frag:
        raise _fail(16, f"run lengths must be >= 1 and sum to F = {n_frag}")
    if (np.diff(record.run_objects) <= 0).any():
        raise _fail(16, "run objects are not strictly increasing")
    _check_sum(record.vertex_counts, 16, "vertex counts")
    _check_sum(record.link_counts, 16, "link counts")


def _check_context(
    record: FragmentRecord, n_rows: int | None, n_links: int | None, n_objects: int | None
) -> None:
    rows, links = int(record.vertex_counts.sum()), int(record.link_counts.sum())
    if n_rows is not None and rows != n_rows:
        raise _fail(16, f"the vertex counts sum to {rows}, not the chunk's {n_rows} rows")
    if n_links is not None and links != n_links:
        raise _fail(16, f"the link counts sum to {links}, not the chunk's {n_links} links")
    if n_objects is not None and int(record.run_objects[-1]) >= n_objects:
        raise _fail(16, f"object {int(record.run_objects[-1])} of a level with {n_objects} objects")


def _fail(offset: int, message: str) -> FragmentIndexError:
    return FragmentIndexError(f"ZVFR fragment record, byte offset {offset}: {message} ({_SPEC})")
