"""Neuroglancer, in headless Chromium, shows what the precomputed server serves.

Each test opens a viewer state pointing at a :class:`PrecomputedServer`, waits for the
client to ask for the data, and checks the screenshot (not blank), the browser's console (no
error) and the server's log (every request answered 200). Skipped, saying why, when Chromium,
its driver or the Python packages are absent. With ``ZARR_VECTORS_SCREENSHOTS=DIR`` the
screenshots are also written to DIR (the README's come from ``docs/images``).
"""

from __future__ import annotations

import os
from collections.abc import Iterator
from pathlib import Path

import pytest

from tests.precomputed import browser
from tests.precomputed.fake_sources import random_points, random_segments
from zarr_vectors.precomputed.server import PrecomputedServer

pytestmark = [
    pytest.mark.browser,
    pytest.mark.skipif(browser.missing() is not None, reason=str(browser.missing())),
]

SIZE = (480, 360)
DRAWN_AT_LEAST = 0.02
"""A shown layer covers more than 2 % of the view; the empty view (axes only) far less."""
SCREENSHOTS_ENV = "ZARR_VECTORS_SCREENSHOTS"


@pytest.fixture(scope="module")
def neuroglancer() -> Iterator[browser.Neuroglancer]:
    with browser.neuroglancer_browser() as running:
        yield running


def asked_for_data(server: PrecomputedServer) -> bool:
    """The client asked for more than ``info`` files (it resolved every source)."""
    return any(not r.path.endswith("/info") for r in server.requests)


def show(neuroglancer: browser.Neuroglancer, server: PrecomputedServer) -> browser.Shot:
    shot = neuroglancer.show(
        server.neuroglancer_state(), SIZE, loaded=lambda: asked_for_data(server)
    )
    assert shot.errors() == []
    assert [r for r in server.requests if r.status != 200] == []
    return shot


def save(shot: browser.Shot, name: str) -> None:
    """Write the screenshot to $ZARR_VECTORS_SCREENSHOTS/<name>.png when that is set."""
    folder = os.environ.get(SCREENSHOTS_ENV)
    if folder:
        Path(folder).mkdir(parents=True, exist_ok=True)
        (Path(folder) / f"{name}.png").write_bytes(shot.png)


def test_an_empty_view_counts_as_blank(neuroglancer: browser.Neuroglancer) -> None:
    shot = neuroglancer.show({"layout": "3d", "layers": []}, SIZE, loaded=lambda: True)
    assert browser.drawn_fraction(shot.pixels()) < DRAWN_AT_LEAST / 4


def test_points_are_shown(neuroglancer: browser.Neuroglancer) -> None:
    with PrecomputedServer({"points": random_points("points", 2000)}) as server:
        shot = show(neuroglancer, server)
    assert shot.pixels().shape == (SIZE[1], SIZE[0], 3)
    assert browser.drawn_fraction(shot.pixels()) > DRAWN_AT_LEAST


def test_line_segments_are_shown(neuroglancer: browser.Neuroglancer) -> None:
    with PrecomputedServer({"lines": random_segments("lines", 1000)}) as server:
        shot = show(neuroglancer, server)
    assert browser.drawn_fraction(shot.pixels()) > DRAWN_AT_LEAST
