"""Property types and byte layout of the annotation encoding, read back by the independent
decoder."""

from __future__ import annotations

import numpy as np
from hypothesis import given, settings
from hypothesis import strategies as st

from tests.precomputed.ng_decoder import decode_by_id, decode_list
from zarr_vectors.precomputed.annotation_encoding import (
    annotation_properties,
    encode_annotations,
    encode_by_id,
    encode_list,
)

COLUMNS = {
    "flag": np.array([True, False]),
    "Colour": np.array([[1, 2, 3], [4, 5, 6]], dtype=np.uint8),
    "count": np.array([7, 65000], dtype=np.uint16),
    "delta": np.array([-3, 3], dtype=np.int8),
    "half": np.array([0.5, -2.0], dtype=np.float16),
    "id64": np.array([1, 2], dtype=np.int64),
    "vec": np.zeros((2, 2)),
    "n32": np.array([-(2**31), 2**31 - 1], dtype=np.int32),
}


def test_types_order_and_values() -> None:
    props, left = annotation_properties({k: (v.dtype, v.shape[1:]) for k, v in COLUMNS.items()})
    assert left == ["id64", "vec"]
    assert [(p.id, p.type) for p in props] == [
        ("half", "float32"), ("n32", "int32"), ("count", "uint16"),
        ("flag", "uint8"), ("a_Colour", "rgb"), ("delta", "int8"),
    ]  # fmt: skip
    info = {
        "dimensions": {"x": [1, "m"], "y": [1, "m"]},
        "annotation_type": "point",
        "properties": [p.info() for p in props],
        "relationships": [{"id": "object", "key": "by_object"}],
    }
    geometry = np.array([[1.5, 2.0], [3.0, -4.0]])
    records = encode_annotations(geometry, [COLUMNS[p.attribute] for p in props], props)
    assert records.shape[1] % 4 == 0
    rows = decode_list(encode_list(records, np.array([10, 11])), info)
    assert rows[0] == (10, (1.5, 2.0, 0.5, -(2**31), 7, 1, (1, 2, 3), -3))
    assert rows[1] == (11, (3.0, -4.0, -2.0, 2**31 - 1, 65000, 0, (4, 5, 6), 3))
    assert decode_by_id(encode_by_id(records[1], [[99, 5]]), info) == (rows[1][1], [[99, 5]])


@settings(max_examples=25, deadline=None)
@given(st.lists(st.integers(0, 255), min_size=1, max_size=5), st.integers(1, 3))
def test_records_are_padded_to_four_bytes(values: list[int], rank: int) -> None:
    props, _ = annotation_properties({"v": (np.dtype("u1"), ())})
    n = len(values)
    records = encode_annotations(np.zeros((n, rank)), [np.array(values, np.uint8)], props)
    assert records.shape == (n, 4 * rank + 4)
    assert records[:, 4 * rank].tolist() == values
    assert not records[:, 4 * rank + 1 :].any()
