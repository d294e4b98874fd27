"""``zv.serve`` and ``zarr-vectors serve``: a store served until closed, Ctrl-C or SIGTERM."""

from __future__ import annotations

import json
import signal
import urllib.parse
import urllib.request
from collections.abc import Iterator
from pathlib import Path

import numpy as np
import pytest

import zarr_vectors as zv
from zarr_vectors.cli import EXIT_INTERRUPTED, EXIT_UNREADABLE, main
from zarr_vectors.errors import InvalidInputError
from zarr_vectors.precomputed import PortInUseError, PrecomputedServer
from zarr_vectors.precomputed.links import neuroglancer_state, selection_notes


@pytest.fixture(autouse=True)
def ctrl_c_raises() -> Iterator[None]:
    """SIGINT raises KeyboardInterrupt, as in an interactive shell, whatever the test process
    inherited: a process started in the background by a non-interactive shell ignores SIGINT,
    and a raised SIGINT would then leave the command waiting forever."""
    before = signal.signal(signal.SIGINT, signal.default_int_handler)
    yield
    signal.signal(signal.SIGINT, before)


@pytest.fixture(scope="module")
def points(tmp_path_factory: pytest.TempPathFactory) -> Path:
    path = tmp_path_factory.mktemp("serve") / "points.zarr"
    xyz = np.random.default_rng(3).uniform(0, 100, (500, 3))
    zv.write_points(path, xyz, chunk_shape=25.0)
    return path


def _fetch(url: str) -> bytes:
    with urllib.request.urlopen(url, timeout=10) as answer:
        return bytes(answer.read())


def test_serve_answers_from_one_open_store(points: Path) -> None:
    store = zv.open(points)
    with zv.serve(store) as server:
        info = json.loads(_fetch(f"{server.url}/annotations/info"))
        assert server.sources["annotations"].store is store  # type: ignore[attr-defined]
    assert info["@type"] == "neuroglancer_annotations_v1"
    assert [r.status for r in server.requests] == [200]


def test_a_store_without_geometry_is_refused(tmp_path: Path) -> None:
    path = tmp_path / "empty.zarr"
    zv.write_points(path, np.zeros((0, 3)), chunk_shape=1.0)
    with pytest.raises(InvalidInputError, match="nothing Neuroglancer can show"):
        zv.serve(path)


def test_the_command_prints_a_link_and_ends_on_ctrl_c(
    points: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    """The server answers while the command waits; a real SIGINT ends it with 130."""
    seen: list[bytes] = []
    wait = PrecomputedServer.wait

    def fetch_then_interrupt(server: PrecomputedServer, poll: float = 0.5) -> None:
        seen.append(_fetch(f"{server.url}/annotations/info"))
        signal.raise_signal(signal.SIGINT)
        wait(server, poll)

    monkeypatch.setattr(PrecomputedServer, "wait", fetch_then_interrupt)
    assert main(["serve", str(points)]) == EXIT_INTERRUPTED
    out, err = capsys.readouterr()
    first, link = out.splitlines()
    url = first.split(" at ")[1].split("/ ")[0]
    state = json.loads(urllib.parse.unquote(link.split("#!", 1)[1]))
    assert link.startswith(f"Neuroglancer: {zv.precomputed.NEUROGLANCER_CLIENT}#!")
    assert state["layers"] == [
        {"type": "annotation", "source": f"precomputed://{url}/annotations", "name": "annotations"}
    ]
    assert json.loads(seen[0])["@type"] == "neuroglancer_annotations_v1"
    assert err.splitlines() == [
        f"200 GET /annotations/info {len(seen[0])} B",
        "zarr-vectors: error: interrupted",
    ]
    with pytest.raises(urllib.error.URLError):  # closed: the port is free again
        _fetch(f"{url}/annotations/info")


def test_a_taken_port_exits_2_saying_so(points: Path, capsys: pytest.CaptureFixture[str]) -> None:
    with zv.serve(points) as running:
        code = main(["serve", str(points), "--port", str(running.port), "--quiet"])
        with pytest.raises(PortInUseError):
            zv.serve(points, port=running.port)
    assert code == EXIT_UNREADABLE
    assert f"port {running.port} on 127.0.0.1 is in use" in capsys.readouterr().err


@pytest.mark.parametrize("port", ["-1", "65536", "http"])
def test_a_bad_port_is_a_usage_error(port: str, capsys: pytest.CaptureFixture[str]) -> None:
    with pytest.raises(SystemExit) as stopped:
        main(["serve", "store.zarr", "--port", port])
    assert stopped.value.code == 2
    assert "expected a port from 0 to 65535" in capsys.readouterr().err


def _printed_state(out: str) -> dict[str, object]:
    link = next(line for line in out.splitlines() if line.startswith("Neuroglancer: "))
    return json.loads(urllib.parse.unquote(link.split("#!", 1)[1]))  # type: ignore[no-any-return]


def _serve_until(signum: int, argv: list[str], monkeypatch: pytest.MonkeyPatch) -> int:
    """Run ``zarr-vectors serve`` and raise the signal ``signum`` once it waits."""
    wait = PrecomputedServer.wait

    def signal_then_wait(server: PrecomputedServer, poll: float = 0.5) -> None:
        signal.raise_signal(signum)
        wait(server, poll)

    monkeypatch.setattr(PrecomputedServer, "wait", signal_then_wait)
    return main(["serve", *argv])


def test_sigterm_ends_the_command_as_ctrl_c_does(
    points: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    """A real SIGTERM closes the server (the port is free), says so and exits 130; the
    handler the process had is back afterwards."""
    before = signal.getsignal(signal.SIGTERM)
    assert _serve_until(signal.SIGTERM, [str(points), "--quiet"], monkeypatch) == EXIT_INTERRUPTED
    out, err = capsys.readouterr()
    assert err.splitlines() == ["zarr-vectors: error: interrupted"]
    url = out.splitlines()[0].split(" at ")[1].split("/ ")[0]
    with pytest.raises(urllib.error.URLError):
        _fetch(f"{url}/annotations/info")
    assert signal.getsignal(signal.SIGTERM) is before


def test_the_printed_link_selects_the_objects_of_skeleton_layers(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    path = tmp_path / "lines.zarr"
    lines = [np.array([[i, 0, 0], [i, 5, 5.0]]) for i in range(3)]
    zv.write_polylines(path, lines, chunk_shape=10.0, object_ids=[12, 3, 7])
    assert _serve_until(signal.SIGINT, [str(path), "--quiet"], monkeypatch) == EXIT_INTERRUPTED
    out = capsys.readouterr().out
    layers = {layer["name"]: layer for layer in _printed_state(out)["layers"]}  # type: ignore[attr-defined]
    assert layers["skeletons"]["segments"] == ["3", "7", "12"]
    assert "segments" not in layers["annotations"]
    assert len(out.splitlines()) == 2  # every object selected: no note


def test_many_objects_select_the_first_and_say_so(tmp_path: Path) -> None:
    path = tmp_path / "lines.zarr"
    lines = [np.array([[i, 0, 0], [i, 5, 5.0]]) for i in range(5)]
    zv.write_polylines(path, lines, chunk_shape=10.0, object_ids=[40, 10, 30, 20, 50])
    found = zv.precomputed.sources(zv.open(path))
    state = neuroglancer_state(found, "http://h", segments=3)
    layers = {layer["name"]: layer for layer in state["layers"]}
    assert layers["skeletons"]["segments"] == ["10", "20", "30"]
    assert selection_notes(found, limit=3) == [
        "skeletons: the link selects the first 3 of 5 objects (ids 10 to 30); pick others "
        "from the layer's segment list"
    ]
    assert selection_notes(found) == []
