"""Issue 34, "First use": a fresh environment's first small write and query compile
nothing, ``zv.warmup()`` / ``zarr-vectors warmup`` compile the common kernels ahead, and
the demo reports that apart from its timings (and writes inside ``--dir``, and refuses a
bad ``--points`` cleanly)."""

from __future__ import annotations

import contextlib
import io
import json
import os
import pickle
import subprocess
import sys
import time
from collections.abc import Iterator
from pathlib import Path

import numba
import numpy as np
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

import zarr_vectors as zv
from tests.helpers import ROOT_DOCUMENTS, without_commit
from zarr_vectors import cli
from zarr_vectors._warmup import demo_warmup
from zarr_vectors.cli import DEMO_STORE, main
from zarr_vectors.errors import InvalidInputError
from zarr_vectors.kernels import _jit
from zarr_vectors.kernels.binning import bounds_and_nonfinite
from zarr_vectors.kernels.box_rows import _box_chunks as _box_chunks_kernel
from zarr_vectors.kernels.box_rows import _stable_order, box_chunks

REPO = Path(__file__).resolve().parent.parent

# A child process: the first use of the issue on an empty numba cache, in kernel mode
# argv[1]; prints the compilations it ran and what the queries returned.
FIRST_USE = """
import json, sys, tempfile
import numpy as np
import zarr_vectors as zv
from zarr_vectors.kernels._jit import CompileLog, set_kernel_mode
set_kernel_mode(sys.argv[1])
rng = np.random.default_rng(0)
points = (rng.random((1000, 3), dtype=np.float32) * 1000, rng.random(1000, dtype=np.float32))
walk = rng.normal(0, 1, (20, 100, 3)).cumsum(axis=1) + rng.uniform(50, 150, (20, 1, 3))
vertices = walk.reshape(-1, 3).astype(np.float32)
offsets = np.arange(21) * 100
with CompileLog() as log, tempfile.TemporaryDirectory() as tmp:
    zv.write_points(tmp + "/p", points[0], attributes={"value": points[1]})
    hits = zv.open(tmp + "/p").query(([400] * 3, [615] * 3))
    zv.write_polylines(tmp + "/s", (vertices, offsets), kind="streamline")
    lines = zv.open(tmp + "/s").query(([80] * 3, [120] * 3))
    found = [hits.positions.tolist(), lines.object_ids.tolist(), lines.positions.tolist()]
print(json.dumps({"compiled": log.count, "found": found}))
"""


def _child(code: str, *args: str, cache: Path | None) -> dict:
    """Run ``code`` in a new process with numba's cache in ``cache`` (None: the usual one)."""
    env = {**os.environ, "PYTHONPATH": str(REPO)}
    if cache is not None:
        env["NUMBA_CACHE_DIR"] = str(cache)
    done = subprocess.run(
        [sys.executable, "-c", code, *args], env=env, capture_output=True, text=True, check=True
    )
    return json.loads(done.stdout.splitlines()[-1])


def test_first_use_compiles_nothing(tmp_path: Path) -> None:
    """The issue's first write + box query of points and streamlines compiled ~30 kernels
    (16 s idle, 26-28 s measured); now none, with the same answers as machine code."""
    first = _child(FIRST_USE, "auto", cache=tmp_path / "empty")
    assert first["compiled"] == 0
    assert len(first["found"][0]) > 0
    assert len(first["found"][1]) > 0
    compiled = _child(FIRST_USE, "compiled", cache=None)
    assert first["found"] == compiled["found"]


# A child process: zv.warmup() on an empty cache, then the first use with machine code only
# and the demo; prints what was compiled where.
WARMUP_THEN_USE = FIRST_USE.replace(
    "set_kernel_mode(sys.argv[1])",
    "report = zv.warmup(); set_kernel_mode('compiled')",
).replace(
    'print(json.dumps({"compiled": log.count, "found": found}))',
    "again = zv.warmup()\n"
    "import contextlib, io\n"
    "from zarr_vectors.cli import main\n"
    "with tempfile.TemporaryDirectory() as tmp, contextlib.redirect_stdout(io.StringIO()) as out:\n"
    "    main(['demo', '--dir', tmp, '--points', '5000'])\n"
    'print(json.dumps({"warmup": report.compiled, "compiled": log.count, '
    '"again": again.compiled, "demo": out.getvalue()}))',
)


@pytest.mark.slow
def test_warmup_compiles_what_the_first_use_needs(tmp_path: Path) -> None:
    """On an empty cache warmup compiles kernels; after it, neither the first use nor the
    demo's timed steps compile any (with machine code for every call).

    It compiles every kernel of the warm-up (36 s on a loaded machine): ``-m slow``; the
    default run checks the same list of calls without compiling, in
    :func:`test_warmup_calls_every_kernel_signature_the_first_use_calls`."""
    result = _child(WARMUP_THEN_USE, cache=tmp_path / "empty")
    assert result["warmup"] > 0
    assert result["compiled"] == 0
    assert result["again"] == 0
    assert "kernels loaded from numba's cache" in result["demo"]
    assert "brute force agrees: True" in result["demo"]
    assert "compiling kernels" not in result["demo"]


def _record_kernel_calls(monkeypatch: pytest.MonkeyPatch) -> set[tuple[str, tuple[str, ...]]]:
    """Record each kernel call from Python (name, numba types of the arguments): the
    machine code numba needs for it (calls inside kernels compile with their caller)."""
    calls: set[tuple[str, tuple[str, ...]]] = set()
    call = _jit.Kernel.__call__

    def recording(kernel: _jit.Kernel, *args: object) -> object:
        types = tuple(str(numba.typeof(a)) for a in args)
        calls.add((f"{kernel.py_func.__module__}.{kernel.py_func.__qualname__}", types))
        return call(kernel, *args)

    monkeypatch.setattr(_jit.Kernel, "__call__", recording)
    return calls


def _first_use(directory: Path) -> None:
    """The first use of :data:`FIRST_USE` and the demo of :data:`WARMUP_THEN_USE`."""
    rng = np.random.default_rng(0)
    points = rng.random((1000, 3), dtype=np.float32) * 1000
    value = rng.random(1000, dtype=np.float32)
    walk = rng.normal(0, 1, (20, 100, 3)).cumsum(axis=1) + rng.uniform(50, 150, (20, 1, 3))
    vertices = walk.reshape(-1, 3).astype(np.float32)
    offsets = np.arange(21) * 100
    zv.write_points(directory / "p", points, attributes={"value": value})
    zv.open(directory / "p").query(([400] * 3, [615] * 3))
    zv.write_polylines(directory / "s", (vertices, offsets), kind="streamline")
    zv.open(directory / "s").query(([80] * 3, [120] * 3))
    with contextlib.redirect_stdout(io.StringIO()):
        main(["demo", "--dir", str(directory), "--points", "5000"])


def test_warmup_calls_every_kernel_signature_the_first_use_calls(
    kernel_mode: None, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """What :func:`test_warmup_compiles_what_the_first_use_needs` (``-m slow``) proves by
    compiling on an empty cache, checked on the list of calls: every kernel and argument
    types the first use and the demo call from Python, the warm-up calls too."""
    calls = _record_kernel_calls(monkeypatch)
    zv.warmup()
    warm = set(calls)
    # a strided array is one more signature to compile (0.6 s each for misplaced_row)
    assert [c for c in warm if any(", A)" in t for t in c[1])] == []
    calls.clear()
    monkeypatch.setattr(cli, "demo_warmup", lambda: zv.WarmupReport(0.1, 0, 0.0))
    _first_use(tmp_path)
    assert calls, "the recording saw no kernel call"
    assert sorted(calls - warm) == []


def test_demo_warmup_calls_every_kernel_signature_the_demo_calls(
    kernel_mode: None, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The demo compiles only its own kernels ahead (``demo_warmup``: 19 signatures, where
    ``zv.warmup()`` compiles 45), and its timed steps call no signature it did not compile."""
    calls = _record_kernel_calls(monkeypatch)
    report = demo_warmup()
    warm = set(calls)
    calls.clear()
    monkeypatch.setattr(cli, "demo_warmup", lambda: report)
    with contextlib.redirect_stdout(io.StringIO()):
        main(["demo", "--dir", str(tmp_path), "--points", "5000"])
    assert calls, "the recording saw no kernel call"
    assert sorted(calls - warm) == []


def test_warmup_report_and_cli(capsys: pytest.CaptureFixture[str]) -> None:
    report = zv.warmup()
    assert report.seconds > 0
    assert report.compiled >= 0
    assert main(["warmup"]) == 0
    out = capsys.readouterr().out
    assert "kernels" in out
    assert "numba's cache" in out


def test_warmup_line_says_first_run_only() -> None:
    compiled = zv.WarmupReport(seconds=12.5, compiled=31, compile_seconds=11.0)
    assert "compiled 31 kernels in 11.0 s" in str(compiled)
    assert str(zv.WarmupReport(0.4, 0, 0.0)) == "kernels loaded from numba's cache in 0.4 s"


def _demo(argv: list[str], capsys: pytest.CaptureFixture[str]) -> list[str]:
    assert main(["demo", *argv]) == 0
    return capsys.readouterr().out.splitlines()


def test_demo_writes_inside_dir(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    """``--dir DIR`` used to become the store itself (replacing DIR's content)."""
    directory = tmp_path / "results"
    directory.mkdir()
    (directory / "notes.txt").write_text("mine")
    _demo(["--dir", str(directory), "--points", "3000"], capsys)
    assert sorted(p.name for p in directory.iterdir()) == ["notes.txt", DEMO_STORE]
    assert (directory / "notes.txt").read_text() == "mine"
    assert zv.open(directory / DEMO_STORE).vertex_count == 3000


def test_demo_without_dir_writes_in_cwd(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    monkeypatch.chdir(tmp_path)
    _demo(["--points", "500"], capsys)
    assert zv.open(tmp_path / DEMO_STORE).vertex_count == 500


def test_demo_reports_compile_time_apart(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    """The first demo printed 11 s writes and 13 s queries that were compilation."""
    calls = []

    def fake_warmup() -> zv.WarmupReport:
        calls.append(_jit.set_kernel_mode("compiled"))  # what a real warm-up leaves
        return zv.WarmupReport(seconds=21.5, compiled=31, compile_seconds=20.0)

    monkeypatch.setattr(cli, "demo_warmup", fake_warmup)
    lines = _demo(["--dir", str(tmp_path), "--points", "2000"], capsys)
    assert calls, "the demo did not warm up"
    assert lines[1].startswith("  compiling the demo's kernels, first run only: 21.5 s")
    timed = [line for line in lines if " in " in line and ("wrote" in line or "query" in line)]
    assert len(timed) == 2
    assert not any("compiling kernels)" in line for line in lines)


def test_demo_says_when_the_cache_was_warm(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    monkeypatch.setattr(cli, "demo_warmup", lambda: zv.WarmupReport(0.3, 0, 0.0))
    lines = _demo(["--dir", str(tmp_path), "--points", "100"], capsys)
    assert lines[1] == "  kernels loaded from numba's cache (compiled by an earlier run): 0.3 s"


@pytest.mark.parametrize("points", ["-5", "0", "abc", "1.5"])
def test_demo_rejects_bad_points_cleanly(
    points: str, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """``demo --points -5`` ended in a numpy traceback."""
    with pytest.raises(SystemExit) as exit_:
        main(["demo", "--dir", str(tmp_path), "--points", points])
    assert exit_.value.code == 2
    err = capsys.readouterr().err
    assert f"argument --points: expected a positive integer, got '{points}'" in err
    assert not any(tmp_path.iterdir())


@pytest.fixture
def kernel_mode() -> Iterator[None]:
    previous = _jit.set_kernel_mode("compiled")
    yield
    _jit.set_kernel_mode(previous)


def test_kernel_mode_is_checked(kernel_mode: None) -> None:
    with pytest.raises(InvalidInputError, match="auto, compiled, python"):
        _jit.set_kernel_mode("fast")


def test_small_calls_run_python_until_compiled(
    kernel_mode: None, monkeypatch: pytest.MonkeyPatch
) -> None:
    def twice(a: np.ndarray) -> np.ndarray:
        return a * 2

    kernel = _jit.Kernel(twice)
    # An earlier run of this test left ``twice`` in numba's cache on disk: as if it had not.
    monkeypatch.setattr(_jit, "_cached_on_disk", lambda dispatcher: False)
    small, large = np.ones(4), np.ones(_jit.SMALL_NBYTES // 8 + 1)
    assert not kernel.interprets((small,))  # compiled mode
    _jit.set_kernel_mode("auto")
    assert kernel.interprets((small,))
    assert not kernel.interprets((large,))
    kernel(small)
    assert not kernel.compiled
    assert kernel.interpreted_seconds > 0
    monkeypatch.setattr(kernel, "interpreted_seconds", _jit.INTERPRETED_BUDGET)
    assert not kernel.interprets((small,))  # spent its budget: compiles next
    assert kernel(large).sum() == 2 * large.size
    assert kernel.compiled
    assert not kernel.interprets((small,))
    _jit.set_kernel_mode("python")
    assert kernel.interprets((large,))


def test_the_python_budget_counts_cpu_time_not_a_loaded_machines_wall_time(
    kernel_mode: None, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Under load (two cores shared by many processes) a first use's Python kernels took
    over 0.3 s of wall time and then compiled; waiting for the CPU is not Python work."""

    def waits(a: np.ndarray) -> np.ndarray:
        time.sleep(_jit.INTERPRETED_BUDGET + 0.05)  # off the CPU, as when others hold it
        return a

    kernel = _jit.Kernel(waits)
    monkeypatch.setattr(_jit, "_cached_on_disk", lambda dispatcher: False)
    _jit.set_kernel_mode("auto")
    wall = _jit.interpreted_seconds()
    kernel(np.ones(3))
    assert _jit.interpreted_seconds() - wall >= _jit.INTERPRETED_BUDGET  # the wall time
    assert kernel.interpreted_seconds < _jit.INTERPRETED_BUDGET
    assert kernel.interprets((np.ones(3),))  # still within its budget: not compiled
    assert not kernel.compiled


def test_small_calls_do_not_run_python_when_numba_has_them_cached(
    kernel_mode: None, monkeypatch: pytest.MonkeyPatch
) -> None:
    _jit.set_kernel_mode("auto")

    def same(a: np.ndarray) -> np.ndarray:
        return a

    kernel = _jit.Kernel(same)
    monkeypatch.setattr(_jit, "_cached_on_disk", lambda dispatcher: True)
    assert not kernel.interprets((np.ones(3),))


def _store_files(path: Path) -> dict[str, bytes | dict]:
    """Every file of a store; the metadata documents without their creation time, the root
    documents without their commit record (a fresh id per commit)."""
    files: dict[str, bytes | dict] = {}
    for file in sorted(p for p in path.rglob("*") if p.is_file()):
        key = str(file.relative_to(path))
        if file.name.endswith(".json"):
            doc = json.loads(file.read_text())
            doc.pop("creation_timestamp", None)
            files[key] = doc
        else:
            files[key] = file.read_bytes()
        if key in ROOT_DOCUMENTS:
            files[key] = without_commit(key, file.read_bytes())
    return files


def _in_mode(mode: str, write: object) -> object:
    previous = _jit.set_kernel_mode(mode)
    try:
        return write()  # type: ignore[operator]
    finally:
        _jit.set_kernel_mode(previous)


coordinate = st.floats(0, 200, width=32) | st.sampled_from([0.0, 50.0, 62.5, 100.0, 199.5])


@settings(
    max_examples=15, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture]
)
@given(
    rows=st.lists(st.tuples(coordinate, coordinate, coordinate), min_size=1, max_size=120),
    box=st.tuples(coordinate, coordinate, coordinate, st.floats(1, 150)),
)
def test_python_kernels_write_and_query_points_bit_identically(
    tmp_path_factory: pytest.TempPathFactory, rows: list, box: tuple
) -> None:
    """Stores written and queries answered through the kernels' Python source equal the
    machine code's, byte for byte (points on chunk and bin faces included)."""
    positions = np.array(rows, dtype=np.float32)
    value = np.arange(len(rows), dtype=np.float32)
    lo = np.array(box[:3])
    hi = lo + box[3]
    out = {}
    for mode in ("python", "compiled"):
        path = tmp_path_factory.mktemp(mode) / "p.zv"

        def run(path: Path = path) -> tuple:
            zv.write_points(
                path, positions, chunk_shape=50.0, bin_shape=12.5, attributes={"value": value}
            )
            hits = zv.open(path).query((lo, hi))
            return hits.positions.tobytes(), hits.attributes["value"].tobytes()

        out[mode] = (_in_mode(mode, run), _store_files(path))
    assert out["python"] == out["compiled"]


@settings(
    max_examples=10, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture]
)
@given(
    lengths=st.lists(st.integers(1, 40), min_size=1, max_size=12),
    seed=st.integers(0, 2**16),
)
def test_python_kernels_write_and_query_streamlines_bit_identically(
    tmp_path_factory: pytest.TempPathFactory, lengths: list[int], seed: int
) -> None:
    rng = np.random.default_rng(seed)
    total = sum(lengths)
    vertices = (rng.normal(0, 8, (total, 3)).cumsum(axis=0) % 100).astype(np.float32)
    offsets = np.concatenate([[0], np.cumsum(lengths)])
    out = {}
    for mode in ("python", "compiled"):
        path = tmp_path_factory.mktemp(mode) / "s.zv"

        def run(path: Path = path) -> tuple:
            zv.write_polylines(
                path,
                (vertices, offsets),
                kind="streamline",
                chunk_shape=25.0,
                bin_shape=12.5,
                object_attributes={"w": np.arange(len(lengths), dtype=np.float32)},
            )
            store = zv.open(path)
            hits = store.query(([20.0] * 3, [70.0] * 3))
            some = store.read_objects([len(lengths) - 1, 0])
            return (
                hits.object_ids.tobytes(),
                hits.positions.tobytes(),
                some.positions.tobytes(),
            )

        out[mode] = (_in_mode(mode, run), _store_files(path))
    assert out["python"] == out["compiled"]


@settings(max_examples=60, deadline=None)
@given(
    rows=st.lists(
        st.tuples(*[st.floats(width=32, allow_nan=True, allow_infinity=True)] * 3),
        min_size=0,
        max_size=40,
    )
)
def test_python_bounds_equal_machine_code(rows: list) -> None:
    positions = np.array(rows, dtype=np.float32).reshape(-1, 3)
    previous = _jit.set_kernel_mode("python")
    try:
        python = bounds_and_nonfinite(positions)
    finally:
        _jit.set_kernel_mode(previous)
    machine = bounds_and_nonfinite(positions)
    assert len(python) == len(machine)
    for a, b in zip(python, machine, strict=True):
        assert np.asarray(a).tobytes() == np.asarray(b).tobytes()


@settings(max_examples=80, deadline=None)
@given(
    keys=st.lists(st.integers(-5, 5), min_size=0, max_size=70),
    extra=st.integers(0, 3),
    mode=st.sampled_from(["python", "compiled"]),
)
def test_stable_order_is_a_stable_argsort(keys: list[int], extra: int, mode: str) -> None:
    """_box_runs' own merge sort (numba's argsort took 1.4 s to compile) orders as
    numpy's stable argsort, in Python and in machine code."""
    values = np.array(keys + [99] * extra, dtype=np.int64)  # rows past n are ignored
    n = len(keys)
    previous = _jit.set_kernel_mode(mode)
    try:
        got = _stable_order(values, n, False)
        same = _stable_order(values, n, True)
    finally:
        _jit.set_kernel_mode(previous)
    assert got.tolist() == np.argsort(values[:n], kind="stable").tolist()
    assert same.tolist() == list(range(n))


def test_numba_cache_index_is_found(kernel_mode: None) -> None:
    """The disk-cache lookup reads numba internals: it must see a kernel's saved index (a
    numba that moved it would send every small call of a warm process to Python)."""
    coords, origin, ones = np.zeros((1, 3), np.int64), np.zeros(3, np.int64), np.ones(3)
    box_chunks(coords, origin, ones, ones, ones)  # compiles (and saves) or loads
    assert _jit._cached_on_disk(_box_chunks_kernel.dispatcher)


def _mesh(path: Path, rng: np.random.Generator) -> None:
    vertices = rng.uniform(0, 100, (60, 3)).astype(np.float32)
    faces = np.array([rng.choice(60, 3, replace=False) for _ in range(80)], dtype=np.int64)
    objects = np.repeat(np.arange(3), 20)
    faces = faces[np.all(objects[faces] == objects[faces][:, :1], axis=1)]
    zv.write_mesh(path, vertices, faces, vertex_objects=objects, chunk_shape=40.0)


def _skeletons(path: Path, rng: np.random.Generator) -> None:
    n = 90
    parents = np.array([-1 if i % 30 == 0 else int(rng.integers(i - i % 30, i)) for i in range(n)])
    positions = rng.uniform(0, 100, (n, 3)).astype(np.float32)
    zv.write_skeletons(
        path,
        positions,
        parents=parents,
        vertex_objects=np.arange(n) // 30,
        radius=rng.random(n, dtype=np.float32),
        chunk_shape=40.0,
    )


def _graph(path: Path, rng: np.random.Generator) -> None:
    positions = rng.uniform(0, 100, (50, 3)).astype(np.float32)
    edges = np.unique(np.sort(rng.integers(0, 50, (70, 2)), axis=1), axis=0)
    edges = edges[edges[:, 0] != edges[:, 1]]
    zv.write_graph(path, positions, edges, chunk_shape=40.0)


@pytest.mark.parametrize("write", [_mesh, _skeletons, _graph], ids=lambda f: f.__name__[1:])
def test_python_kernels_write_and_read_objects_bit_identically(
    write: object, tmp_path: Path
) -> None:
    """Every other first use (meshes, skeletons, graphs) runs its kernels as Python too."""
    out = {}
    for mode in ("python", "compiled"):
        path = tmp_path / mode

        def run(path: Path = path) -> tuple:
            write(path, np.random.default_rng(7))  # type: ignore[operator]
            store = zv.open(path)
            everything = store.read()
            hits = store.query(([20.0] * 3, [70.0] * 3))
            return tuple(
                None if a is None else a.tobytes()
                for a in (
                    everything.positions,
                    everything.edges,
                    everything.faces,
                    hits.positions,
                    hits.edges,
                    hits.faces,
                )
            )

        out[mode] = (_in_mode(mode, run), _store_files(path))
    read_all, query = out["compiled"][0][0], out["compiled"][0][3]
    assert read_all
    assert query
    assert out["python"] == out["compiled"]


def test_kernels_pickle_by_name() -> None:
    """A kernel is an object now, not a function: it must still pickle (by reference)."""
    assert pickle.loads(pickle.dumps(_box_chunks_kernel)) is _box_chunks_kernel


def test_demo_dir_that_is_a_file_is_refused_and_kept(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    mine = tmp_path / "mine.txt"
    mine.write_text("keep")
    assert main(["demo", "--dir", str(mine), "--points", "100"]) == 2
    assert "is a file: give a directory" in capsys.readouterr().err
    assert mine.read_text() == "keep"
