"""Strict inspection of the fragment records of format 1.6 (ZVFR v1, spec §6.9).

A record stands for a chunk's ``vertex_fragments`` blob, its ``link_fragments`` blob and
its ``fragment_attributes/object_id`` row; :func:`checked_record` turns it into the same
things the checks of those arrays read (two :class:`~zarr_vectors.validate.blobs.Blob` and
the owners), or reports the rule it breaks under ``L3.frag_record``.
"""

from __future__ import annotations

import struct
from dataclasses import dataclass

import numpy as np

from zarr_vectors.errors import FragmentIndexError
from zarr_vectors.format.fragment_records import (
    FRAGMENT_RECORD_HEADER_NBYTES,
    decode_fragment_record,
    fragment_record_size,
)
from zarr_vectors.validate.blobs import Blob, BlobError

__all__ = ["CheckedRecord", "checked_record", "record_size"]

_HEADER = struct.Struct("<IHHII")


@dataclass(frozen=True, slots=True)
class CheckedRecord:
    """A well-formed record, as the checks of the arrays it replaces read them."""

    vertices: Blob
    links: Blob
    owners: np.ndarray


def record_size(payload: np.ndarray) -> int:
    """``S`` of the record at the start of ``payload`` from its header (16 when the header
    is short; a damaged header is reported by :func:`checked_record`)."""
    if payload.shape[0] < FRAGMENT_RECORD_HEADER_NBYTES:
        return FRAGMENT_RECORD_HEADER_NBYTES
    _, _, flags, n_fragments, n_runs = _HEADER.unpack_from(payload.data, 0)
    return fragment_record_size(flags, n_fragments, n_runs)


def _blob(size: int, starts: np.ndarray, counts: np.ndarray) -> Blob:
    n = starts.shape[0]
    empty = np.zeros(0, np.int64)
    return Blob(size, np.ones(n, bool), starts, counts, np.zeros(1, np.int64), empty)


def checked_record(payload: np.ndarray) -> CheckedRecord:
    """Decode a chunk's record strictly (spec §6.9).

    Raises
    ------
    BlobError
        ``L3.frag_record`` with the decoder's message, for any rule the record breaks.
    """
    try:
        record = decode_fragment_record(payload)
    except FragmentIndexError as exc:
        raise BlobError("L3.frag_record", str(exc)) from exc
    size = record_size(payload)
    return CheckedRecord(
        _blob(size, *record.vertex_ranges()),
        _blob(size, *record.link_ranges()),
        record.fragment_objects(),
    )
