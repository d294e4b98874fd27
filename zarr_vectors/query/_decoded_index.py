"""The manifests of an object level's objects, decoded once per open store.

A read of objects needs their fragment references (spec §7.6), decoded from the
``object_index`` that an :class:`~zarr_vectors.query.object_queries.ObjectReader` keeps
whole. :class:`DecodedIndex` keeps what was decoded, object by object, so a warm box query
gathers its objects' references instead of decoding their manifests again. Each manifest
is decoded (and so checked, spec §7.3) the first time it is asked for; a damaged one raises
then, as before. It is store data of the handle's version, dropped with the reader (a
handle that reopens a changed store makes new readers), never an answer.
"""

from __future__ import annotations

import threading
from typing import Any

import numpy as np

from zarr_vectors.format.manifest import decode_object_index_bulk
from zarr_vectors.kernels.distinct import distinct_ascending
from zarr_vectors.kernels.reference_gather import gather_references

__all__ = ["DECODED_INDEX_BYTES", "DecodedIndex"]

DECODED_INDEX_BYTES = 64 * 2**20
"""Bytes of decoded references past which no object is added (its manifest is then
decoded at every read, as a read by range of a bounded reader does)."""

Refs = tuple[np.ndarray, np.ndarray, np.ndarray]
"""``(ref_object, ref_chunk, ref_fragment)`` as
:func:`~zarr_vectors.format.manifest.decode_object_index_bulk` returns them."""


class DecodedIndex:
    """The decoded references of the objects asked so far.

    Object ``k``'s ``count[k]`` references are rows ``first[k]`` on (-1 until decoded) of
    ``chunk`` (``(cap, D)``) and ``fragment``.

    Parameters
    ----------
    n_objects, ndim
        Objects of the level and chunk coordinates ``D``.

    Examples
    --------
    >>> from zarr_vectors.format.manifest import encode_object_index_bulk
    >>> data, offsets = encode_object_index_bulk(
    ...     np.array([0, 1, 1]), np.array([[0, 0], [1, 0], [1, 1]]), np.array([2, 0, 5]), 2)
    >>> index = DecodedIndex(2, 2)
    >>> obj, chunk, fragment = index.references(data, offsets, np.array([1, 0]))
    >>> obj.tolist(), chunk.tolist(), fragment.tolist()
    ([0, 0, 1], [[1, 0], [1, 1], [0, 0]], [0, 5, 2])
    """

    def __init__(self, n_objects: int, ndim: int) -> None:
        self.first = np.full(n_objects, -1, dtype=np.int64)
        self.count = np.zeros(n_objects, dtype=np.int64)
        self.chunk = np.empty((0, ndim), dtype=np.int64)
        self.fragment = np.empty(0, dtype=np.int64)
        self.used = 0
        self._lock = threading.Lock()

    def __getstate__(self) -> dict[str, Any]:
        """The state to pickle (dask ships readers): a copy starts empty."""
        return {"n_objects": self.first.shape[0], "ndim": self.chunk.shape[1]}

    def __setstate__(self, state: dict[str, Any]) -> None:
        self.__init__(state["n_objects"], state["ndim"])  # type: ignore[misc]

    def references(self, data: np.ndarray, offsets: np.ndarray, dense: np.ndarray) -> Refs:
        """The references of the objects ``dense`` (dense ids, any order) from the level's
        ``object_index`` (``data``, ``offsets``): those of objects not decoded yet are
        decoded now and kept (within :data:`DECODED_INDEX_BYTES`).

        Raises
        ------
        ManifestError
            When the manifest of an object not decoded yet is damaged, or an id is not an
            object of the index (see :func:`decode_object_index_bulk`).
        """
        ndim = self.chunk.shape[1]
        if dense.shape[0] and (int(dense.min()) < 0 or int(dense.max()) >= self.first.shape[0]):
            return decode_object_index_bulk(data, offsets, dense, ndim)  # raises, naming it
        with self._lock:
            unknown = self.first[dense] < 0
            n_unknown = np.count_nonzero(unknown)
            if n_unknown == dense.shape[0]:  # a first read of these objects: as decoded
                refs = decode_object_index_bulk(data, offsets, dense, ndim)
                self._keep(dense, refs)
                return refs
            if n_unknown:
                new = distinct_ascending(dense[unknown])
                if not self._keep(new, decode_object_index_bulk(data, offsets, new, ndim)):
                    return decode_object_index_bulk(data, offsets, dense, ndim)
            return gather_references(self.first, self.count, self.chunk, self.fragment, dense)

    def unknown(self, dense: np.ndarray) -> np.ndarray:
        """The distinct ids among ``dense`` (dense ids of the level) not decoded yet,
        ascending."""
        with self._lock:
            return distinct_ascending(dense[self.first[dense] < 0])

    def keep(self, ids: np.ndarray, refs: Refs) -> bool:
        """Keep the references ``refs`` of the distinct objects ``ids``, decoded by the
        caller (``refs[0]``: positions in ``ids``); False, with nothing kept, when an id is
        decoded already or they would pass :data:`DECODED_INDEX_BYTES`."""
        with self._lock:
            return not bool((self.first[ids] >= 0).any()) and self._keep(ids, refs)

    def gather(self, dense: np.ndarray) -> Refs | None:
        """The kept references of the objects ``dense`` (any order), as :meth:`references`
        gives them; None when one of them is not decoded."""
        with self._lock:
            if bool((self.first[dense] < 0).any()):
                return None
            return gather_references(self.first, self.count, self.chunk, self.fragment, dense)

    def _keep(self, ids: np.ndarray, refs: Refs) -> bool:
        """Keep (copied) the decoded references ``refs`` of the objects ``ids`` (not
        decoded before; an id given twice is kept twice); False, with nothing kept, when
        they would pass :data:`DECODED_INDEX_BYTES`."""
        ref_object, chunk, fragment = refs
        need = self.used + fragment.shape[0]
        if need * (chunk.shape[1] + 1) * 8 > DECODED_INDEX_BYTES:
            return False
        if need > self.fragment.shape[0]:
            cap = max(need, 2 * self.fragment.shape[0])
            self.chunk = _grown(self.chunk[: self.used], cap)
            self.fragment = _grown(self.fragment[: self.used], cap)
        self.chunk[self.used : need] = chunk
        self.fragment[self.used : need] = fragment
        sizes = np.bincount(ref_object, minlength=ids.shape[0]).astype(np.int64)
        self.count[ids] = sizes
        self.first[ids] = self.used + np.cumsum(sizes) - sizes
        self.used = need
        return True


def _grown(table: np.ndarray, rows: int) -> np.ndarray:
    """``table`` copied into a table of ``rows`` rows (the rest uninitialised)."""
    out = np.empty((rows, *table.shape[1:]), dtype=table.dtype)
    out[: table.shape[0]] = table
    return out
