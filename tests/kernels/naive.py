"""Plain-numpy twins of the kernels in zarr_vectors.kernels.binning and .bin_runs (no numba).

Written to be obviously correct rather than fast; the tests compare every kernel to
its twin.
"""

from __future__ import annotations

from typing import Any

import numpy as np
import numpy.typing as npt

Array = npt.NDArray[Any]


def bounds_and_nonfinite(positions: Array) -> tuple[Array, Array, int]:
    p = np.asarray(positions, dtype=np.float64)
    finite_rows = np.isfinite(p).all(axis=1)
    good = p[finite_rows]
    if len(good) == 0:
        dim = p.shape[1]
        return np.full(dim, np.inf), np.full(dim, -np.inf), int((~np.isfinite(p)).sum())
    return good.min(axis=0), good.max(axis=0), int((~np.isfinite(p)).sum())


def chunk_coords(positions: Array, chunk_shape: Array) -> Array:
    p = np.asarray(positions, dtype=np.float64)
    size = np.asarray(chunk_shape, dtype=np.float64)
    c = np.floor(p / size)
    c = c - (c * size > p)
    c = c + ((c + 1) * size <= p)
    return c.astype(np.int64)


def bin_coords(
    positions: Array, chunks: Array, chunk_shape: Array, bin_shape: Array, bins_per_chunk: Array
) -> Array:
    p = np.asarray(positions, dtype=np.float64)
    out = np.zeros(p.shape, dtype=np.int64)
    for d in range(p.shape[1]):
        base = chunks[:, d].astype(np.float64) * chunk_shape[d]
        for b in range(1, int(bins_per_chunk[d])):
            edge = base + float(b) * bin_shape[d]
            out[:, d] += edge <= p[:, d]  # edges increase with b: count of edges <= p
    return out


def assign_chunks_and_bins(
    positions: Array,
    chunk_shape: Array,
    bin_shape: Array,
    bins_per_chunk: Array,
    grid_lo: Array,
    grid_shape: Array,
) -> tuple[Array, Array]:
    chunks = chunk_coords(positions, chunk_shape)
    bins = bin_coords(positions, chunks, chunk_shape, bin_shape, bins_per_chunk)
    grid = chunks - np.asarray(grid_lo)
    assert ((grid >= 0) & (grid < np.asarray(grid_shape))).all()
    chunk_flat = np.ravel_multi_index(tuple(grid.T), tuple(grid_shape))
    bin_flat = np.ravel_multi_index(tuple(bins.T), tuple(bins_per_chunk))
    return np.asarray(chunk_flat, dtype=np.int64), np.asarray(bin_flat, dtype=np.int64)


def counting_sort(keys: Array, n_keys: int) -> tuple[Array, Array]:
    perm = np.argsort(keys, kind="stable").astype(np.int64)
    counts = np.bincount(keys, minlength=n_keys)
    return perm, np.concatenate([[0], np.cumsum(counts)]).astype(np.int64)


def sort_by_chunk_and_bin(
    chunk_flat: Array, bin_flat: Array, n_bins: int
) -> tuple[Array, Array, Array, Array]:
    n = len(chunk_flat)
    perm = np.lexsort((np.arange(n), bin_flat, chunk_flat)).astype(np.int64)
    occupied = np.unique(chunk_flat).astype(np.int64)
    chunk_offsets = np.zeros(len(occupied) + 1, dtype=np.int64)
    bin_offsets = np.zeros((len(occupied), n_bins + 1), dtype=np.int64)
    for j, chunk in enumerate(occupied):
        in_chunk = chunk_flat == chunk
        chunk_offsets[j + 1] = chunk_offsets[j] + in_chunk.sum()
        counts = np.bincount(bin_flat[in_chunk], minlength=n_bins)
        bin_offsets[j, 1:] = np.cumsum(counts)
    return perm, occupied, chunk_offsets, bin_offsets


def chunk_and_bin_destinations(
    chunk_flat: Array, bin_flat: Array, n_bins: int
) -> tuple[Array, Array, Array, Array]:
    perm, occupied, chunk_offsets, bin_offsets = sort_by_chunk_and_bin(chunk_flat, bin_flat, n_bins)
    destination = np.empty_like(perm)
    destination[perm] = np.arange(len(perm))
    return destination, occupied, chunk_offsets, bin_offsets


def scatter_rows(values: Array, destination: Array) -> Array:
    out = np.empty_like(values)
    out[destination] = values
    return out


def points_in_box(positions: Array, lo: Array, hi: Array) -> Array:
    p = np.asarray(positions, dtype=np.float64)
    return np.all((np.asarray(lo) <= p) & (p < np.asarray(hi)), axis=1)


def segment_bounds(positions: Array, starts: Array) -> tuple[Array, Array, bool]:
    p = np.asarray(positions, dtype=np.float64)
    ends = [*starts[1:], len(p)][: len(starts)]
    lo = np.full((len(starts), p.shape[1]), np.inf)
    hi = np.full((len(starts), p.shape[1]), -np.inf)
    finite = True
    for s, (a, b) in enumerate(zip(starts, ends, strict=True)):
        if b > a:
            lo[s], hi[s] = p[a:b].min(axis=0), p[a:b].max(axis=0)
            finite = finite and bool(np.isfinite(p[a:b]).all())
    return lo, hi, finite


def order_runs_by_bin(
    values: Array, run_bins: Array, run_lengths: Array, n_bins: int
) -> tuple[Array, Array]:
    """Rows given as runs of one bin each, stably sorted by bin, and the bins' offsets."""
    row_bins = np.repeat(np.asarray(run_bins, dtype=np.int64), run_lengths)
    order = np.argsort(row_bins, kind="stable")
    counts = np.bincount(row_bins, minlength=n_bins)
    return values[order], np.concatenate([[0], np.cumsum(counts)]).astype(np.int64)


def face_anchors(
    positions: Array,
    faces: Array,
    places: tuple[Array, Array],
    gid: Array,
    chunk_grid: Array,
    grid: tuple[Array, Array],
) -> tuple[Array, Array]:
    vertex_chunk, vertex_row = places
    centroid = (positions[faces[:, 0]].astype(np.float64) + positions[faces[:, 1]]) + positions[
        faces[:, 2]
    ]
    target = chunk_coords(centroid / 3.0, grid[0]) - grid[1]
    face_chunks = vertex_chunk[faces]
    inside = np.all(chunk_grid[face_chunks] == target[:, None, :], axis=2)
    column = np.where(inside.any(axis=1), np.argmax(inside, axis=1), 0)
    anchor = faces[np.arange(len(faces)), column]
    same = face_chunks == vertex_chunk[anchor][:, None]
    return anchor, np.where(same, vertex_row[faces], -(gid[faces] + 1))


def anchor_faces(
    positions: Array,
    faces: Array,
    places: tuple[Array, Array, Array],
    run_offsets: Array,
    gid: Array,
    chunk_grid: Array,
    grid: tuple[Array, Array],
) -> tuple[Array, Array, Array]:
    """Twin of :func:`zarr_vectors.kernels.face_links.anchor_faces`: :func:`face_anchors`,
    then a stable argsort by anchor fragment."""
    anchor, entries = face_anchors(positions, faces, places[:2], gid, chunk_grid, grid)
    keys = run_offsets[places[0][anchor]] + places[2][anchor]
    order = np.argsort(keys, kind="stable")
    counts = np.bincount(keys, minlength=int(run_offsets[-1]))
    return entries[order], order, np.concatenate([[0], np.cumsum(counts)])


def copy_row_runs(
    src: np.ndarray, src_at: np.ndarray, out: np.ndarray, out_at: np.ndarray, counts: np.ndarray
) -> np.ndarray:
    """Twin of :func:`zarr_vectors.kernels.bin_runs.copy_row_runs`: a copy of ``out`` after
    the slice assignments of every run, in order."""
    result = out.copy()
    for a, d, c in zip(src_at.tolist(), out_at.tolist(), counts.tolist(), strict=True):
        result[d : d + c] = src[a : a + c]
    return result


def rows_in_runs(
    entries: np.ndarray,
    entry_group: np.ndarray,
    bounds: np.ndarray,
    run_start: np.ndarray,
    run_length: np.ndarray,
    run_result: np.ndarray,
) -> tuple[np.ndarray, int]:
    """Twin of :func:`zarr_vectors.kernels.link_entries.rows_in_runs`: every entry looked
    for in every run of its group, one at a time."""
    flat = entries.reshape(entry_group.shape[0], -1) if entries.size else entries.reshape(0, 1)
    out = np.full(flat.shape, -1, dtype=np.int64)
    bad = -1
    for i in range(flat.shape[0]):
        g = int(entry_group[i])
        runs = range(bounds[g], bounds[g + 1]) if 0 <= g < bounds.shape[0] - 1 else range(0)
        for j in range(flat.shape[1]):
            v = int(flat[i, j])
            if v < 0:
                continue
            held = [q for q in runs if run_start[q] <= v < run_start[q] + run_length[q]]
            if held:
                out[i, j] = run_result[held[0]] + v - run_start[held[0]]
            elif bad < 0:
                bad = i * flat.shape[1] + j
    return out.reshape(entries.shape), bad


def misplaced_row(
    positions: Array,
    runs: tuple[Array, Array, Array, Array],
    cells: Array,
    grid: tuple[Array, Array, Array],
    bin_table: tuple[Array, Array, Array],
) -> int:
    """Twin of :func:`zarr_vectors.kernels.placement.misplaced_row`, from the writers' rule:
    a row is placed when the chunk index of its vertex (:func:`chunk_coords`) is its
    chunk's and, where the chunk has a bin table, its row lies in the range of its
    vertex's bin (:func:`bin_coords`)."""
    run_row, run_len, run_start, run_chunk = runs
    chunk_shape, bin_shape, bins = grid
    table_row, starts, sizes = bin_table
    p = np.asarray(positions, dtype=np.float64)
    for q in range(run_row.shape[0]):
        i = int(run_chunk[q])
        for k in range(int(run_len[q])):
            r = int(run_row[q]) + k
            if not np.isfinite(p[r]).all():
                return r
            c = chunk_coords(p[r : r + 1], chunk_shape)[0]
            if not np.array_equal(c.astype(np.float64), cells[i]):
                return r
            if table_row[i] < 0:
                continue
            b = bin_coords(p[r : r + 1], c[None], chunk_shape, bin_shape, bins)[0]
            f = int(np.ravel_multi_index(tuple(b), tuple(int(x) for x in bins)))
            row, local = int(table_row[i]), int(run_start[q]) + k
            if not starts[row, f] <= local < starts[row, f] + sizes[row, f]:
                return r
    return -1


def link_result_rows(
    entries: np.ndarray,
    run_group: np.ndarray,
    run_rows: np.ndarray,
    local: tuple[np.ndarray, ...],
    gids: tuple[np.ndarray, ...],
    sentinels: bool,
    drop_rootless: bool,
) -> tuple[np.ndarray, np.ndarray, int, int]:
    """Twin of :func:`zarr_vectors.kernels.link_rows.link_result_rows` (``kept`` always an
    array): each entry looked up by :func:`rows_in_runs` with its row's group repeated from
    the runs, sentinels among the global ids, then the rootless links dropped."""
    groups = np.repeat(run_group, run_rows)
    rows, bad_row = rows_in_runs(entries, groups, *local)
    bad_gid = -1
    if sentinels:
        flat = entries.reshape(-1)
        for at in np.flatnonzero(flat < 0).tolist():
            found, bad = rows_in_runs(np.array([-flat[at] - 1]), np.zeros(1, np.int64), *gids)
            rows.reshape(-1)[at] = found[0]
            if bad >= 0 and bad_gid < 0:
                bad_gid = at
    keep = np.ones(rows.shape[0], dtype=bool)
    if drop_rootless and rows.shape[1] > 1:
        keep = rows[:, 1] >= 0
    return rows[keep], np.flatnonzero(keep), bad_row, bad_gid


def cross_link_rows(
    table: np.ndarray, gids: tuple[np.ndarray, ...]
) -> tuple[np.ndarray, np.ndarray, int]:
    """Twin of :func:`zarr_vectors.kernels.cross_links.cross_by_table` and
    :func:`~zarr_vectors.kernels.cross_links.cross_by_runs` (the links found put back in
    table order): both ids of every link of the whole table looked up by
    :func:`rows_in_runs`, the links whose first id is found kept."""
    found, _ = rows_in_runs(table, np.zeros(table.shape[0], np.int64), *gids)
    mine = np.flatnonzero(found[:, 0] >= 0)
    missing = np.flatnonzero(found[mine, 1] < 0)
    return found[mine], mine, int(mine[missing[0]]) if missing.size else -1


def edge_result_rows(
    entries: np.ndarray,
    run_group: np.ndarray,
    run_rows: np.ndarray,
    local: tuple[np.ndarray, ...],
    gids: tuple[np.ndarray, ...],
    table: np.ndarray,
    drop_rootless: bool,
) -> tuple[np.ndarray, np.ndarray, int, np.ndarray, int, int]:
    """Twin of :func:`zarr_vectors.kernels.link_rows.edge_result_rows`: the twins of
    :func:`link_result_rows` and :func:`cross_link_rows` (of the whole ``table``), their
    rows one after the other: ``(rows, kept, local, mine, bad_row, bad_cross)``."""
    rows, kept, bad_row, _ = link_result_rows(
        entries, run_group, run_rows, local, gids, False, drop_rootless
    )
    cross, mine, bad_cross = cross_link_rows(table, gids)
    both = np.concatenate([rows, cross.reshape(-1, 2)]).astype(np.int64)
    return both, kept, rows.shape[0], mine, bad_row, bad_cross


def read_plan(
    order: np.ndarray,
    slot: np.ndarray,
    starts: np.ndarray,
    sizes: np.ndarray,
    chunk_flat: np.ndarray,
    n_max: int,
) -> tuple[np.ndarray, ...]:
    """Twin of :func:`zarr_vectors.kernels.read_plan.read_plan` as numpy steps (the object
    read's former ``_row_plan`` and ``_returned``): ``(run_slot, run_start, run_stop,
    buffer_start, bounds, start, length, result, gid, overlap)``."""
    s, a, z = slot[order], starts[order], sizes[order]
    keep = z > 0
    s, a, z = s[keep], a[keep], z[keep]
    new = np.ones(s.shape[0], dtype=bool)
    new[1:] = (s[1:] != s[:-1]) | (a[1:] != (a + z)[:-1])
    first = np.flatnonzero(new)
    last = np.append(first, s.shape[0])[1:] - 1
    buffer_start = np.empty(order.shape[0], np.int64)
    buffer_start[order] = np.cumsum(sizes[order]) - sizes[order]
    gid = chunk_flat[s] * n_max + a
    overlap = bool(np.any(gid[1:] < (gid + z)[:-1]) or np.any(a + z > n_max))
    return (
        s[first],
        a[first],
        (a + z)[last],
        buffer_start,
        np.searchsorted(s, np.arange(chunk_flat.shape[0] + 1)),
        a,
        z,
        (np.cumsum(sizes) - sizes)[order][keep],
        gid,
        overlap,
    )


def nth_of_its_id(k: Array, seen: Array) -> Array:
    """Twin of kernels.id_counts.nth_of_its_id: a stable sort by id number."""
    k = np.asarray(k, dtype=np.int64)
    if not k.shape[0]:
        return k.copy()
    order = np.argsort(k, kind="stable")  # the rows of one id in storage order
    grouped = k[order]
    begins = np.flatnonzero(np.concatenate([[True], grouped[1:] != grouped[:-1]]))
    sizes = np.diff(np.concatenate([begins, [grouped.shape[0]]]))
    nth = np.empty_like(k)
    nth[order] = np.arange(grouped.shape[0]) - np.repeat(begins, sizes) + seen[grouped]
    seen[grouped[begins]] += sizes
    return nth


def copy_slot_runs(
    blocks: np.ndarray, place: np.ndarray, r: int, first: np.ndarray, length: np.ndarray
) -> np.ndarray:
    """Twin of :func:`zarr_vectors.kernels.slot_runs.copy_slot_runs`: every slot row of
    every run, in order, gathered row by row from its block."""
    rows = [
        x for f, n in zip(first.tolist(), length.tolist(), strict=True) for x in range(f, f + n)
    ]
    at = np.array([int(place[x // r]) * r + x % r for x in rows], dtype=np.int64)
    return blocks[at]


def slot_rows_in_box(
    blocks: np.ndarray,
    place: np.ndarray,
    r: int,
    first: np.ndarray,
    length: np.ndarray,
    boxes: tuple[np.ndarray, np.ndarray],
    lo: np.ndarray,
    hi: np.ndarray,
) -> tuple[np.ndarray, int]:
    """Twin of :func:`zarr_vectors.kernels.slot_runs.slot_rows_in_box`: the rows gathered
    (:func:`copy_slot_runs`), each run's chunk box repeated per row, then two numpy masks."""
    rows = copy_slot_runs(blocks, place, r, first, length).astype(np.float64)
    lower, upper = (np.repeat(b, length, axis=0) for b in boxes)
    placed = ((lower <= rows) & (rows < upper)).all(axis=1)
    if not placed.all():
        return np.empty(0, dtype=bool), int(np.flatnonzero(~placed)[0])
    return ((lo <= rows) & (rows < hi)).all(axis=1), -1


def link_row_runs(
    ref_slot: np.ndarray, ref_fragment: np.ndarray, starts: np.ndarray, counts: np.ndarray
) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """Twin of :func:`zarr_vectors.kernels.link_rows.link_row_runs`: the distinct (slot,
    fragment) pairs by a Python sort, their non-empty rows, touching runs of a slot joined."""
    first: dict[tuple[int, int], int] = {}
    for i, key in enumerate(zip(ref_slot.tolist(), ref_fragment.tolist(), strict=True)):
        first.setdefault(key, i)
    runs: list[list[int]] = []
    for (s, _f), i in sorted(first.items()):
        a, n = int(starts[i]), int(counts[i])
        if n <= 0:
            continue
        if runs and runs[-1][0] == s and runs[-1][2] == a:
            runs[-1][2] = a + n
        else:
            runs.append([s, a, a + n])
    out = np.array(runs, dtype=np.int64).reshape(-1, 3)
    return out[:, 0], out[:, 1], out[:, 2]


def fragments_met(
    starts: np.ndarray,
    sizes: np.ndarray,
    n_fragments: np.ndarray,
    inside: np.ndarray,
    counts: np.ndarray,
    contained: np.ndarray,
) -> np.ndarray:
    """Twin of :func:`zarr_vectors.kernels.owner_marks.fragments_met` (valid ranges): a
    fragment of a covered chunk, or one any of whose rows is contained."""
    chunk = np.repeat(np.arange(n_fragments.shape[0]), n_fragments)
    base = np.cumsum(np.where(inside, 0, counts)) - np.where(inside, 0, counts)
    return np.array(
        [
            bool(inside[c]) or bool(contained[base[c] + a : base[c] + a + n].any())
            for c, a, n in zip(chunk.tolist(), starts.tolist(), sizes.tolist(), strict=True)
        ],
        dtype=bool,
    )


def reference_chunks(
    ref_chunk: np.ndarray, grid_shape: np.ndarray, occupied_flat: np.ndarray, counts: np.ndarray
) -> tuple[int, np.ndarray, np.ndarray, np.ndarray, np.ndarray, np.ndarray, int]:
    """Twin of :func:`zarr_vectors.kernels.reference_chunks.reference_chunks`: the grid
    checked reference by reference, distinct chunks by ``np.unique``, positions by a dict."""
    shape = tuple(int(g) for g in grid_shape)
    for i, c in enumerate(ref_chunk.tolist()):
        if any(not 0 <= x < g for x, g in zip(c, shape, strict=True)):
            return i, np.empty(0), np.empty(0), np.empty(0), np.empty(0), np.empty(0), -1
    flat = np.array([np.ravel_multi_index(tuple(c), shape) for c in ref_chunk.tolist()], np.int64)
    chunk_flat, slot = np.unique(flat, return_inverse=True)
    chunks = np.array([np.unravel_index(f, shape) for f in chunk_flat.tolist()], np.int64)
    at = {f: p for p, f in enumerate(occupied_flat.tolist())}
    missing = [s for s, f in enumerate(chunk_flat.tolist()) if f not in at]
    where = np.array([at.get(f, 0) for f in chunk_flat.tolist()], np.int64)
    rows = np.array([counts[at[f]] if f in at else 0 for f in chunk_flat.tolist()], np.int64)
    empty = missing[0] if missing else -1
    return -1, chunk_flat, chunks.reshape(-1, len(shape)), slot.reshape(-1), where, rows, empty


def gather_references(
    first: np.ndarray, count: np.ndarray, chunk: np.ndarray, fragment: np.ndarray, dense: np.ndarray
) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """Twin of :func:`zarr_vectors.kernels.reference_gather.gather_references`: each
    object's rows sliced out and concatenated."""
    rows = [np.arange(first[k], first[k] + count[k], dtype=np.int64) for k in dense.tolist()]
    at = np.concatenate([np.empty(0, np.int64), *rows])
    owner = np.concatenate(
        [np.empty(0, np.int64), *(np.full(r.shape[0], j, np.int64) for j, r in enumerate(rows))]
    )
    return owner, chunk[at].reshape(-1, chunk.shape[1]), fragment[at]


def locate_blocks(
    numbers: np.ndarray, place: np.ndarray, used: np.ndarray, wanted: np.ndarray, tick: int
) -> tuple[np.ndarray, np.ndarray, int]:
    """Twin of :func:`zarr_vectors.kernels.block_lookup.locate_blocks`: a dict of the
    cached numbers."""
    slot_of = dict(zip(numbers.tolist(), place.tolist(), strict=True))
    slots = np.array([slot_of.get(w, -1) for w in wanted.tolist()], np.int64)
    hits = slots >= 0
    used[slots[hits]] = tick
    return hits, slots, int((~hits).sum())


def claim_slots(
    numbers: np.ndarray, place: np.ndarray, used: np.ndarray, n: int, tick: int
) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """Twin of :func:`zarr_vectors.kernels.block_lookup.claim_slots`: free slots in slot
    order, then occupied slots not used at ``tick`` by (last use, slot)."""
    free = [s for s in range(used.shape[0]) if used[s] < 0]
    older = sorted((int(used[s]), s) for s in range(used.shape[0]) if 0 <= used[s] != tick)
    if len(free) + len(older) < n:
        return np.empty(0, np.int64), numbers, place
    taken = [s for _, s in older[: max(n - len(free), 0)]]
    used[taken] = -1
    kept = [(int(b), int(p)) for b, p in zip(numbers, place, strict=True) if used[p] >= 0]
    return (
        np.array((free + taken)[:n], np.int64),
        np.array([b for b, _ in kept], np.int64),
        np.array([p for _, p in kept], np.int64),
    )


def add_blocks(
    numbers: np.ndarray,
    place: np.ndarray,
    used: np.ndarray,
    new: np.ndarray,
    slots: np.ndarray,
    tick: int,
) -> tuple[np.ndarray, np.ndarray]:
    """Twin of :func:`zarr_vectors.kernels.block_lookup.add_blocks`: a dict, sorted."""
    slot_of = dict(zip(numbers.tolist(), place.tolist(), strict=True))
    slot_of.update(zip(new.tolist(), slots.tolist(), strict=True))
    used[slots] = tick
    ordered = sorted(slot_of)
    return np.array(ordered, np.int64), np.array([slot_of[b] for b in ordered], np.int64)


def cached_run_slots(
    chunk_flat: np.ndarray,
    runs: tuple[np.ndarray, np.ndarray, np.ndarray],
    r: int,
    n_blocks: int,
    cached: tuple[np.ndarray, np.ndarray, np.ndarray],
    tick: int,
) -> tuple[np.ndarray, np.ndarray] | None:
    """The blocks of row runs found in a cache, as the kernels of
    :mod:`zarr_vectors.kernels.block_lookup` find them (the twin of their lookup): every
    row of every run, its (chunk, block) numbered in order of first appearance, looked up
    in a dict of the cached numbers; their pool slots (marked used) and each run's first
    slot row, or None when a block is not cached."""
    numbers, place, used = cached
    slot_of = dict(zip(numbers.tolist(), place.tolist(), strict=True))
    slots: list[int] = []  # block numbers, by slot
    run_row = []
    for c, a, z in zip(*(x.tolist() for x in runs), strict=True):
        if not 0 <= c < len(chunk_flat) or a < 0 or z <= a or (z - 1) // r >= n_blocks:
            return None
        for row in range(a, z):
            number = int(chunk_flat[c]) * n_blocks + row // r
            if not slots or slots[-1] != number:
                slots.append(number)
            if row == a:
                run_row.append((len(slots) - 1) * r + row % r)
    if any(n not in slot_of for n in slots):
        return None
    found = np.array([slot_of[n] for n in slots], np.int64)
    used[found] = tick
    return found, np.array(run_row, np.int64)


def radix_order(keys: np.ndarray) -> np.ndarray:
    """Twin of :func:`zarr_vectors.kernels.radix_order.radix_order`: Python's stable sort
    of the positions by key."""
    return np.array(sorted(range(keys.shape[0]), key=lambda i: int(keys[i])), dtype=np.int64)


def shard_slots(chunks: Array, shard_chunks: Array) -> tuple[Array, Array, Array]:
    """Twin of zarr_vectors.kernels.shard_slots.shard_slots: np.unique of the shard rows."""
    chunks = np.asarray(chunks, dtype=np.int64).reshape(len(chunks), len(shard_chunks))
    per = np.asarray(shard_chunks, dtype=np.int64)
    shards, slot = np.unique(chunks // per, axis=0, return_inverse=True)
    local = np.zeros(len(chunks), dtype=np.int64)
    for a in range(len(per)):
        local = local * per[a] + chunks[:, a] % per[a]
    return shards.reshape(-1, len(per)), slot.reshape(-1).astype(np.int64), local


def fill_block_entries(
    index: Array,
    n_blocks: int,
    chunk_of: tuple[Array, Array, Array],
    table: tuple[Array, Array, Array],
    max_nbytes: int,
) -> int:
    """Twin of zarr_vectors.kernels.shard_slots.fill_block_entries, chunk by chunk."""
    slot, local, wanted = chunk_of
    first, where, out = table
    own = [index[s, q * n_blocks : (q + 1) * n_blocks] for s, q in zip(slot, local, strict=True)]
    for i, entries in enumerate(own):
        stored = entries[entries[:, 0] != -1]
        if (
            (entries[int(wanted[i]) :, 0] != -1).any()
            or (stored[:, 0] < 0).any()
            or (stored[:, 1] < 0).any()
            or (stored[:, 1] > max_nbytes).any()
        ):
            return i
    for p, entries in zip(where, own, strict=True):
        a, b = int(first[p]), int(first[p + 1])
        n = min(b - a, n_blocks)
        out[a : a + n] = entries[:n]
    return -1


def stored_spans(entries: Array) -> tuple[Array, Array, Array, bool]:
    """Twin of zarr_vectors.kernels.blob_spans.stored_spans, by array operations (int64
    entries, -1 for a block not stored)."""
    entries = np.asarray(entries, dtype=np.int64)
    m = entries.shape[0]
    offsets, sizes = entries[..., 0], entries[..., 1]
    present = offsets != -1
    stored = present.sum(axis=1).astype(np.int64)
    prefix = np.arange(entries.shape[1]) < stored[:, None]
    large = 2**62
    if (
        np.any(present != prefix)
        or np.any(offsets[present] < 0)
        or np.any(offsets[present] >= large)
        or np.any(sizes[present] < 0)
        or np.any(sizes[present] >= large)
    ):
        return np.zeros(m, np.int64), np.zeros(m, np.int64), np.zeros(m, np.int64), False
    first = np.where(present, offsets, large).min(axis=1, initial=large)
    last = np.where(present, offsets + sizes, 0).max(axis=1, initial=0)
    return stored, np.where(stored > 0, first, 0), last, True


def blob_blocks(
    entries: Array, stored: Array, start: Array, lengths: Array
) -> tuple[Array, Array, Array, Array, Array]:
    """Twin of zarr_vectors.kernels.blob_spans.blob_blocks, by array operations."""
    lengths = np.asarray(lengths, dtype=np.int64)
    base = np.cumsum(lengths) - lengths
    chunk_of = np.repeat(np.arange(stored.shape[0]), stored).astype(np.int64)
    number = np.arange(chunk_of.shape[0]) - np.repeat(np.cumsum(stored) - stored, stored)
    offsets = entries[chunk_of, number, 0] - start[chunk_of]
    sizes = entries[chunk_of, number, 1]
    inside = (offsets >= 0) & (offsets + sizes <= lengths[chunk_of])
    starts = np.where(inside, base[chunk_of] + offsets, int(lengths.sum()))
    bounds = np.concatenate([[0], np.cumsum(stored)]).astype(np.int64)
    return starts, sizes, chunk_of, number.astype(np.int64), bounds


def reference_pieces(
    starts: np.ndarray, sizes: np.ndarray, n_rows: int
) -> tuple[np.ndarray, np.ndarray, np.ndarray] | None:
    """Twin of :func:`zarr_vectors.kernels.read_plan.reference_pieces`: numpy steps (a
    cumulative sum, a comparison of neighbours, a reduction per piece)."""
    dest = np.cumsum(sizes) - sizes
    if n_rows == int(sizes.sum()) and np.array_equal(starts, dest):
        return None
    if not starts.shape[0]:
        return starts, dest, sizes
    head = np.empty(starts.shape[0], dtype=bool)
    head[0] = True
    np.not_equal(starts[1:], starts[:-1] + sizes[:-1], out=head[1:])
    first = np.flatnonzero(head)
    return starts[first], dest[first], np.add.reduceat(sizes, first)


def fragment_rows(
    first: np.ndarray,
    count: np.ndarray,
    ranges: np.ndarray,
    where: np.ndarray,
    fragment: np.ndarray,
) -> tuple[np.ndarray, int]:
    """Twin of :func:`zarr_vectors.kernels.read_plan.fragment_rows`: a mask of the bad
    references, then one fancy index of the columns."""
    inside = (where >= 0) & (where < first.shape[0])
    p = np.where(inside, where, 0)
    at = first[p] + fragment
    bad = ~inside | (fragment < 0) | (fragment >= count[p]) | (first[p] < 0)
    bad |= at >= ranges.shape[1]
    if bad.any():
        return ranges[:, :0], int(np.argmax(bad))
    return ranges[:, at], -1


def object_read_plan(
    refs: tuple[np.ndarray, np.ndarray, np.ndarray, np.ndarray],
    slot_rows: np.ndarray,
    chunk_flat: np.ndarray,
    n_max: int,
    n_objects: int,
    links: tuple[np.ndarray, np.ndarray, np.ndarray] | None,
) -> tuple[Any, ...] | None:
    """Twin of :func:`zarr_vectors.kernels.object_plan.object_read_plan`, the steps it
    fuses one after another: a lexsort, :func:`read_plan`, :func:`reference_pieces`, a
    bincount of each object's rows and :func:`link_row_runs` (their twins here);
    ``(plan fields, pieces, offsets, link runs)``."""
    slot, starts, sizes, owner = refs
    if np.any((starts < 0) | (starts > slot_rows[slot])) or np.any(
        (owner < 0) | (owner >= n_objects)
    ):
        return None
    if links is not None and np.any(links[0] < 0):
        return None
    order = np.lexsort((starts, slot)).astype(np.int64)
    plan = read_plan(order, slot, starts, sizes, chunk_flat, n_max)
    pieces = reference_pieces(plan[3], sizes, int((plan[2] - plan[1]).sum()))
    per_object = np.bincount(owner, weights=sizes, minlength=n_objects).astype(np.int64)
    offsets = np.concatenate([[0], np.cumsum(per_object)]).astype(np.int64)
    link_runs = None if links is None else link_row_runs(slot, *links)
    return plan, pieces, offsets, link_runs


def owners_met(
    table: tuple[np.ndarray, np.ndarray, np.ndarray, np.ndarray],
    where: np.ndarray,
    inside: np.ndarray,
    counts: np.ndarray,
    contained: np.ndarray,
) -> np.ndarray:
    """Twin of :func:`zarr_vectors.kernels.owner_marks.owners_met` (valid ranges): the
    chunks' fragments gathered from the table by a fancy index, then
    :func:`fragments_met` and the owners of those met."""
    first, count, ranges, owner = table
    at = np.concatenate([np.arange(first[p], first[p] + count[p]) for p in where.tolist()] or [[]])
    at = at.astype(np.int64)
    met = fragments_met(ranges[0, at], ranges[1, at], count[where], inside, counts, contained)
    return owner[at][met.astype(bool)] if at.size else np.empty(0, np.int64)


def block_spans(
    sizes: Array, block_nbytes: int, total: int, blocks: int, pad_nbytes: int
) -> tuple[Array, Array] | None:
    """Twin of :func:`zarr_vectors.kernels.row_blocks.block_spans`: each chunk cut into
    blocks one by one, then the checks."""
    starts: list[int] = []
    takes: list[int] = []
    offset = 0
    for size in sizes.tolist():
        if size < 0:
            return None
        for first in range(offset, offset + size, block_nbytes):
            starts.append(first)
            takes.append(min(block_nbytes, offset + size - first))
        offset += size
    short = any(t < block_nbytes for t in takes)
    if offset != total or len(starts) != blocks or (short and pad_nbytes < block_nbytes):
        return None
    return np.array(starts, np.int64), np.array(takes, np.int64)


def frame_into(frame: bytes, decompress: Any) -> bytes | int:
    """Twin of :func:`zarr_vectors.kernels.zstd_frames.decode_frame_into` with both
    unshuffles known (``decompress``: a Zstandard decompressor raising RuntimeError, e.g.
    numcodecs'): the frame's bytes, 0 when it is left to staging and C-Blosc, -1 when it
    is damaged. Each block's stream, then its byte or bit shuffle undone in numpy."""
    if len(frame) < 16:
        return 0
    version, zstd_version, flags, typesize = frame[:4]
    nbytes, blocksize = (int.from_bytes(frame[a : a + 4], "little") for a in (4, 8))
    if flags >> 5 != 4 or flags & 0x0A or not (typesize and nbytes and blocksize):
        return 0  # not Zstandard, stored whole, a reserved flag, or empty sizes
    if nbytes >= 2**31 or blocksize > nbytes or (version, zstd_version) != (2, 1):
        return 0
    if not (flags & 0x10 or typesize == 1):
        return 0  # blocks split in streams
    n_blocks = -(-nbytes // blocksize)
    head = 16 + 4 * n_blocks
    if head > len(frame):
        return -1
    parts = []
    for j in range(n_blocks):
        size = min(blocksize, nbytes - j * blocksize)
        src = int.from_bytes(frame[16 + 4 * j : 20 + 4 * j], "little")
        if src < head or src + 4 > len(frame):
            return -1
        stored = int.from_bytes(frame[src : src + 4], "little")
        if stored >= 2**31 or src + 4 + stored > len(frame):
            return -1
        raw = frame[src + 4 : src + 4 + stored]
        if stored != size:
            try:
                raw = decompress(raw)
            except RuntimeError:
                return -1
            if len(raw) != size:
                return -1
        if flags & 0x01 and typesize > 1:
            raw = _unshuffled(raw, typesize)
        elif flags & 0x04 and size >= typesize:
            raw = _bit_unshuffled(raw, typesize)
        parts.append(raw)
    return b"".join(parts)


def _unshuffled(raw: bytes, typesize: int) -> bytes:
    """Blosc's byte shuffle undone: the ``typesize`` byte planes of the whole items back
    into items, the bytes after them as they are."""
    n = len(raw) // typesize
    planes = np.frombuffer(raw[: n * typesize], np.uint8).reshape(typesize, n)
    return planes.T.tobytes() + raw[n * typesize :]


def _bit_unshuffled(raw: bytes, typesize: int) -> bytes:
    """Blosc's bit shuffle undone: ``8 * typesize`` bit planes (bit ``b`` of byte ``j``
    of every item, least significant first) back into items; a block of a count of items
    not a multiple of 8 is stored as it is, and the bytes after the items too."""
    n = len(raw) // typesize
    if n % 8:
        return raw
    planes = np.frombuffer(raw[: n * typesize], np.uint8).reshape(typesize * 8, n // 8)
    bits = np.unpackbits(planes, axis=1, bitorder="little").reshape(typesize, 8, n)
    items = bits.transpose(2, 0, 1).reshape(n, typesize * 8)
    return np.packbits(items, axis=1, bitorder="little").tobytes() + raw[n * typesize :]
