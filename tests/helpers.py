"""Small helpers shared by tests."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import numpy as np
import pytest
from hypothesis import settings


def sample_sizes(default: int, slow: int) -> list[Any]:
    """Two sizes of a costly random sample, as ``pytest.mark.parametrize`` values.

    ``default`` runs in the default run; ``slow``, the full sample, is marked ``slow``
    (``pytest -m slow`` runs it). The ids say which is which (``few-5``, ``full-15``).
    """
    return [
        pytest.param(default, id=f"few-{default}"),
        pytest.param(slow, id=f"full-{slow}", marks=pytest.mark.slow),
    ]


THOROUGH = "thorough"
"""The hypothesis profile of the long run (registered in tests/conftest.py):
``pytest --hypothesis-profile=thorough`` gives every costly property its full sample."""


def examples(default: int, thorough: int) -> int:
    """``max_examples`` of a costly property: ``default`` in the default run, ``thorough``
    under the :data:`THOROUGH` hypothesis profile."""
    return thorough if settings.get_current_profile_name() == THOROUGH else default


_FNV_OFFSET = np.uint64(0xCBF29CE484222325)
_FNV_PRIME = np.uint64(0x100000001B3)


def sorted_rows(*columns: np.ndarray) -> np.ndarray:
    """Rows of the given columns as one float64 table in a canonical order (a multiset):
    two tables of the same rows, in any order, come out equal.

    Rows are ordered by a 64-bit hash of their values: one sort of one key, several times
    faster than sorting by every column on a million rows. When two different rows share
    a hash, the table is sorted lexicographically instead (the same multiset always takes
    the same branch). ``-0.0`` counts as ``0.0``.
    """
    table = np.column_stack(
        [c.reshape(c.shape[0], int(np.prod(c.shape[1:]))).astype(np.float64) for c in columns]
    )
    table += 0.0  # -0.0 becomes 0.0: equal values, equal bits
    key = row_keys(table)
    order = np.argsort(key, kind="stable")
    ordered, keys = table[order], key[order]
    same_key = np.flatnonzero(keys[1:] == keys[:-1])
    rows = ordered.view(np.uint64)
    if (rows[same_key] != rows[same_key + 1]).any():
        return table[np.lexsort(table.T[::-1])]
    return ordered


def row_keys(table: np.ndarray) -> np.ndarray:
    """A 64-bit hash of each row of a float64 table (FNV-1a over its words, mixed)."""
    bits = table.view(np.uint64)
    key = np.full(table.shape[0], _FNV_OFFSET)
    for k in range(bits.shape[1]):
        key ^= bits[:, k]
        key *= _FNV_PRIME
        key ^= key >> np.uint64(29)
    return key


def write_layout_v_store(root: Path) -> Path:
    """A tiny store laid out like zarr-vectors 0.9.2 writes it (layout V), by hand.

    The key and attribute names are those of a point cloud written by zarr-vectors 0.9.2:
    root ``attributes.zarr_vectors`` with ``zv_version``, a level group with
    ``zarr_vectors_level``, and ``vertices`` as one ``variable_length_bytes`` array over the
    chunk grid (one opaque blob per chunk; its one chunk holds 12 bytes here).
    """
    docs: dict[str, Any] = {
        "zarr.json": _group(
            {
                "zarr_vectors": {
                    "zv_version": "0.9.2",
                    "format_capabilities": [],
                    "chunk_shape": [50.0, 50.0, 50.0],
                    "bounds": [[1.0, 2.0, 3.0], [1.0, 2.0, 3.0]],
                    "geometry_types": ["point_cloud"],
                    "links_convention": "implicit_sequential",
                    "object_index_convention": "standard",
                    "cross_chunk_strategy": "explicit_links",
                },
                "multiscales": [
                    {
                        "version": "0.4",
                        "name": "default",
                        "axes": [{"name": n, "type": "space"} for n in "xyz"],
                        "datasets": [{"path": "0", "coordinateTransformations": []}],
                        "metadata": {"format": "zarr_vectors"},
                    }
                ],
            }
        ),
        "0/zarr.json": _group(
            {
                "zarr_vectors_level": {
                    "level": 0,
                    "vertex_count": 1,
                    "coarsening_method": "none",
                    "parent_level": None,
                    "arrays_present": ["vertices"],
                }
            }
        ),
        "0/vertices/zarr.json": {
            "zarr_format": 3,
            "node_type": "array",
            "shape": [1, 1, 1],
            "data_type": "variable_length_bytes",
            "chunk_grid": {"name": "regular", "configuration": {"chunk_shape": [1, 1, 1]}},
            "chunk_key_encoding": {"name": "default", "configuration": {"separator": "/"}},
            "fill_value": "",
            "codecs": [{"name": "vlen-bytes", "configuration": {}}],
            "attributes": {"zv_array": "vertices"},
        },
    }
    for key, doc in docs.items():
        (root / key).parent.mkdir(parents=True, exist_ok=True)
        (root / key).write_text(json.dumps(doc))
    blob = root / "0" / "vertices" / "c" / "0" / "0" / "0"
    blob.parent.mkdir(parents=True)
    blob.write_bytes(np.array([1, 2, 3], np.float32).tobytes())
    return root


def _group(attributes: dict[str, Any]) -> dict[str, Any]:
    return {"zarr_format": 3, "node_type": "group", "attributes": attributes}


ROOT_DOCUMENTS = ("zarr.json", ".zattrs")


def without_commit(key: str, raw: bytes | None) -> object:
    """``raw`` as compared between two writes of the same store: the root documents
    parsed, without their ``commit`` record (a fresh id per commit, spec §3.1)."""
    if key not in ROOT_DOCUMENTS or raw is None:
        return raw
    doc = json.loads(raw)
    attrs = doc.get("attributes", doc) if isinstance(doc, dict) else {}
    if isinstance(attrs, dict):
        attrs.pop("commit", None)
    return doc


def raw_fragments(group: Any, idx: tuple[int, ...]) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """Per fragment of level-0 chunk ``idx`` of a zarr ``group`` (read as plain Zarr): its
    vertex rows, its ``links/0`` rows and its object, from the fragment record (format 1.6,
    spec §6.9) or from ``vertex_fragments``, ``link_fragments`` and
    ``fragment_attributes/object_id`` (older formats)."""
    from zarr_vectors.format.fragment_decoding import decode_fragment_index
    from zarr_vectors.format.fragment_records import decode_fragment_record

    if "fragment_records" in group["0"]:
        record = decode_fragment_record(np.asarray(group["0/fragment_records"][idx]).tobytes())
        return record.vertex_counts, record.link_counts, record.fragment_objects()
    blobs = [
        decode_fragment_index(np.asarray(group[f"0/{name}"][idx]).tobytes())
        for name in ("vertex_fragments", "link_fragments")
    ]
    (_, sizes), (_, link_sizes) = (b.dense_ranges() for b in blobs)
    owners = np.asarray(group["0/fragment_attributes/object_id"][idx])[: sizes.shape[0]]
    return sizes, link_sizes, owners.astype(np.int64)
