"""The shards holding many spatial chunks, found in one kernel call (spec §9.0.1).

In a layout of several chunks per shard, a read meets tens of chunks in a few shards. Their
shards' indexes are fetched once per shard and each chunk's entries are a slice of its
shard's index. :func:`shard_slots` gives, for ``m`` chunks, the distinct shards holding them
(ascending in C order), the slot of each chunk's shard among those, and the chunk's C-order
position inside its shard: what the numpy version did in some twenty array calls.
"""

from __future__ import annotations

import numpy as np
import numpy.typing as npt

from zarr_vectors.kernels._jit import njit

__all__ = ["shard_slots"]

I64 = npt.NDArray[np.int64]


def shard_slots(chunks: I64, shard_chunks: I64) -> tuple[I64, I64, I64]:
    """The shards of ``chunks``, each chunk's slot among them and place in its shard.

    Parameters
    ----------
    chunks
        ``(m, D)`` non-negative int64 grid indices of spatial chunks.
    shard_chunks
        ``(D,)`` positive int64 chunks per shard along each axis.

    Returns
    -------
    shards, slot, local
        The ``(s, D)`` distinct shard indices ``chunks // shard_chunks`` in ascending C
        order; per chunk, the row of its shard in ``shards`` and its C-order index among
        the chunks of that shard.

    Examples
    --------
    >>> chunks = np.array([[3, 1], [0, 0], [2, 1]], np.int64)
    >>> shards, slot, local = shard_slots(chunks, np.array([2, 2], np.int64))
    >>> shards.tolist(), slot.tolist(), local.tolist()
    ([[0, 0], [1, 0]], [1, 0, 1], [3, 0, 1])
    """
    return _shard_slots(chunks, shard_chunks)


@njit
def _shard_slots(chunks: I64, shard_chunks: I64) -> tuple[I64, I64, I64]:
    m, d = chunks.shape
    dims = np.zeros(d, np.int64)
    for i in range(m):
        for a in range(d):
            dims[a] = max(dims[a], chunks[i, a] // shard_chunks[a] + 1)
    flat = np.zeros(m, np.int64)
    local = np.zeros(m, np.int64)
    for i in range(m):
        for a in range(d):
            flat[i] = flat[i] * dims[a] + chunks[i, a] // shard_chunks[a]
            local[i] = local[i] * shard_chunks[a] + chunks[i, a] % shard_chunks[a]
    order = np.argsort(flat, kind="mergesort")
    slot = np.zeros(m, np.int64)
    firsts = np.zeros(m, np.int64)  # a chunk of each distinct shard, in ascending order
    s = 0
    for j in range(m):
        i = order[j]
        if j > 0 and flat[i] != flat[order[j - 1]]:
            s += 1
        if j == 0 or flat[i] != flat[order[j - 1]]:
            firsts[s] = i
        slot[i] = s
    n_shards = s + 1 if m > 0 else 0
    shards = np.zeros((n_shards, d), np.int64)
    for t in range(n_shards):
        for a in range(d):
            shards[t, a] = chunks[firsts[t], a] // shard_chunks[a]
    return shards, slot, local
