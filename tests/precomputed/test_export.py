"""The static export ``zv.convert(store, "out.precomputed")``: every file of every source,
the bytes ``read()`` gives, written through a hidden sibling so a failed export changes
nothing."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import numpy as np
import pytest

import zarr_vectors as zv
from zarr_vectors.errors import InvalidInputError, StoreExistsError
from zarr_vectors.precomputed import PrecomputedSource, sources
from zarr_vectors.precomputed.export import export_precomputed


def _store(tmp_path: Path, n: int = 300) -> zv.VectorStore:
    rng = np.random.default_rng(3)
    path = tmp_path / "cells.zarr"
    zv.write_points(
        path, rng.uniform(0, 40, (n, 3)), chunk_shape=10.0,
        attributes={"w": rng.normal(size=n).astype(np.float32)},
        object_ids=rng.integers(0, 5, n), levels=zv.Levels(count=1, per_bin=4),
    )  # fmt: skip
    return zv.open(path)


def _tree(folder: Path) -> dict[str, bytes]:
    return {
        p.relative_to(folder).as_posix(): p.read_bytes() for p in folder.rglob("*") if p.is_file()
    }


def test_export_writes_every_file_as_read_gives_it(tmp_path: Path) -> None:
    store = _store(tmp_path)
    out = zv.convert(store, tmp_path / "cells.precomputed")
    assert isinstance(out, Path)
    expected = {
        f"{name}/{path}": source.read(path)
        for name, source in sources(store).items()
        for path in source.paths()
    }
    assert _tree(out) == expected
    assert any(p.startswith("annotations/by_object/") for p in expected)
    again = zv.convert(tmp_path / "cells.zarr", tmp_path / "web", format="precomputed")
    assert _tree(Path(again)) == expected
    assert not [p for p in tmp_path.iterdir() if p.name.startswith(".")]  # no sibling left


def test_existing_destination_refused_or_replaced(tmp_path: Path) -> None:
    store = _store(tmp_path)
    out = tmp_path / "cells.precomputed"
    zv.convert(store, out)
    before = _tree(out)
    with pytest.raises(StoreExistsError):
        zv.convert(store, out)
    (out / "annotations" / "info").write_bytes(b"{}")
    zv.convert(store, out, mode="w")
    assert _tree(out) == before
    other = tmp_path / "notes.precomputed"
    other.mkdir()
    (other / "keep.txt").write_text("mine")
    with pytest.raises(StoreExistsError):
        zv.convert(store, other, mode="w")  # not an export: never replaced
    assert (other / "keep.txt").read_text() == "mine"


class _Failing:
    """A source whose third file cannot be computed."""

    name = "annotations"

    def paths(self) -> Iterator[str]:
        yield from ("info", "a/1", "a/2", "a/3")

    def read(self, path: str) -> bytes:
        if path == "a/2":
            raise OSError("disk gone")
        return path.encode()


@pytest.mark.parametrize("existing", [False, True])
def test_failed_export_leaves_destination_as_it_was(tmp_path: Path, existing: bool) -> None:
    out = tmp_path / "x.precomputed"
    if existing:
        zv.convert(_store(tmp_path), out)
    before = _tree(out) if existing else None
    failing: dict[str, PrecomputedSource] = {"annotations": _Failing()}
    with pytest.raises(OSError, match="disk gone"):
        export_precomputed(failing, out, overwrite=True)
    assert (_tree(out) if out.exists() else None) == before
    assert not [p for p in tmp_path.iterdir() if p.name.startswith(".")]


def test_nothing_to_export_and_bad_options(tmp_path: Path) -> None:
    lines = tmp_path / "lines.zarr"
    zv.write_mesh(lines, [[0, 0, 0], [1, 0, 0], [0, 1, 0.0]], [[0, 1, 2]])
    if not sources(zv.open(lines)):
        with pytest.raises(InvalidInputError, match="nothing to show"):
            zv.convert(lines, tmp_path / "mesh.precomputed")
        assert not (tmp_path / "mesh.precomputed").exists()
    with pytest.raises(InvalidInputError, match="unknown option"):
        zv.convert(_store(tmp_path), tmp_path / "c.precomputed", colour="red")
