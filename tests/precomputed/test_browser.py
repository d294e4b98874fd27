"""Neuroglancer, in headless Chromium, shows what ``zv.serve`` serves.

Each test serves a store, opens a viewer state pointing at the server (the bundled client of
the ``neuroglancer`` package), waits for the client to ask for annotations, and checks the
screenshot (not blank), the browser's console (no error) and the server's log (every request
answered 200, no spatial cell above its level's annotation limit). Skipped, saying why, when
Chromium, its driver or the Python packages are absent. With ``ZARR_VECTORS_SCREENSHOTS=DIR``
the screenshots are also written to DIR (the README's are in ``docs/images``).

Out of the default run (marker ``browser``, pyproject's addopts): ``pytest -m browser -n 0
tests/precomputed`` runs them; .ci/run does, after the default run (the million points
included; only the check of the blank measure is ``slow``).
"""

from __future__ import annotations

import json
import os
import re
import time
from collections.abc import Callable, Iterator
from pathlib import Path

import numpy as np
import pytest

import zarr_vectors as zv
from tests.precomputed import browser
from tests.precomputed.browser_stores import clustered_points, fibre_bundle, two_meshes
from tests.precomputed.ng_decoder import decode_by_id
from zarr_vectors.precomputed import PointAnnotations, PrecomputedServer
from zarr_vectors.precomputed.annotation_files import DEFAULT_LIMIT

pytestmark = [
    pytest.mark.browser,
    pytest.mark.skipif(browser.missing() is not None, reason=str(browser.missing())),
]

SIZE = (480, 360)
DRAWN_AT_LEAST = 0.02
"""A shown layer covers more than 2 % of the view; the empty view (axes only) far less."""
SCREENSHOTS_ENV = "ZARR_VECTORS_SCREENSHOTS"
SHADER = """
void main() {
  setColor(vec4(1.0, 0.85, 0.2, 0.8));
  setPointMarkerSize(2.0);
  setPointMarkerBorderWidth(0.0);
  setEndpointMarkerSize(0.0);
  setLineWidth(1.5);
}
"""
"""Small markers, lines without end points: the structure shows, not the markers."""
ANNOTATION_SPACING = 3.0
"""Pixels between annotations drawn in 3-D (Neuroglancer's default 10 draws few points)."""
_SPATIAL = re.compile(r"^/annotations/spatial(\d+)/")
_FRAGMENT = re.compile(r"^/meshes/\d+$")
_NUMBER = re.compile(r"^-?\d+(\.\d+)?$")


@pytest.fixture(scope="module")
def neuroglancer() -> Iterator[browser.Neuroglancer]:
    with browser.neuroglancer_browser() as running:
        yield running


def _annotation_requests(server: PrecomputedServer) -> list[str]:
    return [r.path for r in server.requests if _SPATIAL.match(r.path)]


def settled(
    server: PrecomputedServer, quiet: float = 1.0, pattern: re.Pattern[str] | None = None
) -> Callable[[], bool]:
    """True once the client asked for data (annotation cells, or paths ``pattern`` matches)
    then for nothing for ``quiet`` s (Neuroglancer's screenshot waits for chunks, not for
    every spatial-index cell)."""
    wanted = pattern or _SPATIAL
    seen = {"count": -1, "since": time.monotonic()}

    def done() -> bool:
        count = len(server.requests)
        if count != seen["count"]:
            seen["count"], seen["since"] = count, time.monotonic()
        asked = any(wanted.match(r.path) for r in server.requests)
        return asked and time.monotonic() - seen["since"] > quiet

    return done


def show(neuroglancer: browser.Neuroglancer, server: PrecomputedServer) -> browser.Shot:
    """The server's layers in the browser, checked: no console error, every request 200,
    every spatial cell within its level's limit."""
    state = server.neuroglancer_state()
    for layer in state["layers"]:
        if layer["type"] == "annotation":
            layer["shader"] = SHADER
            layer["projectionAnnotationSpacing"] = ANNOTATION_SPACING
    state["showAxisLines"] = False
    shot = neuroglancer.show(state, SIZE, loaded=settled(server))
    assert shot.errors() == []
    assert [r for r in server.requests if r.status != 200] == []
    source = server.sources["annotations"]
    limits = [level["limit"] for level in json.loads(source.read("info"))["spatial"]]
    for path in _annotation_requests(server):
        count = int(np.frombuffer(source.read(path.split("/", 2)[2])[:8], "<u8")[0])
        assert count <= limits[int(_SPATIAL.match(path).group(1))]  # type: ignore[union-attr]
    return shot


def save(shot: browser.Shot, name: str) -> None:
    """Write the screenshot to $ZARR_VECTORS_SCREENSHOTS/<name>.png when that is set."""
    folder = os.environ.get(SCREENSHOTS_ENV)
    if folder:
        Path(folder).mkdir(parents=True, exist_ok=True)
        (Path(folder) / f"{name}.png").write_bytes(shot.png)


@pytest.mark.slow  # checks the measure, not the library: kept out of the default run
def test_an_empty_view_counts_as_blank(neuroglancer: browser.Neuroglancer) -> None:
    shot = neuroglancer.show({"layout": "3d", "layers": []}, SIZE, loaded=lambda: True)
    assert browser.drawn_fraction(shot.pixels()) < DRAWN_AT_LEAST / 4


def _shown(neuroglancer: browser.Neuroglancer, store: Path, name: str) -> float:
    with zv.serve(store) as server:
        shot = show(neuroglancer, server)
    save(shot, name)
    assert shot.pixels().shape == (SIZE[1], SIZE[0], 3)
    return browser.drawn_fraction(shot.pixels())


def test_a_point_cloud_with_levels_is_shown(
    neuroglancer: browser.Neuroglancer, tmp_path: Path
) -> None:
    store = clustered_points(tmp_path / "points.zarr", 20_000)
    assert len(zv.open(store).levels) > 1
    assert _shown(neuroglancer, store, "points") > DRAWN_AT_LEAST


def test_streamlines_are_shown(neuroglancer: browser.Neuroglancer, tmp_path: Path) -> None:
    store = fibre_bundle(tmp_path / "streamlines.zarr", 150)
    assert _shown(neuroglancer, store, "streamlines") > DRAWN_AT_LEAST


def test_meshes_are_shown(neuroglancer: browser.Neuroglancer, tmp_path: Path) -> None:
    """Multi-resolution meshes: Neuroglancer reads their fragments by byte range (206). The
    state the server prints selects every object, so the layer shows them as it opens."""
    with zv.serve(two_meshes(tmp_path / "meshes.zarr")) as server:
        state = server.neuroglancer_state()
        ids = state["layers"][0]["segments"]
        state["showAxisLines"] = False
        shot = neuroglancer.show(state, SIZE, loaded=settled(server, pattern=_FRAGMENT))
    save(shot, "meshes")
    assert ids == ["1", "2"]
    assert shot.errors() == []
    assert {r.status for r in server.requests} == {200, 206}
    assert browser.drawn_fraction(shot.pixels()) > DRAWN_AT_LEAST / 2


def test_a_million_points_are_shown(neuroglancer: browser.Neuroglancer, tmp_path: Path) -> None:
    """10^6 points with levels (issue 38): chunks small enough that every cell of every
    spatial level holds at most the default annotation limit, which ``show`` checks of
    every cell the client asked for."""
    store = clustered_points(tmp_path / "million.zarr", 1_000_000, chunks=16)
    assert len(zv.open(store).levels) > 2
    info = json.loads(PointAnnotations(zv.open(store)).read("info"))
    assert len(info["spatial"]) > 2
    assert all(level["limit"] <= DEFAULT_LIMIT for level in info["spatial"])
    assert _shown(neuroglancer, store, "million-points") > DRAWN_AT_LEAST


def _shown_position(text: str) -> list[float] | None:
    """The three numbers after the ``x``, ``y``, ``z`` labels of the selection panel (None
    while the panel shows no position yet)."""
    lines = text.splitlines()
    at = next((i for i in range(len(lines) - 2) if lines[i : i + 3] == ["x", "y", "z"]), None)
    return None if at is None else [float(n) for n in lines[at + 3 : at + 6] if _NUMBER.match(n)]


def _selected_position(neuroglancer: browser.Neuroglancer, timeout: float = 30.0) -> list[float]:
    """The position the selection panel shows, once it shows three numbers: the panel fills
    in when the annotation's bytes have been parsed, which may come after the screenshot (it
    said "Loading..." once in CI). What it shows at ``timeout`` seconds otherwise."""
    deadline = time.monotonic() + timeout
    while True:
        text = neuroglancer.driver.find_element("tag name", "body").text
        shown = _shown_position(text) or []
        if len(shown) == 3 or time.monotonic() > deadline:
            return shown
        time.sleep(0.05)


def test_a_selected_point_is_read_from_its_shard(
    neuroglancer: browser.Neuroglancer, tmp_path: Path
) -> None:
    """A by-id index sharded (more than ``UNSHARDED_MAX`` points): Neuroglancer reads the
    shard by byte ranges (its index, the minishard index, the annotation) and shows the
    point the store holds."""
    store = clustered_points(tmp_path / "points.zarr", 5_000)
    annotation = 4_321
    with zv.serve(store) as server:
        source = server.sources["annotations"]
        assert isinstance(source, PointAnnotations)
        assert source.sharding is not None
        state = server.neuroglancer_state()
        state["selection"] = {
            "layers": {"annotations": {"annotationId": str(annotation), "annotationSource": 0}},
            "visible": True,
        }
        shot = neuroglancer.show(
            state, SIZE, loaded=lambda: sum("/by_id/" in r.path for r in server.requests) >= 3
        )
        shown = _selected_position(neuroglancer)
        by_id = [r for r in server.requests if "/by_id/" in r.path]
    assert shot.errors() == []
    assert {(r.path, r.status) for r in by_id} == {("/annotations/by_id/0.shard", 206)}
    plain = PointAnnotations(zv.open(store), sharded=False)
    point, _ = decode_by_id(plain.read(f"by_id/{annotation}"), json.loads(plain.read("info")))
    assert len(shown) == 3
    assert all(abs(s - p) <= 1 for s, p in zip(shown, point[:3], strict=True))
