"""Neuroglancer, in headless Chromium, selects a point whose by-id index is sharded: it reads
the shard file by byte ranges (shard index, minishard index, data) and shows the point the
store holds. Skipped, saying why, when Chromium, its driver or the Python packages are
absent."""

from __future__ import annotations

import json
import re
from collections.abc import Iterator
from pathlib import Path

import pytest

import zarr_vectors as zv
from tests.precomputed import browser
from tests.precomputed.browser_stores import clustered_points
from tests.precomputed.ng_decoder import decode_by_id
from zarr_vectors.precomputed import PointAnnotations

pytestmark = [
    pytest.mark.browser,
    pytest.mark.skipif(browser.missing() is not None, reason=str(browser.missing())),
]

_NUMBER = re.compile(r"^-?\d+(\.\d+)?$")


@pytest.fixture(scope="module")
def neuroglancer() -> Iterator[browser.Neuroglancer]:
    with browser.neuroglancer_browser() as running:
        yield running


def _shown_position(text: str) -> list[float]:
    """The three numbers after the ``x``, ``y``, ``z`` labels of the selection panel."""
    lines = text.splitlines()
    at = next(i for i in range(len(lines) - 2) if lines[i : i + 3] == ["x", "y", "z"])
    numbers = [line for line in lines[at + 3 : at + 6] if _NUMBER.match(line)]
    return [float(n) for n in numbers]


def test_a_selected_point_is_read_from_its_shard(
    neuroglancer: browser.Neuroglancer, tmp_path: Path
) -> None:
    store = clustered_points(tmp_path / "points.zarr", 20_000)
    annotation = 12_345
    with zv.serve(store) as server:
        source = server.sources["annotations"]
        assert isinstance(source, PointAnnotations)
        assert source.sharding is not None  # 20,000 points: sharded by default
        state = server.neuroglancer_state()
        state["selection"] = {
            "layers": {"annotations": {"annotationId": str(annotation), "annotationSource": 0}},
            "visible": True,
        }
        # three reads of the shard: its index, the minishard index, the annotation
        shot = neuroglancer.show(
            state, (480, 360), loaded=lambda: sum("/by_id/" in r.path for r in server.requests) >= 3
        )
        by_id = [r for r in server.requests if "/by_id/" in r.path]
        text = neuroglancer.driver.find_element("tag name", "body").text
    assert shot.errors() == []
    assert {(r.path, r.status) for r in by_id} == {("/annotations/by_id/0.shard", 206)}
    plain = PointAnnotations(zv.open(store), sharded=False)
    point, _ = decode_by_id(plain.read(f"by_id/{annotation}"), json.loads(plain.read("info")))
    shown = _shown_position(text)
    assert len(shown) == 3
    assert all(abs(s - p) <= 1 for s, p in zip(shown, point[:3], strict=True))
