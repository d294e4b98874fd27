"""Reading and checking the shards of per-chunk arrays (spec §9.0; L3.shard_* checks).

A shard is read once, whole. Its index is decoded and verified (length, CRC32C, entries
inside the shard), the row blocks the chunk needs must be present, and every present block
must decode. Row blocks are decoded with :class:`~zarr_vectors.store.shards.RowLayout`;
arrays whose inner codecs it does not handle are decoded through zarr-python.
"""

from __future__ import annotations

from collections.abc import Container
from dataclasses import dataclass
from typing import Any

import numpy as np

from zarr_vectors.errors import CorruptChunkError, MetadataError, MisplacedChunkError
from zarr_vectors.format import layout
from zarr_vectors.format.version import PLACED_VERSION, parse_version
from zarr_vectors.store.arrays import read_region
from zarr_vectors.store.shards import RowLayout, shard_key
from zarr_vectors.validate.arrays import BLOB_ROLES, ArrayDoc
from zarr_vectors.validate.context import STORE_ERRORS, Context

__all__ = [
    "ArraySpec",
    "array_spec",
    "empty_entries_clean",
    "placed_store",
    "read_blob_payload",
    "read_rows",
    "stray_place",
]

_MISSING = np.uint64(2**64 - 1)
PLACED = parse_version(PLACED_VERSION)
_SHUFFLES = ("noshuffle", "shuffle", "bitshuffle")


@dataclass(slots=True)
class ArraySpec:
    """How to read the shards of one per-chunk array.

    Attributes
    ----------
    path
        Array path.
    role
        Array role (see :mod:`~zarr_vectors.validate.array_meta`).
    dtype, row_shape
        Element dtype and shape of one row.
    n_rows
        ``N_A``, rows (bytes, for blobs) of a shard.
    index_layout
        Layout used to decode the shard index (its codec is irrelevant).
    decoder
        Layout used to decode row blocks, or None to decode through zarr-python.
    store
        The zarr store (for the zarr-python fallback decoder).
    """

    path: str
    role: str
    dtype: np.dtype[Any]
    row_shape: tuple[int, ...]
    n_rows: int
    index_layout: RowLayout
    decoder: RowLayout | None
    store: Any

    @property
    def sharded(self) -> bool:
        """Whether a shard holds several spatial chunks (spec §9.0.1)."""
        return self.index_layout.chunks_per_shard > 1

    def shard_of(self, g: tuple[int, ...]) -> tuple[int, ...]:
        """Index of the shard holding spatial chunk ``g``."""
        return tuple(int(s) for s in self.index_layout.shard_of(g))

    @property
    def rows_per_block(self) -> int:
        """``R`` (``b`` for blob arrays)."""
        return self.index_layout.rows_per_block

    @property
    def is_blob(self) -> bool:
        """Whether the array holds fragment-index blobs."""
        return self.role in BLOB_ROLES

    def key(self, g: tuple[int, ...]) -> str:
        """Store key of the shard holding spatial chunk ``g`` (grid index)."""
        return shard_key(self.path, np.asarray(self.shard_of(g)), len(self.row_shape))

    def entries(self, index: np.ndarray, g: tuple[int, ...]) -> np.ndarray:
        """The index entries of chunk ``g`` in the whole index of its shard."""
        return self.index_layout.chunk_entries(index, g)


def array_spec(ctx: Context, array: ArrayDoc, ndim: int) -> ArraySpec | None:
    """The :class:`ArraySpec` of a per-chunk array whose metadata passed L2, else None."""
    inner = layout.inner_chunk_shape(array.doc)
    if array.shape is None or array.dtype is None or inner is None or len(inner) <= ndim:
        return None
    row_shape = tuple(array.shape[ndim + 1 :])
    rows, n_rows = inner[ndim], array.shape[ndim]
    per_shard = layout.shard_chunks(array.doc, ndim) or ()
    shards = per_shard if any(s != 1 for s in per_shard) else ()
    placed = placed_store(ctx)
    index_layout = RowLayout(array.dtype, row_shape, rows, n_rows, None, 0, shards, placed)
    return ArraySpec(
        array.path,
        array.role,
        array.dtype,
        row_shape,
        n_rows,
        index_layout,
        _decoder(array, ndim, placed),
        ctx.io.store,
    )


def placed_store(ctx: Context) -> bool:
    """Whether the store's version puts place records in its shards (spec §9.0.2)."""
    version = ctx.facts.version
    return version is not None and version >= PLACED


def _decoder(array: ArrayDoc, ndim: int, placed: bool) -> RowLayout | None:
    try:
        decoder = RowLayout.from_array_metadata(array.doc, ndim, array.path, placed=placed)
    except (MetadataError, KeyError, TypeError, ValueError, AttributeError):
        return None
    if (
        decoder is not None
        and decoder.blosc is not None
        and decoder.blosc.get("shuffle") not in _SHUFFLES
    ):
        return None
    return decoder


def _index(ctx: Context, spec: ArraySpec, key: str, shard: bytes) -> np.ndarray | None:
    """Decode and check the shard index (L3.shard_index) and place record (L3.chunk_place);
    None when it is unusable."""
    try:
        index = spec.index_layout.decode_index(shard, key)
    except MisplacedChunkError as exc:
        ctx.fail("L3.chunk_place", key, str(exc))
        return None
    except CorruptChunkError as exc:
        ctx.fail("L3.shard_index", key, str(exc))
        return None
    end = np.uint64(len(shard) - spec.index_layout.tail_nbytes)
    offsets, sizes = index[:, 0], index[:, 1]
    missing = offsets == _MISSING
    if (missing != (sizes == _MISSING)).any():
        b = int(np.argmax(missing != (sizes == _MISSING)))
        ctx.fail("L3.shard_index", key, f"index entry {b} is only half marked missing")
        return None
    outside = ~missing & ((offsets > end) | (sizes > end - np.minimum(offsets, end)))
    if outside.any():
        b = int(np.argmax(outside))
        ctx.fail(
            "L3.shard_index",
            key,
            f"row block {b} (offset {int(offsets[b])}, {int(sizes[b])} bytes) lies outside the "
            f"{int(end)} data bytes of the shard",
        )
        return None
    return index


def stray_place(ctx: Context, spec: ArraySpec, keys: list[str]) -> None:
    """L3.chunk_place for stored shards no occupied chunk uses (``keys``, already reported
    by L3.empty_chunk_clean): one whose place record names another key was copied or moved
    there from another chunk or array. Readers never read such a file."""
    if not keys or not spec.index_layout.placed:
        return
    for key, shard in zip(keys, ctx.fetch([(key, None) for key in keys]), strict=True):
        if shard is None:
            continue
        try:
            spec.index_layout.decode_index(shard, key)
        except MisplacedChunkError as exc:
            ctx.fail("L3.chunk_place", key, f"{exc} (no occupied chunk uses this key)")
        except CorruptChunkError:
            continue  # a damaged stray file: L3.empty_chunk_clean says to delete it


def empty_entries_clean(
    ctx: Context, spec: ArraySpec, shard: bytes, g: tuple[int, ...], occupied: Container[Any]
) -> None:
    """L3.empty_chunk_clean inside the shard of chunk ``g``: empty chunks store no block.

    Every other spatial chunk of the shard (grid edge included) that is not in
    ``occupied`` (chunks with rows, or whose count is unusable) must have all its index
    entries missing (spec §9.0.1).
    """
    key = spec.key(g)
    layout_ = spec.index_layout
    try:
        index = layout_.decode_index(shard, key)
    except CorruptChunkError:
        return  # reported by L3.shard_index
    stored = index[:, 0] != _MISSING
    per_chunk = stored[: layout_.chunks_per_shard * layout_.n_blocks]
    for local in np.flatnonzero(per_chunk.reshape(-1, layout_.n_blocks).any(axis=1)).tolist():
        other = _chunk_at(spec, g, local)
        if other not in occupied:
            ctx.fail(
                "L3.empty_chunk_clean",
                key,
                f"chunk {other} is empty (or outside the grid) but has row blocks in the shard",
            )


def _chunk_at(spec: ArraySpec, g: tuple[int, ...], local: int) -> tuple[int, ...]:
    """The spatial chunk at position ``local`` of the shard holding ``g``."""
    per = spec.index_layout.shard_chunks
    within = np.unravel_index(local, per)
    return tuple(int(s) * p + int(w) for s, p, w in zip(spec.shard_of(g), per, within, strict=True))


def _blocks_present(ctx: Context, key: str, present: np.ndarray, needed: int) -> bool:
    """L3.shard_rows_present and L3.shard_rows_beyond for ``needed`` leading blocks."""
    absent = np.flatnonzero(~present[:needed])
    if needed > present.shape[0] or absent.size:
        first = int(absent[0]) if absent.size else present.shape[0]
        ctx.fail(
            "L3.shard_rows_present",
            key,
            f"row block {first} is missing; blocks 0..{needed - 1} must be stored",
        )
        return False
    extra = np.flatnonzero(present[needed:])
    if extra.size:
        ctx.fail(
            "L3.shard_rows_beyond",
            key,
            f"row block {needed + int(extra[0])} is stored beyond the {needed} blocks in use",
        )
    return True


def _decode_blocks(
    spec: ArraySpec, shard: bytes, index: np.ndarray, blocks: np.ndarray, out: np.ndarray, key: str
) -> None:
    """Decode row blocks ``blocks`` of ``shard`` into ``out`` (rows ``b·R …`` of the shard)."""
    decoder = spec.decoder
    assert decoder is not None
    r = spec.rows_per_block
    stop = out.shape[0]
    contiguous = blocks.size and int(index[blocks[0], 0]) == 0 and blocks[0] == 0
    if contiguous and np.array_equal(blocks, np.arange(blocks.size)):
        end = min(stop, blocks.size * r)
        decoder.decode_rows_into(shard, index, 0, (0, end), out[:end], key)
        return
    for b in blocks.tolist():
        lo, hi = b * r, min((b + 1) * r, stop)
        start = int(index[b, 0])
        payload = shard[start : start + int(index[b, 1])]
        decoder.decode_rows_into(payload, index, start, (lo, hi), out[lo:hi], key)


def _decode_extra(
    spec: ArraySpec, shard: bytes, index: np.ndarray, blocks: np.ndarray, key: str
) -> None:
    """Decode present blocks that hold no rows in use, only to check that they decode."""
    r = spec.rows_per_block
    scratch = np.empty((r, *spec.row_shape), dtype=spec.dtype)
    for b in blocks.tolist():
        start = int(index[b, 0])
        payload = shard[start : start + int(index[b, 1])]
        assert spec.decoder is not None
        spec.decoder.decode_rows_into(payload, index, start, (b * r, (b + 1) * r), scratch, key)


def read_rows(
    ctx: Context, spec: ArraySpec, g: tuple[int, ...], shard: bytes, n_rows: int
) -> np.ndarray | None:
    """Check the shard of chunk ``g`` and return its rows ``[0, n_rows)`` (None if unusable)."""
    key = spec.key(g)
    index = _index(ctx, spec, key, shard)
    if index is None:
        return None
    index = spec.entries(index, g)
    present = index[:, 0] != _MISSING
    needed = -(-n_rows // spec.rows_per_block)
    if not _blocks_present(ctx, key, present, needed):
        return None
    if spec.decoder is None:
        return _zarr_rows(ctx, spec, g, n_rows, key)
    out = np.empty((n_rows, *spec.row_shape), dtype=spec.dtype)
    try:
        _decode_blocks(spec, shard, index, np.arange(needed), out, key)
        _decode_extra(spec, shard, index, needed + np.flatnonzero(present[needed:]), key)
    except CorruptChunkError as exc:
        ctx.fail("L3.shard_index", key, str(exc))
        return None
    return out


def _zarr_rows(
    ctx: Context, spec: ArraySpec, g: tuple[int, ...], n_rows: int, key: str
) -> np.ndarray | None:
    lo = (*g, 0, *(0 for _ in spec.row_shape))
    hi = (*(c + 1 for c in g), n_rows, *spec.row_shape)
    try:
        rows = read_region(spec.store, spec.path, lo, hi)
    except STORE_ERRORS as exc:  # CorruptChunkError is a ValueError
        ctx.fail("L3.shard_index", key, f"the shard does not decode ({type(exc).__name__}: {exc})")
        return None
    return rows.reshape(n_rows, *spec.row_shape)


def read_blob_payload(
    ctx: Context, spec: ArraySpec, g: tuple[int, ...], shard: bytes
) -> tuple[np.ndarray, np.ndarray] | None:
    """Check a blob shard's index and decode every stored block into an ``L_max`` payload.

    Returns
    -------
    (payload, present) or None
        The ``uint8`` payload (missing blocks read as zeros) and which blocks are stored;
        None when the shard index or a block is unusable (already reported).
    """
    key = spec.key(g)
    index = _index(ctx, spec, key, shard)
    if index is None:
        return None
    index = spec.entries(index, g)
    present = index[:, 0] != _MISSING
    if spec.decoder is None:
        rows = _zarr_rows(ctx, spec, g, spec.n_rows, key)
        return None if rows is None else (rows.astype(np.uint8).reshape(-1), present)
    payload = np.zeros(spec.n_rows, dtype=np.uint8)
    try:
        _decode_blocks(spec, shard, index, np.flatnonzero(present), payload, key)
    except CorruptChunkError as exc:
        ctx.fail("L3.shard_index", key, str(exc))
        return None
    return payload, present


def blob_blocks_present(
    ctx: Context, spec: ArraySpec, g: tuple[int, ...], present: np.ndarray, size: int
) -> bool:
    """L3.shard_rows_present / beyond for a blob of ``size`` bytes."""
    used = min(size, spec.n_rows)
    return _blocks_present(ctx, spec.key(g), present, -(-used // spec.rows_per_block))
