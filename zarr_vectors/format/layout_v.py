"""Byte layouts of layout V (zarr-vectors 0.9.x) that have no counterpart here (spec §14).

A layout-V level keeps its connectivity in ``links/<delta>/<offsets>/``: one per-chunk
array per combination of chunk offsets of a link's endpoints. A cell of the intra-chunk
array (all offsets zero, delta 0) is a flat run of int64 rows; every other cell is framed:
``int64 K``, ``int64 byte_offset[K]``, then the rows. A row is ``[perm?, v_0, ..., v_L-1]``:
chunk-local vertex rows of the endpoints, endpoint ``k`` in chunk ``source + offset_k``,
led by the Lehmer code of the permutation that restores the input order when the array's
``has_perm`` is set. No zarr here: the cells are bytes fetched by
:mod:`zarr_vectors.store.layout_v`.
"""

from __future__ import annotations

import math

import numpy as np

from zarr_vectors.errors import MetadataError

__all__ = [
    "decode_link_cell",
    "encode_link_cell",
    "lehmer_codes",
    "lehmer_permutation",
    "parse_offsets",
    "restore_input_order",
]


def parse_offsets(segment: str, ndim: int) -> np.ndarray:
    """The chunk offsets of a link array's name: ``"0.0.0_+1.0.0"`` -> ``[[0,0,0],[1,0,0]]``.

    Raises
    ------
    MetadataError
        When the name is not ``L - 1`` offsets of ``ndim`` signed integers joined by ``_``.

    Examples
    --------
    >>> from zarr_vectors.format.layout_v import parse_offsets
    >>> parse_offsets("+1.-1.0", 3).tolist()
    [[1, -1, 0]]
    >>> parse_offsets("0.0.0_0.+1.0", 3).tolist()
    [[0, 0, 0], [0, 1, 0]]
    """
    try:
        rows = [[int(c) for c in part.split(".")] for part in segment.split("_")]
    except ValueError as exc:
        raise MetadataError(
            f"link array name {segment!r} is not chunk offsets such as '0.0.+1' (spec §14)"
        ) from exc
    if any(len(r) != ndim for r in rows):
        raise MetadataError(f"link array name {segment!r} does not give {ndim} offsets per link")
    return np.asarray(rows, dtype=np.int64).reshape(len(rows), ndim)


def decode_link_cell(blob: bytes, width: int, *, framed: bool) -> np.ndarray:
    """The rows of one link cell as an ``(n, width)`` int64 array.

    Parameters
    ----------
    blob
        The cell's bytes.
    width
        Row width: the link's endpoints, plus one when the array has a ``perm`` column.
    framed
        Whether the cell starts with the ``K, byte_offset[K]`` frame (every cell but the
        intra-chunk array's); the rows of all ``K`` groups are returned in order.

    Raises
    ------
    MetadataError
        When the bytes are not whole rows (or the frame is cut short).

    Examples
    --------
    >>> import numpy as np
    >>> from zarr_vectors.format.layout_v import decode_link_cell
    >>> blob = np.array([1, 0, 0, 2, 0], dtype="<i8").tobytes()
    >>> decode_link_cell(blob, 3, framed=True).tolist()
    [[0, 2, 0]]
    """
    words = np.frombuffer(blob, dtype="<i8") if len(blob) % 8 == 0 else None
    if words is None:
        raise MetadataError(f"a link cell of {len(blob)} bytes is not int64 rows (spec §14)")
    if framed:
        if words.size < 1 or words.size < 1 + int(words[0]):
            raise MetadataError("a framed link cell is shorter than its frame (spec §14)")
        words = words[1 + int(words[0]) :]
    if words.size % width:
        raise MetadataError(f"a link cell of {words.size} int64 is not rows of {width} (spec §14)")
    return words.reshape(-1, width).astype(np.int64)


def lehmer_permutation(code: int, length: int) -> tuple[int, ...]:
    """The permutation ``sigma`` of ``length`` items whose Lehmer code is ``code``.

    Examples
    --------
    >>> from zarr_vectors.format.layout_v import lehmer_permutation
    >>> lehmer_permutation(0, 2), lehmer_permutation(1, 2), lehmer_permutation(1, 3)
    ((0, 1), (1, 0), (0, 2, 1))
    """
    free = list(range(length))
    out = []
    for i in range(length):
        step = math.factorial(length - 1 - i)
        out.append(free.pop(code // step))
        code %= step
    return tuple(out)


def restore_input_order(stored: np.ndarray, codes: np.ndarray) -> np.ndarray:
    """Endpoint columns back in input order: ``input[sigma[k]] = stored[k]`` per row.

    Parameters
    ----------
    stored
        ``(n, L)`` endpoint values (any per-endpoint quantity) in stored order.
    codes
        ``(n,)`` Lehmer codes (the ``perm`` column).

    Examples
    --------
    >>> import numpy as np
    >>> from zarr_vectors.format.layout_v import restore_input_order
    >>> restore_input_order(np.array([[5, 7], [5, 7]]), np.array([0, 1])).tolist()
    [[5, 7], [7, 5]]
    """
    out = np.empty_like(stored)
    length = stored.shape[1]
    for i, code in enumerate(np.asarray(codes).tolist()):
        out[i, list(lehmer_permutation(int(code), length))] = stored[i]
    return out


def lehmer_codes(sigma: np.ndarray) -> np.ndarray:
    """The Lehmer code of each row of ``sigma``, ``(n, L)`` permutations of ``0..L-1``.

    The inverse of :func:`lehmer_permutation`, row by row: the ``perm`` column of a link
    whose stored endpoint ``k`` is input endpoint ``sigma[k]``.

    Examples
    --------
    >>> import numpy as np
    >>> from zarr_vectors.format.layout_v import lehmer_codes
    >>> lehmer_codes(np.array([[0, 1], [1, 0]])).tolist()
    [0, 1]
    >>> lehmer_codes(np.array([[0, 2, 1], [2, 1, 0]])).tolist()
    [1, 5]
    """
    sigma = np.asarray(sigma, dtype=np.int64)
    length = sigma.shape[1]
    radix = length ** np.arange(length - 1, -1, -1, dtype=np.int64)
    table = np.zeros(length**length, dtype=np.int64)
    for code in range(math.factorial(length)):
        table[np.dot(lehmer_permutation(code, length), radix)] = code
    out: np.ndarray = table[sigma @ radix]
    return out


def encode_link_cell(rows: np.ndarray, *, framed: bool) -> bytes:
    """The bytes of one link cell holding ``rows`` (``(n, width)`` integers): flat int64
    rows, or framed as one group (``K = 1``, ``byte_offset[0] = 0``).

    Examples
    --------
    >>> import numpy as np
    >>> from zarr_vectors.format.layout_v import decode_link_cell, encode_link_cell
    >>> blob = encode_link_cell(np.array([[0, 2, 0]]), framed=True)
    >>> len(blob), decode_link_cell(blob, 3, framed=True).tolist()
    (40, [[0, 2, 0]])
    """
    words = np.asarray(rows, dtype="<i8").ravel()
    if framed:
        words = np.concatenate([np.array([1, 0], dtype="<i8"), words])
    return words.tobytes()
