"""Fragment blobs held unparsed (read.held_blobs): joined into one buffer when a read asks
for blobs held from several fetches, in any order."""

from __future__ import annotations

import numpy as np
from hypothesis import given, settings
from hypothesis import strategies as st

from zarr_vectors.read.held_blobs import HeldBlob, HeldBlobs, held_blobs


def test_held_blobs_are_named_tuples_of_their_fields() -> None:
    buffer = np.arange(6, dtype=np.uint8)
    made = held_blobs(buffer, [0, 2], [2, 6], ["k0", "k1"])
    assert made == [HeldBlob(buffer, 0, 2, "k0"), HeldBlob(buffer, 2, 6, "k1")]
    assert all(type(b) is HeldBlob and b.buffer is buffer for b in made)
    assert made[1].key == "k1"


@settings(max_examples=60, deadline=None)
@given(
    st.lists(st.integers(0, 9), min_size=1, max_size=12),
    st.lists(st.integers(0, 9), min_size=1, max_size=12),
    st.randoms(use_true_random=False),
)
def test_joined_blobs_of_two_fetches_are_their_bytes_in_the_order_asked(
    first: list[int], second: list[int], rng: object
) -> None:
    """Blobs held from two fetches (two buffers, back to back in each), asked in any
    order: one buffer holding each blob's bytes where its bounds say; held there after."""
    held = HeldBlobs()
    want: dict[tuple[int, ...], bytes] = {}
    for fetch, sizes in enumerate((first, second)):
        data = np.random.default_rng(fetch).integers(0, 256, sum(sizes), dtype=np.uint8)
        edges = np.cumsum([0, *sizes]).tolist()
        chunks = [(fetch, i) for i in range(len(sizes))]
        held.keep("b", chunks, held_blobs(data, edges[:-1], edges[1:], map(str, chunks)))
        want.update(
            {c: data[a:z].tobytes() for c, a, z in zip(chunks, edges, edges[1:], strict=False)}
        )
    asked = list(want)
    rng.shuffle(asked)  # type: ignore[attr-defined]
    buffer, begins, ends, keys = held.joined("b", asked)
    assert [buffer[a:z].tobytes() for a, z in zip(begins.tolist(), ends.tolist(), strict=True)] == [
        want[c] for c in asked
    ]
    assert keys == [str(c) for c in asked]
    assert all(held.get("b", c).buffer is buffer for c in asked)
    again = held.joined("b", asked[::-1])
    assert again[0] is buffer
