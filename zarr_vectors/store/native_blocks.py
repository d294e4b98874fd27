"""Row blocks encoded and decoded by C functions called from numba, and the helper thread
that shares large batches (spec §9.0 row blocks; the kernels are in
:mod:`zarr_vectors.kernels.row_blocks`).

The C functions are those behind google-crc32c's extension and a C-Blosc library
(python-blosc's ``libblosc``, else numcodecs' bundled copy: :func:`blosc_libraries`). They
are looked up once and used only after a self test (:func:`native_block_functions`,
:func:`native_encode_functions`); without them, :class:`~zarr_vectors.store.shards.RowLayout`
encodes and decodes blocks one by one through the Python APIs.
"""

from __future__ import annotations

import ctypes
import functools
import importlib
import importlib.metadata
import itertools
import math
import os
import re
import threading
import time
from collections.abc import Callable, Sequence
from concurrent.futures import ThreadPoolExecutor, wait
from typing import TYPE_CHECKING

import google_crc32c
import numpy as np
from numcodecs import Blosc, blosc

from zarr_vectors.format.fragment_encoding import encode_dense_ranges
from zarr_vectors.format.place import place_record
from zarr_vectors.kernels.row_blocks import (
    BLOSC_MAX_OVERHEAD,
    decode_blocks,
    dense_blob_ranges,
    encode_blocks,
)
from zarr_vectors.store.crc32c_adapter import crc32c_function_address
from zarr_vectors.store.zstd_encoder import encode_zstd, zstd_encoder

if TYPE_CHECKING:
    from zarr_vectors.store.shards import RowLayout

__all__ = [
    "blosc_libraries",
    "decode_dense_blob_shards",
    "decode_natively",
    "encode_natively",
    "in_turns",
    "native_block_functions",
    "native_encode_functions",
]


_SHARED_LIBRARY = re.compile(r"^(lib)?blosc(\.\d+)*\.(so(\.\d+)*|dylib|dll)$")
"""File names of a C-Blosc shared library (``libblosc.so.1``, ``libblosc.1.dylib``,
``blosc.dll``); not python-blosc's extension module, which does not export C-Blosc."""


@functools.cache
def blosc_libraries() -> tuple[str, ...]:
    """Paths of the C-Blosc shared libraries to try, in order of preference.

    First the ``libblosc`` that python-blosc (the ``blosc`` distribution) installs, when
    present: it is built with the AVX2 shuffles, while numcodecs' bundled copy is built for
    SSE2 only, and bit shuffling dominates encoding and decoding (row blocks of float32
    points, measured: encoding 1.3x and decoding 1.25-1.5x as fast). Then
    numcodecs' extension module, which exports the same C-Blosc functions. Both are
    C-Blosc 1.21 with LZ4 1.10; the self tests decide which one is used.
    """
    paths: list[str] = []
    try:
        files = importlib.metadata.files("blosc") or []
    except importlib.metadata.PackageNotFoundError:
        files = []
    found = sorted(os.path.realpath(f.locate()) for f in files if _SHARED_LIBRARY.match(f.name))
    paths.extend(path for path in found[:1] if os.path.exists(path))
    paths.append(str(blosc.__file__))
    return tuple(paths)


def _blosc_function(path: str, name: str) -> int | None:
    """Address of C-Blosc function ``name`` in the shared library at ``path``, or None."""
    try:
        address = ctypes.cast(getattr(ctypes.CDLL(path), name), ctypes.c_void_p).value
    except (OSError, AttributeError, TypeError):
        return None
    return address or None


@functools.cache
def native_block_functions() -> tuple[int, int] | None:
    """Addresses of ``crc32c_value`` and ``blosc_decompress_ctx``, or None when unusable.

    They are the C functions behind google-crc32c's extension (libcrc32c) and the first
    C-Blosc of :func:`blosc_libraries` that passes a self test: decoding blocks made by
    numcodecs must give back their rows exactly, and a damaged block must be refused.
    Without one (or without the C extension of google-crc32c) None, and blocks are decoded
    one by one through the Python APIs.
    """
    crc = crc32c_function_address()
    if crc is None:
        return None
    for path in blosc_libraries():
        decompress = _blosc_function(path, "blosc_decompress_ctx")
        if decompress is not None and _native_self_test(crc, decompress):
            return crc, decompress
    return None


@functools.cache
def native_encode_functions() -> tuple[int, int] | None:
    """Addresses of ``crc32c_value`` and ``blosc_compress_ctx``, or None when unusable.

    ``blosc_compress_ctx`` comes from the first library of :func:`blosc_libraries` that
    passes a self test: the blocks it encodes must be byte for byte the blocks numcodecs
    and google-crc32c make (the stored bytes are pinned by golden fixtures). Otherwise
    None, and blocks are encoded one by one through the Python APIs.
    """
    found = native_block_functions()
    if found is None:
        return None
    for path in blosc_libraries():
        compress = _blosc_function(path, "blosc_compress_ctx")
        if compress is not None and _native_encode_self_test(found[0], compress):
            return found[0], compress
    return None


def encode_natively(
    rows: np.ndarray,
    r: int,
    counts: np.ndarray,
    fill_block: np.ndarray,
    blosc_settings: tuple[int, int, str, int] | None,
    native: tuple[int, int],
) -> tuple[np.ndarray, np.ndarray] | None:
    """Row blocks of ``R = r`` rows of several chunks, each with its CRC32C, back to back (a
    ``uint8`` array: a shard's bytes are then copied once, with the tail that follows them),
    and their lengths; None when C-Blosc fails on a block.

    The blocks are a view of a buffer of the calling thread, reused by its next call
    (:func:`_out_buffer`): copy them before encoding again on the same thread.

    ``rows`` are the chunks' rows back to back (C-contiguous, little-endian), ``counts``
    the rows of each chunk (``int64``): each chunk is cut into blocks of ``r`` rows, its
    last block completed with the rows of ``fill_block`` (``r`` rows of the fill value;
    may be empty when every count is a multiple of ``r``). ``blosc_settings`` are
    ``(clevel, shuffle code, compressor name, typesize)`` (typesize 0: the item size of
    ``rows``), None for raw blocks.

    Examples
    --------
    >>> import numpy as np
    >>> native = native_encode_functions()
    >>> rows, counts = np.arange(7, dtype="<f4"), np.array([5, 2], np.int64)
    >>> found = encode_natively(rows, 4, counts, np.zeros(4, "<f4"), None, native)
    >>> found is None or found[1].tolist() == [20, 20, 20]
    True
    """
    row_nbytes = rows.dtype.itemsize * math.prod(rows.shape[1:])
    block_nbytes = r * row_nbytes
    flat = rows.reshape(-1).view(np.uint8)
    k = int((-(-counts // r)).sum())
    out = _out_buffer(k * (block_nbytes + BLOSC_MAX_OVERHEAD + 4))
    lengths = np.empty(k, dtype=np.int64)
    sizes = counts * row_nbytes
    pad = fill_block.reshape(-1).view(np.uint8)
    settings = None
    if blosc_settings is not None:
        clevel, shuffle, cname, typesize = blosc_settings
        name = np.frombuffer(cname.encode("ascii") + b"\0", dtype=np.uint8)
        settings = (clevel, shuffle, typesize or rows.dtype.itemsize, name)
    blocks = (flat, sizes, pad, block_nbytes, out, lengths)
    total = _encode_zstd(*blocks, settings, native)
    if total is None:
        total = encode_blocks(*blocks, settings, *native)
    if total < 0:
        return None
    return out[:total], lengths


_KEPT_OUT_NBYTES = 8 << 20
"""Largest output buffer a thread keeps between calls of :func:`encode_natively`."""
_scratch = threading.local()


def _out_buffer(nbytes: int) -> np.ndarray:
    """``nbytes`` bytes to encode into: the calling thread's buffer, kept between calls up
    to :data:`_KEPT_OUT_NBYTES`. A fresh buffer of a shard's worst case cost a page fault
    for every page the blocks were written to (measured: a skeleton write's encoding
    threads 607 -> 92 faults); the price is memory kept per thread that encodes, about
    4 MB at most in ``benchmarks.object_writes``."""
    kept = getattr(_scratch, "out", None)
    if kept is not None and kept.shape[0] >= nbytes:
        return kept[:nbytes]  # type: ignore[no-any-return]
    out = np.empty(nbytes, dtype=np.uint8)
    if nbytes <= _KEPT_OUT_NBYTES:
        _scratch.out = out
    return out


def _encode_zstd(
    rows: np.ndarray,
    sizes: np.ndarray,
    pad: np.ndarray,
    block_nbytes: int,
    out: np.ndarray,
    lengths: np.ndarray,
    settings: tuple[int, int, int, np.ndarray] | None,
    native: tuple[int, int],
) -> int | None:
    """Blocks of Blosc zstd ``settings`` encoded through a Zstandard context of this
    thread (:mod:`~zarr_vectors.store.zstd_encoder`: C-Blosc's bytes); None for other
    settings, without the functions, or when it declines."""
    if settings is None or settings[3].tobytes() != b"zstd\0":
        return None
    encoder = zstd_encoder(*native, blosc_libraries())
    if encoder is None:
        return None
    blocks = (rows, sizes, pad, block_nbytes, out, lengths)
    return encode_zstd(encoder, *blocks, settings[:3])


def _native_encode_self_test(crc: int, compress: int) -> bool:
    """Whether the native functions encode row blocks exactly as numcodecs does (two whole
    blocks and a last one padded with a fill value, compressed and raw)."""
    rows = np.arange(3000, dtype="<f4").reshape(1000, 3) * np.float32(0.37)
    padded = np.concatenate([rows, np.full((200, 3), 7.0, dtype="<f4")])
    counts, fill = np.array([1000], np.int64), np.full((400, 3), 7.0, dtype="<f4")
    for settings in ((5, Blosc.BITSHUFFLE, "lz4", 0), None):
        found = encode_natively(rows, 400, counts, fill, settings, (crc, compress))
        if found is None:
            return False
        if settings is None:
            blocks = [padded[a : a + 400].tobytes() for a in (0, 400, 800)]
            expected = [b + google_crc32c.value(b).to_bytes(4, "little") for b in blocks]
        else:
            expected = _numcodecs_blocks(padded, 400)
        lengths = [len(b) for b in expected]
        if found[0].tobytes() != b"".join(expected) or found[1].tolist() != lengths:
            return False
    return True


_SPLIT_BLOCKS = 32
"""Batches of at least this many blocks are shared with a helper thread (see
:func:`_decode_helper`); smaller ones are faster on the calling thread alone (measured)."""
_SPLIT_BYTES = 1 << 20
"""A batch of :func:`decode_natively` is shared only when it also decodes at least this many
bytes: on less, waking the helper costs more than it saves. Measured on the 2-core test
machine (load ~1, in-process, alternating): a cold 1% skeleton box, whose batches of 38-67
blocks of 2-12 KiB were shared, 10.35 -> 9.76 and 12.95 -> 12.01 ms wall; a batch of 64
links blocks of 8 KiB alone 537 us, shared 619 us (median); reads of 100 streamlines by id
(213 blocks of 12 KiB, still shared) and mesh and streamline boxes on par."""
_SPLIT_PARTS = 8
_SPLIT_PART = 6
"""A shared batch is cut into about :data:`_SPLIT_PARTS` parts of at least this many blocks."""

_CPUS = os.cpu_count() or 1
_helper: tuple[int, ThreadPoolExecutor] | None = None


def _decode_helper(blocks: int) -> ThreadPoolExecutor | None:
    """The one helper thread that shares the decoding of ``blocks`` row blocks, or None.

    None below :data:`_SPLIT_BLOCKS` blocks, on one CPU, on any thread but the main one
    (worker threads, e.g. dask's, already decode in parallel), and when no CPU is idle
    (:func:`_idle_cpu`; the helper would wait for its turn: measured slower than decoding
    alone). The thread is created on first use, and again after a fork.
    """
    global _helper
    if blocks < _SPLIT_BLOCKS or _CPUS < 2:
        return None
    if threading.current_thread() is not threading.main_thread():
        return None
    if not _idle_cpu():
        return None
    if _helper is None or _helper[0] != os.getpid():
        _helper = (os.getpid(), ThreadPoolExecutor(1, thread_name_prefix="zarr_vectors-decode"))
    return _helper[1]


_IDLE_FOR = 0.02
"""Seconds for which :func:`_idle_cpu` repeats its last answer: a query asks before each
of its batches (six to eight), and reading ``/proc/loadavg`` each time was ~1% of a
cold skeleton box (py-spy)."""
_idle_seen: tuple[float, bool] = (-1.0, False)


def _idle_cpu() -> bool:
    """Whether a CPU other than the calling thread's is idle now (looked at once per
    :data:`_IDLE_FOR` seconds at most).

    Linux says how many threads are runnable at this moment (the fourth field of
    ``/proc/loadavg``, the caller included); elsewhere the one-minute load average stands
    in. The average lags by minutes: after a long write it would keep the helper off on
    an idle machine, so the moment's count is preferred where there is one.
    """
    global _idle_seen
    now = time.monotonic()
    if now - _idle_seen[0] < _IDLE_FOR:
        return _idle_seen[1]
    idle = _looked_idle()
    _idle_seen = (now, idle)
    return idle


def _looked_idle() -> bool:
    """:func:`_idle_cpu`, looked at now."""
    runnable = _runnable_threads()
    if runnable is not None:
        return runnable < _CPUS
    try:
        return os.getloadavg()[0] <= _CPUS - 0.5
    except (AttributeError, OSError):
        return True


def _runnable_threads(path: str = "/proc/loadavg") -> int | None:
    """Threads runnable now, system-wide, from ``path`` (``/proc/loadavg``); None if unknown.

    Read by ``os`` calls (three system calls, not a file object's six: ~40 us less of a
    cold query's CPU on this machine, measured in place)."""
    try:
        fd = os.open(path, os.O_RDONLY | getattr(os, "O_CLOEXEC", 0))
        try:
            fields = os.read(fd, 256).split()
        finally:
            os.close(fd)
        return int(fields[3].split(b"/")[0])
    except (OSError, IndexError, ValueError):
        return None


def decode_natively(
    buffer: np.ndarray,
    starts: np.ndarray,
    lengths: np.ndarray,
    slots: np.ndarray,
    flat: np.ndarray,
    size: int,
    compressed: bool,
    native: tuple[int, int],
    zstd: Callable[[], tuple[int, ...]] = lambda: (0, 0),
) -> int:
    """:func:`~zarr_vectors.kernels.row_blocks.decode_blocks` of every block; -1 or the
    first failing block (every block before it is decoded). ``zstd()`` gives the calling
    thread's Zstandard function and context, and the unshuffle functions
    (:func:`~zarr_vectors.store.zstd_contexts.zstd_context`; by default none).

    A large batch (:data:`_SPLIT_BLOCKS` blocks and :data:`_SPLIT_BYTES` bytes decoded, at
    least) is cut into parts that this thread and the helper thread take in turn (the
    kernel releases the GIL). This thread waits only for the parts the helper took:
    when the helper is slow to start on a busy machine, this thread decodes them all.
    """
    k = int(starts.shape[0])
    helper = _decode_helper(k) if k * size >= _SPLIT_BYTES else None
    if helper is None:
        return decode_blocks(
            buffer, starts, lengths, flat, slots, size, compressed, *native, *zstd()
        )
    step = max(_SPLIT_PART, -(-k // _SPLIT_PARTS))
    parts = [(a, min(a + step, k)) for a in range(0, k, step)]
    finished = [threading.Event() for _ in parts]
    failed: list[int] = []
    turns = itertools.count()  # next() is atomic: each part is taken once

    def take_parts() -> None:
        while (turn := next(turns)) < len(parts):
            a, z = parts[turn]
            outcome = a  # should the kernel raise, the part is left to the one-by-one decoding
            try:
                part = (starts[a:z], lengths[a:z], flat, slots[a:z], size, compressed)
                f = decode_blocks(buffer, *part, *native, *zstd())
                outcome = a + f if f >= 0 else -1
            finally:
                if outcome >= 0:
                    failed.append(outcome)
                finished[turn].set()

    helper.submit(take_parts)
    take_parts()
    for event in finished:
        event.wait()
    return min(failed) if failed else -1


def in_turns(count: int, work: Callable[[int], None], blocks: int) -> None:
    """``work(t)`` for every turn ``t`` in ``range(count)``, shared with the helper thread
    when ``blocks`` row blocks are worth it (:func:`_decode_helper`).

    ``work`` must release the GIL for most of its time (a native decode) and may run on
    either thread. This thread and the helper take the next turn in turn; when the helper
    is slow to start, this thread takes them all and the helper is called off. Returns
    once every turn taken has ended. An exception of this thread's turn propagates (the
    helper takes no new turn then); otherwise the helper's is raised here.
    """
    helper = _decode_helper(blocks) if count > 1 else None
    if helper is None:
        for turn in range(count):
            work(turn)
        return
    turns = itertools.count()  # next() is atomic: each turn is taken once
    stop = threading.Event()

    def take_turns() -> None:
        while not stop.is_set() and (turn := next(turns)) < count:
            work(turn)

    future = helper.submit(take_turns)
    try:
        take_turns()
    finally:
        stop.set()
        started = not future.cancel()
        if started:
            wait([future])
    if started:
        future.result()


def _native_self_test(crc: int, decompress: int) -> bool:
    """Whether the native functions decode numcodecs' blocks exactly and refuse damage."""
    rows = np.arange(3000, dtype="<f4").reshape(1000, 3) * np.float32(0.37)
    encoded = _numcodecs_blocks(rows, 500)
    stored = np.frombuffer(b"".join(encoded), dtype=np.uint8).copy()
    lengths = np.array([len(b) for b in encoded], dtype=np.int64)
    starts = np.concatenate([[0], np.cumsum(lengths)[:-1]]).astype(np.int64)
    out = np.zeros_like(rows)
    flat = out.reshape(-1).view(np.uint8)
    slots = np.array([1, 0], dtype=np.int64)
    size = 500 * rows.itemsize * 3
    if decode_blocks(stored, starts, lengths, flat, slots, size, True, crc, decompress) != -1:
        return False
    if not np.array_equal(out, np.concatenate([rows[500:], rows[:500]])):
        return False
    stored[starts[1] + 40] ^= 1
    return decode_blocks(stored, starts, lengths, flat, slots, size, True, crc, decompress) == 1


def _numcodecs_blocks(rows: np.ndarray, per_block: int) -> list[bytes]:
    """Row blocks of ``rows`` as numcodecs and google-crc32c make them (spec §9.0 default
    chain: Blosc LZ4 level 5 with bit shuffle, then the CRC32C of the frame)."""
    codec = Blosc(cname="lz4", clevel=5, shuffle=Blosc.BITSHUFFLE, blocksize=0)
    blocks = []
    for a in range(0, rows.shape[0], per_block):
        body = bytes(codec.encode(np.ascontiguousarray(rows[a : a + per_block])))
        blocks.append(body + google_crc32c.value(body).to_bytes(4, "little"))
    return blocks


def decode_dense_blob_shards(
    layout: RowLayout, shards: Sequence[bytes | None], keys: Sequence[str], n_fragments: int
) -> list[tuple[np.ndarray, np.ndarray] | None]:
    """Per-fragment ``(starts, counts)`` of whole fragment-blob shards, by one kernel call.

    For blobs of ``n_fragments`` all-range fragments (a point cloud chunk's bins, spec
    §6.6) in shards of one chunk and raw row blocks, with the native CRC32C. None for each
    shard it leaves out (missing, or failing any check, its place record included: each
    must name its key in ``keys``): decode those one by one, which handles and reports
    everything.
    """
    out: list[tuple[np.ndarray, np.ndarray] | None] = [None] * len(shards)
    native = native_block_functions()
    shape = _dense_shape(n_fragments)
    if native is None or shape is None or layout.blosc is not None:
        return out
    # a shard shorter than its index (an edited N_max) is left to the one-by-one decoding,
    # which refuses it, before the kernel sizes anything by N_max
    present = [
        i for i, raw in enumerate(shards) if raw is not None and len(raw) >= layout.index_nbytes
    ]
    if layout.chunks_per_shard != 1 or not present:
        return out
    raws = [shards[i] or b"" for i in present]
    # whole shards: the kernel finds the index at a shard's end (after the place record of
    # a placed layout, which it does not read; it is checked here, below)
    lengths = np.array([len(raw) for raw in raws], dtype=np.int64)
    starts = np.concatenate([[0], np.cumsum(lengths)[:-1]]).astype(np.int64)
    buffer = np.frombuffer(b"".join(raws), dtype=np.uint8)
    r, n_blocks = layout.rows_per_block, layout.n_blocks
    found = dense_blob_ranges(buffer, starts, lengths, n_blocks, r, *shape, n_fragments, native[0])
    for j, i in enumerate(present):
        if found[2][j] and (not layout.placed or _placed_at(raws[j], layout, keys[i])):
            out[i] = (found[0][j], found[1][j])
    return out


def _placed_at(shard: bytes, layout: RowLayout, key: str) -> bool:
    """Whether the place record of ``shard`` (before its index) names ``key``: compared in
    place with the key's (cached) record, as :meth:`RowLayout.decode_index` does; a shard
    that fails goes the one-by-one way, which works out and reports what is wrong."""
    at = len(shard) - layout.tail_nbytes
    return at >= 0 and shard.startswith(place_record(key, layout.type_name), at)


@functools.cache
def _dense_shape(n_fragments: int) -> tuple[np.ndarray, np.ndarray] | None:
    """The bytes before and after the table of an all-range blob of ``n_fragments``
    fragments (spec §6), taken from the encoder; None if a probe does not decode."""
    if n_fragments < 1:
        return None
    zeros = np.zeros(n_fragments, dtype=np.int64)
    template = encode_dense_ranges(zeros, zeros)
    table = 16 * n_fragments
    plen = len(template) - table - 4
    probe_starts = np.arange(n_fragments, dtype=np.int64) * 7
    probe_counts = np.arange(n_fragments, dtype=np.int64) % 5 + 1
    probe = encode_dense_ranges(probe_starts, probe_counts)
    if plen < 0 or len(probe) != len(template):
        return None
    pairs = np.frombuffer(probe, dtype="<i8", count=2 * n_fragments, offset=plen)
    if probe[:plen] != template[:plen] or probe[-4:] != template[-4:]:
        return None
    if not (
        np.array_equal(pairs[0::2], probe_starts) and np.array_equal(pairs[1::2], probe_counts)
    ):
        return None
    prefix = np.frombuffer(template[:plen], dtype=np.uint8)
    return prefix, np.frombuffer(template[plen + table :], dtype=np.uint8)
