"""``python -m benchmarks.side_by_side``: this zarr_vectors beside the reference and numpy.

The reference implementation, ``zarr-vectors==0.9.2`` from PyPI, shares our import name, so
it lives in its own virtualenv (:mod:`benchmarks.reference_env`) and runs in a subprocess
(:mod:`benchmarks.reference_worker`). Each data set is generated once here (with the
generators of :mod:`benchmarks._data` and :mod:`benchmarks.objects`) and saved as ``.npy``
files; both libraries then run the same cases on it with the same timing code
(:func:`benchmarks.reference_worker.run_cases`), beside the numpy floor measured here. Every
answer is checked against brute force, and the two libraries' answers against each other.
See ``benchmarks/README.md``.
"""

from __future__ import annotations

import argparse
import json
import os
import platform
import subprocess
import sys
import tempfile
import time
from collections.abc import Callable
from dataclasses import asdict, dataclass, field
from functools import partial
from importlib.metadata import version
from pathlib import Path
from typing import Any

import numpy as np

import zarr_vectors as zv
from benchmarks import _data, objects
from benchmarks._measure import log, median, run_child, tree_size
from benchmarks._table import align_table, format_seconds, size_label
from benchmarks.reference_env import REFERENCE_VERSION, clean_env, ensure_venv
from benchmarks.reference_worker import (
    load_arrays,
    peak_write,
    repeat_back_to_back,
    repeat_within,
    run_cases,
    timed,
    timed_write_cpu,
)

__all__ = ["DEFAULT_SIZES", "QUICK_SIZES", "KINDS", "main"]

KINDS = ("points", "streamlines", "mesh", "skeletons")

DEFAULT_SIZES: dict[str, tuple[tuple[int, ...], ...]] = {
    "points": ((1_000_000,), (10_000_000,)),
    "streamlines": ((10_000, 100), (100_000, 100)),
    "mesh": ((100, 10_000),),
    "skeletons": ((100, 1_000),),
}
"""Points: count. Streamlines: count x vertices. Mesh: spheres x triangles. Skeletons:
trees x nodes."""

QUICK_SIZES: dict[str, tuple[tuple[int, ...], ...]] = {
    "points": ((100_000,), (1_000_000,)),
    "streamlines": ((1_000, 100), (10_000, 100)),
    "mesh": ((100, 1_000),),
    "skeletons": ((20, 1_000),),
}

FRACTIONS = (0.01, 0.25)
"""Box volumes as fractions of the data set's cube."""

BY_ID = {"streamlines": 100, "mesh": 10, "skeletons": 10}
"""Objects per read-by-id set (point clouds have no objects)."""

TARGETS = {
    (kind, case): ratio
    for kind in ("points", "streamlines")
    for case, ratio in (
        ("write", 20.0),
        ("query 1% cold", 10.0),
        ("query 1% warm", 10.0),
        ("query 1% warm, back to back", 10.0),
    )
}
"""The issue's goals for points and streamlines, as the least reference/ours time ratio (the
issue does not say how warm a warm query is: both protocols are held to it)."""

OUR_CODEC = [
    {
        "name": "blosc",
        "configuration": {
            "cname": "lz4",
            "clevel": 5,
            "shuffle": "bitshuffle",
            "typesize": 4,
            "blocksize": 0,
        },
    }
]
"""Our stores' compressor (Blosc LZ4, bit shuffle, level 5), given to the reference too."""

WRITE_BUDGET, READ_BUDGET, WARM_BUDGET = 30.0, 15.0, 2.0
"""Seconds of repeated writes, of repeated full reads, and of warm repeats per box or id
set, after which repeats stop (every step runs at least once)."""

WORKER = Path(__file__).resolve().parent / "reference_worker.py"


# -- data ------------------------------------------------------------------------------------
@dataclass
class DataSet:
    """One data set: its arrays, how we write it, and its queries.

    Attributes
    ----------
    kind
        One of :data:`KINDS`.
    size
        Its entry of :data:`DEFAULT_SIZES` (the peak-memory child rebuilds it from this).
    label
        The ``n`` cell.
    arrays
        What the ``.npy`` files hold (``positions``, ``v_<attribute>``, and for objects
        ``offsets``, ``o_<name>``, ``links``, ``link_offsets``).
    write
        Our writer, given a path.
    attribute
        The vertex attribute every answer is checked on.
    frame
        The objects as arrays (None for points).
    boxes
        Fraction label -> ``(lo, hi)`` boxes.
    id_sets
        Random id sets for the reads by id (empty for points).
    layout
        Chunk and bin shapes of our store, once written.
    """

    kind: str
    size: tuple[int, ...]
    label: str
    arrays: dict[str, np.ndarray]
    write: Callable[[str], None]
    attribute: str
    frame: objects.Frame | None = None
    boxes: dict[str, list[_data.Box]] = field(default_factory=dict)
    id_sets: list[np.ndarray] = field(default_factory=list)
    layout: dict[str, Any] = field(default_factory=dict)

    @property
    def n_vertices(self) -> int:
        """Number of vertices."""
        return int(self.arrays["positions"].shape[0])

    @property
    def input_bytes(self) -> int:
        """Bytes of every array."""
        return sum(a.nbytes for a in self.arrays.values())


def _write_points(path: str, positions: np.ndarray, values: np.ndarray) -> None:
    zv.write_points(path, positions, attributes={_data.ATTRIBUTE: values})


def _make_objects(kind: str, size: tuple[int, ...], seed: int) -> objects.ObjectSet:
    if kind == "streamlines":
        return objects.make_streamlines(size[0], size[1], seed)
    if kind == "mesh":
        return objects.make_mesh(size[0], size[1], seed)
    return objects.make_skeletons(size[0], size[1], seed)


def make_data(kind: str, size: tuple[int, ...], seed: int, boxes: int) -> DataSet:
    """Generate one data set with the generators of the other benchmark modules.

    Parameters
    ----------
    kind
        One of :data:`KINDS`.
    size
        The kind's size tuple.
    seed
        Seed of the data, the boxes and the id sets.
    boxes
        Boxes per fraction, and id sets.

    Returns
    -------
    DataSet
        The data and its queries.
    """
    if kind == "points":
        positions, values = _data.make_points(size[0], seed)
        return DataSet(
            kind,
            size,
            size_label(size[0]),
            {"positions": positions, f"v_{_data.ATTRIBUTE}": values},
            partial(_write_points, positions=positions, values=values),
            _data.ATTRIBUTE,
            boxes={f"{f:.0%}": _data.make_boxes(f, boxes, seed) for f in FRACTIONS},
        )
    data = _make_objects(kind, size, seed)
    frame = data.frame
    rng = np.random.default_rng([seed, 5, BY_ID[kind]])
    count = min(BY_ID[kind], frame.n_objects)
    return DataSet(
        kind,
        size,
        data.label,
        frame.arrays(),
        data.write,
        next(iter(frame.attributes)),
        frame=frame,
        boxes={f"{f:.0%}": objects.make_boxes(f, boxes, seed) for f in FRACTIONS},
        id_sets=[rng.choice(frame.n_objects, count, replace=False) for _ in range(boxes)],
    )


def _save_arrays(arrays: dict[str, np.ndarray], directory: str) -> None:
    os.makedirs(directory, exist_ok=True)
    for name, values in arrays.items():
        np.save(os.path.join(directory, f"{name}.npy"), values)


# -- our library -----------------------------------------------------------------------------
class OursLibrary:
    """This repository's ``zarr_vectors``, as an adapter of
    :func:`benchmarks.reference_worker.run_cases`.

    Parameters
    ----------
    data
        The data set (its writer and attribute).
    """

    def __init__(self, data: DataSet) -> None:
        self.data = data

    def warm_up(self, directory: str) -> None:
        """Compile or load numba's kernels: tiny writes, reads and queries of every kind."""
        _data.warm_up(directory)
        objects.warm_up(directory)

    def write(self, path: str) -> None:
        """``zv.write_points`` / ``write_polylines`` / ``write_mesh`` / ``write_skeletons``."""
        self.data.write(path)

    def open(self, path: str) -> zv.VectorStore:
        """``zv.open(path)``."""
        return zv.open(path)

    def query(self, store: zv.VectorStore, box: _data.Box) -> zv.QueryResult:
        """``store.query(box)``: points in the box, or the objects meeting it, whole."""
        return store.query(box)

    def read_all(self, store: zv.VectorStore) -> zv.QueryResult:
        """``store.read()``."""
        return store.read()

    def by_id(self, store: zv.VectorStore, ids: np.ndarray) -> zv.QueryResult:
        """``store.read_objects(ids)``."""
        return store.read_objects(ids)

    def answer(self, result: zv.QueryResult) -> dict[str, np.ndarray]:
        """The result as plain arrays (the same keys as the reference's answers)."""
        out = {"positions": result.positions}
        if self.data.attribute in result.attributes:
            out["attr"] = result.attributes[self.data.attribute]
        pairs = (
            ("ids", result.object_ids),
            ("offsets", result.offsets),
            ("faces", result.faces),
            ("edges", result.edges),
        )
        out.update({k: np.asarray(v) for k, v in pairs if v is not None})
        return out


def _peak_child(spec_path: str) -> int:
    """``--peak-child SPEC``: rebuild the data set, warm up, write once, print the peak."""
    spec = json.loads(Path(spec_path).read_text())
    directory = os.path.dirname(spec["store"])
    data = make_data(spec["kind"], tuple(spec["size"]), spec["seed"], 1)
    OursLibrary(data).warm_up(directory)
    print(json.dumps(peak_write(data.write, spec["store"])))
    return 0


# -- running both ----------------------------------------------------------------------------
@dataclass
class Side:
    """One library's (or the floor's) measurements of a data set.

    Attributes
    ----------
    cases
        ``run_cases`` records by case name.
    answers
        Name -> answer, loaded on demand.
    peak
        The peak-memory child's report, or an ``error`` record.
    extra
        Anything else (ours: clipped-query times).
    """

    cases: dict[str, Any]
    answers: Callable[[str], dict[str, np.ndarray] | None]
    peak: dict[str, Any] = field(default_factory=dict)
    extra: dict[str, Any] = field(default_factory=dict)
    versions: dict[str, str] = field(default_factory=dict)


def _spec(data: DataSet, args: argparse.Namespace, where: str, codec: Any) -> dict[str, Any]:
    cube = _data.CUBE if data.kind == "points" else objects.SIDE
    return {
        "kind": data.kind,
        "label": f"{data.kind} {data.label}",
        "data_dir": os.path.join(os.path.dirname(where), "data"),
        "attribute": data.attribute,
        "layout": {**data.layout, "bounds": [[0.0] * 3, [cube] * 3], "compression": codec},
        "boxes": {k: [[lo.tolist(), hi.tolist()] for lo, hi in v] for k, v in data.boxes.items()},
        "id_sets": [ids.tolist() for ids in data.id_sets],
        "repeat": args.repeat,
        "write_budget": WRITE_BUDGET,
        "read_budget": READ_BUDGET,
        "warm_budget": WARM_BUDGET,
        "timeout": args.timeout,
        "store_dir": os.path.join(where, "stores"),
        "answers_dir": os.path.join(where, "answers"),
        "results": os.path.join(where, "results.json"),
        "peak_store": os.path.join(where, "peak", "store.zv"),
    }


def _clip_times(data: DataSet, store: str, repeat: int) -> dict[str, float]:
    """Ours with ``clip=True`` (the reference's mesh and skeleton answer shape), warm."""
    handle = zv.open(store)
    out = {}
    for label, boxes in data.boxes.items():
        best = []
        for box in boxes:
            handle.query(box, clip=True)
            times, _ = repeat_within(partial(handle.query, box, clip=True), repeat, WARM_BUDGET)
            best.append(min(times))
        out[label] = median(best)
    return out


def run_ours(data: DataSet, args: argparse.Namespace, where: str) -> Side:
    """Every case with our library, in this process, then the peak-memory child."""
    spec = _spec(data, args, where, None)
    answers: dict[str, dict[str, np.ndarray]] = {}
    cases = run_cases(
        OursLibrary(data),
        spec,
        answers.__setitem__,
        say=lambda m: log(f"ours {data.kind} {data.label}: {m}"),
    )
    store = cases["write"].get("store")
    if store is None:
        raise RuntimeError(f"our write of {data.kind} {data.label} failed: {cases['write']}")
    opened = zv.open(store)
    data.layout = {"chunk": list(opened.chunk_shape), "bin": list(opened.bin_shape)}
    side = Side(cases, answers.get, versions={"zarr-vectors": version("zarr-vectors")})
    if data.kind in ("mesh", "skeletons"):
        side.extra["clip"] = _clip_times(data, store, args.repeat)
    log(f"ours {data.kind} {data.label}: peak memory of a write (fresh process)")
    peak_spec = os.path.join(where, "peak.json")
    os.makedirs(os.path.join(where, "peak"), exist_ok=True)
    Path(peak_spec).write_text(
        json.dumps(
            {"kind": data.kind, "size": data.size, "seed": args.seed, "store": spec["peak_store"]}
        )
    )
    side.peak = run_child("benchmarks.side_by_side", "--peak-child", peak_spec)
    return side


def _npz(directory: str, name: str) -> dict[str, np.ndarray] | None:
    path = os.path.join(directory, f"{name}.npz")
    if not os.path.exists(path):
        return None
    with np.load(path) as f:
        return {k: f[k] for k in f.files}


def _worker(python: Path, command: str, spec_path: str, timeout: float) -> str:
    """Run the worker; its stdout. Raises on failure or timeout (after killing it)."""
    done = subprocess.run(
        [str(python), "-I", str(WORKER), command, spec_path],
        cwd=os.path.dirname(spec_path),
        env=clean_env(),
        stdout=subprocess.PIPE,
        stderr=None,  # the worker's progress goes straight to our stderr
        text=True,
        timeout=timeout,
        check=False,
    )
    if done.returncode != 0:
        raise RuntimeError(f"reference worker {command} exited with {done.returncode}")
    return done.stdout


def run_reference(data: DataSet, args: argparse.Namespace, python: Path, where: str) -> Side:
    """Every case with the reference, in its venv, then its peak-memory child."""
    codec = OUR_CODEC if args.reference_codec == "ours" else "auto"
    spec = _spec(data, args, where, codec)
    os.makedirs(os.path.dirname(spec["peak_store"]), exist_ok=True)
    spec_path = os.path.join(where, "spec.json")
    Path(spec_path).write_text(json.dumps(spec))
    n_cases = 2 + len(spec["boxes"]) + bool(spec["id_sets"])
    failure = None
    try:
        _worker(python, "run", spec_path, args.timeout * n_cases + 300)
    except (RuntimeError, subprocess.TimeoutExpired) as exc:
        failure = str(exc)
    report = (
        json.loads(Path(spec["results"]).read_text()) if os.path.exists(spec["results"]) else {}
    )
    cases = report.get("cases", {})
    if failure:
        log(f"reference {data.kind} {data.label}: {failure}")
        cases.setdefault("write", {"error": failure})
    side = Side(cases, partial(_npz, spec["answers_dir"]), versions=report.get("versions", {}))
    log(f"reference {data.kind} {data.label}: peak memory of a write (fresh process)")
    try:
        side.peak = json.loads(_worker(python, "peak", spec_path, args.timeout).splitlines()[-1])
    except (RuntimeError, subprocess.TimeoutExpired, IndexError) as exc:
        side.peak = {"error": str(exc)}
    return side


def run_floor(data: DataSet, args: argparse.Namespace, where: str) -> dict[str, Any]:
    """The numpy floor: ``np.save``, ``np.load``, brute-force boxes, slicing by id."""
    out: dict[str, Any] = {}
    saves, cpu = [], []
    for i in range(args.repeat):
        directory = os.path.join(where, f"npy-{i}")
        seconds, used, _ = timed_write_cpu(partial(_save_arrays, data.arrays, directory))
        saves.append(seconds)
        cpu.append(used)
    out["write"] = {"times": saves, "cpu": cpu}
    out["size"] = tree_size(os.path.join(where, "npy-0"))
    first = os.path.join(where, "npy-0")
    out["read all"] = {
        "times": repeat_within(partial(load_arrays, first), args.repeat, READ_BUDGET)[0]
    }
    loaded = load_arrays(first)
    for label, boxes in data.boxes.items():
        per = [_floor_box(data, box, loaded, first, args) for box in boxes]
        out[f"box {label}"] = {"per_call": per}
    if data.frame is not None and data.id_sets:
        per = []
        for ids in data.id_sets:
            times, _ = repeat_within(partial(data.frame.gather, ids), args.repeat, WARM_BUDGET)
            per.append({"cold": None, "warm": times})
        out["by id"] = {"per_call": per}
    return out


def _floor_query(data: DataSet, arrays: dict[str, np.ndarray], box: _data.Box) -> object:
    if data.frame is None:
        return _data.brute_force(arrays["positions"], arrays[f"v_{data.attribute}"], box)
    frame = objects.Frame(
        positions=arrays["positions"],
        offsets=arrays["offsets"],
        attributes={k[2:]: v for k, v in arrays.items() if k.startswith("v_")},
        object_attributes={k[2:]: v for k, v in arrays.items() if k.startswith("o_")},
        links=arrays.get("links"),
        link_offsets=arrays.get("link_offsets"),
    )
    return frame.query(box)


def _floor_box(
    data: DataSet,
    box: _data.Box,
    loaded: dict[str, np.ndarray],
    directory: str,
    args: argparse.Namespace,
) -> dict[str, Any]:
    t_cold, _ = timed(lambda: _floor_query(data, load_arrays(directory), box))
    query = partial(_floor_query, data, loaded, box)
    warm, _ = repeat_within(query, args.repeat, WARM_BUDGET)
    steady = repeat_back_to_back(query, args.repeat, WARM_BUDGET)
    return {"cold": t_cold, "warm": warm, "steady": steady}


# -- checks ----------------------------------------------------------------------------------
_ROW = np.dtype((np.void, 12))


class RowLookup:
    """Find input rows by their exact float32 coordinates (for answers without ids).

    Parameters
    ----------
    positions
        ``(n, 3)`` float32 input vertices.
    """

    def __init__(self, positions: np.ndarray) -> None:
        keys = np.ascontiguousarray(positions, dtype=np.float32).view(_ROW).ravel()
        self.order = np.argsort(keys, kind="stable")
        self.keys = keys[self.order]
        self.unique = not bool((self.keys[1:] == self.keys[:-1]).any())

    def rows(self, positions: np.ndarray) -> np.ndarray:
        """Input row of every position (the first of equal ones), -1 where there is none."""
        if positions.shape[0] == 0:
            return np.zeros(0, dtype=np.int64)
        keys = np.ascontiguousarray(positions, dtype=np.float32).view(_ROW).ravel()
        at = np.minimum(np.searchsorted(self.keys, keys), self.keys.shape[0] - 1)
        return np.where(self.keys[at] == keys, self.order[at], -1)


@dataclass
class Verdict:
    """One answer checked against the truth.

    Attributes
    ----------
    ok
        Whether it equals the brute-force answer.
    key
        What the two libraries are compared on (points: canonical rows; objects: sorted
        ids), or None when it cannot be told.
    note
        Why it is not ok.
    """

    ok: bool
    key: np.ndarray | None
    note: str = ""


class Truth:
    """Brute-force answers of one data set, and the checks of every answer against them.

    Parameters
    ----------
    data
        The data set.
    """

    def __init__(self, data: DataSet) -> None:
        self.data = data
        self.frame = data.frame
        self._lookup: RowLookup | None = None
        self._rows: dict[tuple[str, int], np.ndarray] = {}

    @property
    def lookup(self) -> RowLookup:
        """Rows by coordinates (built on first use)."""
        if self._lookup is None:
            self._lookup = RowLookup(self.data.arrays["positions"])
        return self._lookup

    def check(self, case: str, index: int, answer: dict[str, np.ndarray] | None) -> Verdict:
        """Check the answer of ``case`` (``read all``, ``box 1%``...) for call ``index``."""
        if answer is None:
            return Verdict(False, None, "no answer saved")
        if self.frame is None:
            return self._points(case, index, answer)
        if case == "read all":
            expected = np.arange(self.frame.n_objects)
            return self._objects(answer, expected, ordered=False, everything=True)
        if case == "by id":
            return self._objects(answer, np.asarray(self.data.id_sets[index]), ordered=True)
        box = self.data.boxes[case.split()[1]][index]
        return self._objects(answer, self.frame.owners(box), ordered=False, box=box)

    def _true_rows(self, case: str, index: int) -> np.ndarray:
        """Canonical brute-force rows of a point case (computed once)."""
        if (case, index) not in self._rows:
            positions = self.data.arrays["positions"]
            values = self.data.arrays[f"v_{self.data.attribute}"]
            if case != "read all":
                box = self.data.boxes[case.split()[1]][index]
                positions, values = _data.brute_force(positions, values, box)
            self._rows[case, index] = _data.canonical_rows(positions, values)
        return self._rows[case, index]

    def _points(self, case: str, index: int, answer: dict[str, np.ndarray]) -> Verdict:
        values = answer.get("attr")
        if values is None or values.dtype != np.float32:
            return Verdict(False, None, f"attribute '{self.data.attribute}' missing or not f32")
        got = _data.canonical_rows(answer["positions"].astype(np.float32), values)
        true = self._true_rows(case, index)
        ok = np.array_equal(got, true)
        return Verdict(ok, got, "" if ok else f"{got.shape[0]:,} rows vs {true.shape[0]:,} true")

    def _objects(
        self,
        answer: dict[str, np.ndarray],
        expected: np.ndarray,
        *,
        ordered: bool,
        everything: bool = False,
        box: _data.Box | None = None,
    ) -> Verdict:
        if "ids" not in answer:
            return self._without_ids(answer, expected, everything, box)
        ids = answer["ids"].astype(np.int64)
        key = np.unique(ids)
        if ordered:
            same = np.array_equal(ids, expected)
        else:
            same = np.array_equal(np.sort(ids), np.sort(expected))
        note = "" if same else _id_note(key, np.unique(expected))
        exact = _exact(answer, self.frame, ids) if self.frame is not None else "no frame"
        if exact:
            note = f"{note}; {exact}" if note else exact
        return Verdict(same and not exact, key, note)

    def _without_ids(
        self,
        answer: dict[str, np.ndarray],
        expected: np.ndarray,
        everything: bool,
        box: _data.Box | None,
    ) -> Verdict:
        """An answer of vertices without object ids (the reference's mesh and skeletons):
        map each vertex to its input row by its coordinates."""
        assert self.frame is not None
        rows = self.lookup.rows(answer["positions"])
        if not self.lookup.unique or (rows < 0).any():
            return Verdict(False, None, "vertices not found in the input (or not unique)")
        key = np.unique(self.frame.vertex_object[rows])
        if everything:
            want = np.arange(self.data.n_vertices)
        else:
            assert box is not None
            lo, hi = box
            want = np.flatnonzero(
                ((self.frame.positions >= lo) & (self.frame.positions < hi)).all(1)
            )
        notes = []
        if not np.array_equal(np.sort(rows), want):
            notes.append(f"{rows.shape[0]:,} vertices vs {want.shape[0]:,} true in the box")
        if not np.array_equal(key, np.unique(expected)):
            notes.append(_id_note(key, np.unique(expected)))
        notes += _links_note(answer, self.frame, rows)
        if "attr" in answer and not np.array_equal(
            answer["attr"], self.frame.attributes[self.data.attribute][rows]
        ):
            notes.append("vertex attribute differs")
        return Verdict(not notes, key, "; ".join(notes))


def _id_note(got: np.ndarray, true: np.ndarray) -> str:
    extra, missing = np.setdiff1d(got, true).shape[0], np.setdiff1d(true, got).shape[0]
    shape = "superset" if not missing else ("subset" if not extra else "different set")
    return f"{got.shape[0]:,} objects vs {true.shape[0]:,} true ({shape})"


def _exact(answer: dict[str, np.ndarray], frame: objects.Frame, ids: np.ndarray) -> str:
    """Empty when every returned object holds exactly its input vertices, attribute values
    and links; else what differs."""
    expected = frame.gather(ids)
    if "offsets" not in answer or not np.array_equal(answer["offsets"], expected.offsets):
        return "object lengths differ"
    if not np.array_equal(answer["positions"], expected.positions):
        return "vertices differ"
    name = next(iter(expected.attributes))
    if "attr" not in answer or not np.array_equal(answer["attr"], expected.attributes[name]):
        return "vertex attribute missing or different"
    links = answer.get("faces", answer.get("edges"))
    if expected.links is not None and (links is None or not _same_rows(links, expected.links)):
        return "faces or edges differ"
    return ""


def _links_note(answer: dict[str, np.ndarray], frame: objects.Frame, rows: np.ndarray) -> list[str]:
    """Faces or edges of a vertex answer, mapped to input rows, against the input's links
    among the same vertices."""
    links = answer.get("faces", answer.get("edges"))
    if links is None or frame.links is None:
        return []
    inside = np.zeros(frame.positions.shape[0], dtype=bool)
    inside[rows] = True
    want = frame.links[inside[frame.links].all(1)]
    got = rows[links]
    if _same_rows(got, want):
        return []
    got_set, want_set = set(map(tuple, got.tolist())), set(map(tuple, want.tolist()))
    extra = sorted(got_set - want_set)
    sample = f", e.g. {list(extra[0])} (input rows)" if extra else ""
    return [
        f"{len(extra)} faces/edges not in the input{sample}, "
        f"{len(want_set - got_set)} of the input's among these vertices missing"
    ]


def _same_rows(got: np.ndarray, want: np.ndarray) -> bool:
    """Same multiset of rows (row order free; the order within a row kept)."""
    if got.shape != want.shape:
        return False
    return bool(np.array_equal(got[np.lexsort(got.T[::-1])], want[np.lexsort(want.T[::-1])]))


# -- rows ------------------------------------------------------------------------------------
COLUMNS = (
    "case",
    "n",
    "ours",
    "reference",
    "floor (numpy)",
    "ref/ours",
    "target",
    "status",
    "ours ok",
    "ref ok",
    "agree",
    "detail",
)


@dataclass
class SideRow:
    """One line of the side-by-side table.

    Attributes
    ----------
    case
        ``"points write"``, ``"streamlines query 1% warm"``...
    label
        The ``n`` cell.
    unit
        ``"s"``, ``"B"``, ``"files"`` or ``"MB"``.
    ours, ref, floor
        The values (None: not measured).
    ref_missing
        The reference cell when there is no value: ``"n/a [3]"``, ``"timeout [4]"``.
    target
        The least ``ref / ours`` the issue asks for.
    ours_ok, ref_ok, agree
        The checks (None: not applicable).
    detail
        Free text.
    """

    case: str
    label: str
    unit: str
    ours: float | None
    ref: float | None
    floor: float | None
    ref_missing: str = ""
    target: float | None = None
    ours_ok: bool | None = None
    ref_ok: bool | None = None
    agree: bool | None = None
    detail: str = ""

    @property
    def ratio(self) -> float | None:
        """``ref / ours`` (above 1: we are faster or smaller)."""
        if self.ours is None or self.ref is None or not self.ours:
            return None
        return self.ref / self.ours

    def cells(self) -> tuple[str, ...]:
        """The formatted cells, in :data:`COLUMNS` order."""
        ratio = self.ratio
        status = ""
        if self.target is not None:
            status = "PASS" if ratio is not None and ratio >= self.target else "FAIL"
        return (
            self.case,
            self.label,
            _value(self.ours, self.unit),
            self.ref_missing or _value(self.ref, self.unit),
            _value(self.floor, self.unit),
            "" if ratio is None else f"{ratio:.1f}x",
            "" if self.target is None else f"≥ {self.target:g}x",
            status,
            _flag(self.ours_ok),
            _flag(self.ref_ok),
            {None: "", True: "yes", False: "NO"}[self.agree],
            self.detail,
        )


def _value(value: float | None, unit: str) -> str:
    if value is None:
        return ""
    if unit == "s":
        return format_seconds(value)
    if unit == "B":
        return f"{value / 1e6:.1f} MB"
    if unit == "MB":
        return f"{value:.0f} MB"
    return f"{value:,.0f}"


def _flag(value: bool | None) -> str:
    return {None: "", True: "ok", False: "FAIL"}[value]


def format_table(rows: list[SideRow]) -> str:
    """The rows as an aligned plain-text table.

    Parameters
    ----------
    rows
        The rows, in print order.

    Returns
    -------
    str
        The table, without a trailing newline.
    """
    return align_table(COLUMNS, [row.cells() for row in rows])


class Notes:
    """Numbered footnotes, each text once."""

    def __init__(self, start: int) -> None:
        self.texts: list[str] = []
        self.start = start

    def mark(self, text: str) -> str:
        """``[k]`` for ``text`` (added on first use)."""
        if text not in self.texts:
            self.texts.append(text)
        return f"[{self.start + self.texts.index(text)}]"

    def lines(self) -> list[str]:
        """The footnotes, numbered."""
        return [f"[{self.start + i}] {t}" for i, t in enumerate(self.texts)]


def _missing(record: dict[str, Any] | None, what: str, notes: Notes) -> str:
    """The reference cell for a case without a value, with a footnote of why."""
    if record is None:
        return "n/a " + notes.mark(f"{what}: not run (the worker stopped before it)")
    if "timeout" in record:
        return "timeout " + notes.mark(f"{what}: stopped after {record['timeout']:g} s")
    if "skipped" in record:
        return "n/a " + notes.mark(f"{what}: not run ({record['skipped']})")
    reason = str(record.get("error", "no result")).split(". ")[0][:300]
    return "n/a " + notes.mark(f"{what}: the reference raised {reason}")


def _best(record: dict[str, Any] | None) -> float | None:
    if record is None or "times" not in record:
        return None
    return float(min(record["times"]))


def _per_call(record: dict[str, Any] | None, key: str) -> float | None:
    """Median over the boxes (id sets) of the cold time or of the best warm (or steady)
    repeat; None when a box has none."""
    if record is None or "per_call" not in record:
        return None
    values = [c[key] if key == "cold" else min(c.get(key) or [None]) for c in record["per_call"]]
    if any(v is None for v in values):
        return None
    return median(values)


@dataclass
class Context:
    """Everything measured for one data set, and the row builder."""

    data: DataSet
    ours: Side
    ref: Side
    floor: dict[str, Any]
    notes: Notes
    repeat: int
    rows: list[SideRow] = field(default_factory=list)

    def row(self, case: str, unit: str, ours: float | None, ref: float | None, **kw: Any) -> None:
        """Add the row ``case`` of this data set (with the issue's target, if any)."""
        target = TARGETS.get((self.data.kind, case))
        self.rows.append(
            SideRow(
                f"{self.data.kind} {case}",
                self.data.label,
                unit,
                ours,
                ref,
                target=target,
                **kw,
            )
        )


def _rows_write(ctx: Context) -> None:
    data, notes = ctx.data, ctx.notes
    ours_w, ref_w = ctx.ours.cases["write"], ctx.ref.cases.get("write") or {}
    t_ours, t_ref = _best(ours_w), _best(ref_w)
    assert t_ours is not None  # run_ours raises when our write fails
    mv = data.n_vertices / 1e6
    rate = f"{mv / t_ours:.2f}" + (f" vs {mv / t_ref:.2f}" if t_ref else "")
    layout = f"chunks {data.layout['chunk'][0]:g}, bins {data.layout['bin'][0]:g}"
    runs = f"best of {len(ours_w['times'])}" + (f"/{len(ref_w['times'])}" if t_ref else "")
    ctx.row(
        "write",
        "s",
        t_ours,
        t_ref,
        floor=_best(ctx.floor["write"]),
        ref_missing="" if t_ref else _missing(ref_w, f"{data.kind} {data.label} write", notes),
        detail=f"{rate} M vertices/s; {runs}; {layout}",
    )
    _rows_write_cpu(ctx, ours_w, ref_w if t_ref else None)
    _rows_size(ctx, ours_w["store"], ref_w.get("store") if t_ref else None)
    _row_peak(ctx)


def _write_cpu(record: dict[str, Any] | None) -> tuple[float, float] | None:
    """User and system CPU seconds of the fastest write of ``record``, if recorded."""
    if record is None or not record.get("cpu"):
        return None
    user, system = record["cpu"][int(np.argmin(record["times"]))]
    return float(user), float(system)


def _rows_write_cpu(ctx: Context, ours_w: dict[str, Any], ref_w: dict[str, Any] | None) -> None:
    """The user and the system CPU seconds of each side's fastest write (footnote 3)."""
    ours, ref, floor = _write_cpu(ours_w), _write_cpu(ref_w), _write_cpu(ctx.floor["write"])
    if ours is None:
        return
    for k, kind in enumerate(("user", "system")):
        shares = [
            f"{who} {cpu[k] / (cpu[0] + cpu[1]):.0%}"
            for who, cpu in (("ours", ours), ("ref", ref), ("floor", floor))
            if cpu and cpu[0] + cpu[1] > 0
        ]
        ctx.row(
            f"write CPU, {kind}",
            "s",
            ours[k],
            ref[k] if ref else None,
            floor=floor[k] if floor else None,
            ref_missing="" if ref else "n/a",
            detail=f"of the fastest write, all threads; share of its CPU: {', '.join(shares)}",
        )


def _rows_size(ctx: Context, ours: str, ref: str | None) -> None:
    """Bytes and files of the stores the last writes left, beside the ``.npy`` files."""
    ours_size = tree_size(ours)
    ref_size = tree_size(ref) if ref else (None, None)
    floor_bytes, floor_files = ctx.floor["size"]
    na = "" if ref else "n/a"
    ctx.row("size on disk", "B", ours_size[0], ref_size[0], floor=floor_bytes, ref_missing=na)
    ctx.row("files", "files", ours_size[1], ref_size[1], floor=floor_files, ref_missing=na)


def _peak_mb(report: dict[str, Any]) -> float | None:
    if "peak_kb" not in report:
        return None
    return float((report["peak_kb"] - report["before_kb"]) * 1024 / 1e6)


def _row_peak(ctx: Context) -> None:
    ours, ref = _peak_mb(ctx.ours.peak), _peak_mb(ctx.ref.peak)
    mb_in = ctx.data.input_bytes / 1e6
    shares = [f"{who} {mb / mb_in:.2f}x" for who, mb in (("ours", ours), ("ref", ref)) if mb]
    detail = f"above RSS before the write; input {mb_in:.0f} MB: {', '.join(shares)}"
    missing = "" if ref is not None else _missing(ctx.ref.peak, "peak RSS", ctx.notes)
    ctx.row("peak RSS of write", "MB", ours, ref, floor=None, ref_missing=missing, detail=detail)


def _verdicts(ctx: Context, truth: Truth, case: str, names: list[str]) -> dict[str, Any]:
    """Check every answer of a case for both libraries, and compare them."""
    ours_ok, ref_ok, agree = True, True, True
    ours_notes: list[str] = []
    ref_notes: list[str] = []
    record = ctx.ref.cases.get(case) or {}
    ref_done = "times" in record or "per_call" in record
    for i, name in enumerate(names):
        mine = truth.check(case, i, ctx.ours.answers(name))
        ours_ok &= mine.ok
        ours_notes += [mine.note] if not mine.ok else []
        if not ref_done:
            continue
        theirs = truth.check(case, i, ctx.ref.answers(name))
        ref_ok &= theirs.ok
        ref_notes += [theirs.note] if not theirs.ok else []
        agree &= (
            mine.key is not None and theirs.key is not None and np.array_equal(mine.key, theirs.key)
        )
    return {
        "ours_ok": ours_ok,
        "ref_ok": ref_ok if ref_done else None,
        "agree": agree if ref_done else None,
        "ours_notes": ours_notes,
        "ref_notes": ref_notes,
        "calls": len(names),
    }


def _check_detail(ctx: Context, case: str, checks: dict[str, Any]) -> str:
    """Footnote marks for the disagreements with brute force of each library, if any."""
    marks = []
    for who in ("ours", "ref"):
        bad = checks[f"{who}_notes"]
        if bad:
            where = f"{ctx.data.kind} {ctx.data.label} {case}"
            marks.append(
                ctx.notes.mark(
                    f"{where}: {who} differs from brute force on {len(bad)} of "
                    f"{checks['calls']}; first: {bad[0]}"
                )
            )
    return " ".join(marks)


def _rows_read(ctx: Context, truth: Truth) -> None:
    data = ctx.data
    record = ctx.ref.cases.get("read all")
    t_ref = _best(record)
    checks = _verdicts(ctx, truth, "read all", ["read-all"])
    runs = f"best of {len(ctx.ours.cases['read all'].get('times', []))}"
    if t_ref and record:
        runs += f"/{len(record['times'])}"
    mark = _check_detail(ctx, "read all", checks)
    ctx.row(
        "read all",
        "s",
        _best(ctx.ours.cases["read all"]),
        t_ref,
        floor=_best(ctx.floor["read all"]),
        ref_missing="" if t_ref else _missing(record, f"{data.kind} {data.label} read", ctx.notes),
        ours_ok=checks["ours_ok"],
        ref_ok=checks["ref_ok"],
        agree=checks["agree"],
        detail=f"open + read, {runs} {mark}".rstrip(),
    )


def _lookup_rows(ctx: Context, truth: Truth, case: str, title: str, prefix: str) -> None:
    """Cold and warm rows of a box fraction or of the reads by id."""
    data = ctx.data
    ours, ref, floor = ctx.ours.cases[case], ctx.ref.cases.get(case), ctx.floor.get(case)
    calls = len(ours.get("per_call", []))
    checks = _verdicts(ctx, truth, case, [f"{prefix}-{i}" for i in range(calls)])
    mark = _check_detail(ctx, case, checks)
    size = _answer_size(ours, data.kind)
    ref_size = _answer_size(ref, data.kind) if ref else ""
    for when, label in (("cold", "cold"), ("warm", "warm"), ("steady", "warm, back to back")):
        t_ref = _per_call(ref, when)
        detail = f"median over {calls}; ours {size}" + (f", ref {ref_size}" if ref_size else "")
        if when != "cold":
            detail = f"best of ≤{ctx.repeat}; {detail}"
        if when == "warm":
            clip = ctx.ours.extra.get("clip", {}).get(case.split()[-1])
            if clip is not None:
                detail += f"; ours clip=True {format_seconds(clip)}"
        ctx.row(
            f"{title} {label}",
            "s",
            _per_call(ours, when),
            t_ref,
            floor=_per_call(floor, when),
            ref_missing=""
            if t_ref is not None
            else _missing(ref, f"{data.kind} {data.label} {title}", ctx.notes),
            ours_ok=checks["ours_ok"],
            ref_ok=checks["ref_ok"],
            agree=checks["agree"],
            detail=f"{detail} {mark}".rstrip(),
        )


def _answer_size(record: dict[str, Any] | None, kind: str) -> str:
    """The median size of the answers: objects, else rows (points) or vertices."""
    if not record or "per_call" not in record:
        return ""
    calls = record["per_call"]
    if "objects" in calls[0]:
        return f"~{median([c['objects'] for c in calls]):,.0f} objects"
    noun = "rows" if kind == "points" else "vertices"
    return f"~{median([c['rows'] for c in calls]):,.0f} {noun}"


def build_rows(ctx: Context) -> list[SideRow]:
    """Every row of one data set.

    Parameters
    ----------
    ctx
        The measurements.

    Returns
    -------
    list of SideRow
        Write, size, files, peak RSS, read all, boxes cold and warm, reads by id.
    """
    truth = Truth(ctx.data)
    _rows_write(ctx)
    _rows_read(ctx, truth)
    for label in ctx.data.boxes:
        _lookup_rows(ctx, truth, f"box {label}", f"query {label}", label)
    if ctx.data.id_sets:
        count = len(ctx.data.id_sets[0])
        _lookup_rows(ctx, truth, "by id", f"{count} by id", "ids")
    return ctx.rows


# -- main ------------------------------------------------------------------------------------
def run_data_set(
    kind: str, size: tuple[int, ...], args: argparse.Namespace, python: Path, tmp: str, notes: Notes
) -> tuple[list[SideRow], dict[str, Any]]:
    """Generate one data set, run ours, the reference and the floor, and build its rows."""
    log(f"{kind} {size}: generate")
    data = make_data(kind, size, args.seed, args.boxes)
    where = tempfile.mkdtemp(prefix=f"{kind}-", dir=tmp)
    _save_arrays(data.arrays, os.path.join(where, "data"))
    ours = run_ours(data, args, os.path.join(where, "ours"))
    ref = run_reference(data, args, python, os.path.join(where, "ref"))
    log(f"{kind} {data.label}: numpy floor")
    floor = run_floor(data, args, os.path.join(where, "floor"))
    log(f"{kind} {data.label}: checks")
    rows = build_rows(Context(data, ours, ref, floor, notes, args.repeat))
    raw = {"ours": ours.cases, "ref": ref.cases, "floor": floor, "layout": data.layout}
    raw |= {"peak": {"ours": ours.peak, "ref": ref.peak}, "versions": ref.versions}
    return rows, raw  # its files go with the run's directory (see _write_case)


FOOTNOTES = (
    "ours = this repository's zarr_vectors; reference = zarr-vectors {ref} from PyPI in "
    "benchmarks/_reference_venv, run in a subprocess on the same .npy data; floor = numpy: "
    "np.save / np.load of the same arrays, a brute-force mask for a box (objects: plus "
    "np.unique of the owners and the gather of those objects whole), slicing for ids.",
    "ref/ours = reference time (or size) / ours: above 1 we are faster (smaller). target: "
    "the issue's goal for that ratio (status PASS/FAIL); a missed target does not change the "
    "exit status.",
    "Times: writes and full reads, best of up to --repeat runs (within {write:g} s / "
    "{read:g} s); every timed write (and np.save) starts after os.sync(), untimed, so the "
    "write-back of earlier writes does not land in it; a query or read by id: cold = a "
    "fresh open + the first call, warm = best of up to --repeat further calls on that "
    "handle (within {warm:g} s), each the median "
    "over the boxes (id sets). Every timed call follows a gc.collect(), so CPU caches are "
    "cold-ish even when warm (on this VM a 1e6 1% box of ours takes about twice as long "
    "after any pause as back to back); 'warm, back to back' = best of up to --repeat "
    "further calls in a row with the garbage collector off (as timeit does): the steady "
    "state of a loop of queries. The OS page cache is warm throughout. 'write CPU': the "
    "user and system (kernel) CPU seconds of the process during the fastest write, every "
    "thread (getrusage); the system share is the page cache and file system taking the "
    "bytes and the page faults of fresh memory. Same code for "
    "both libraries (reference_worker.run_cases); each warmed up on a tiny store first. No "
    "store is deleted before the run ends (deleting many files slows the file creations "
    "that follow on this machine's file system: benchmarks/README.md, Caveats).",
    "Layouts: the reference gets our store's chunk shape (cell_size) and bins (subcells = "
    "chunk / bin), bounds = the data cube, and by default our codec (Blosc LZ4, bit shuffle, "
    "level 5; --reference-codec default: its zstd). Its local stores are unsharded.",
    "ours ok / ref ok: every answer equals brute force (points: the sorted multiset of "
    "(x, y, z, value) bit patterns; objects: the set of ids meeting the half-open box, and "
    "each object exact: vertices, vertex attribute, faces or edges; by id: the ids in the "
    "order asked). The reference's mesh and skeleton reads return vertices without object "
    "ids: each vertex is mapped to its input row by its coordinates, giving its object. "
    "agree = both libraries return the same set (rows for points, object ids for objects).",
    "Reference query semantics: its box is closed (lo <= p <= hi; ours half-open; no data "
    "point lies on a random box's face here); a streamline box returns every streamline "
    "with a fragment in a CHUNK the box touches (a superset); a mesh or skeleton box returns "
    "only the vertices inside and the faces/edges among them (our 'clip=True' time is in "
    "detail).",
    "peak RSS: a fresh process per library loads or builds the data, warms up, resets its "
    "peak (VmHWM via /proc/self/clear_refs), writes once; shown: peak - RSS before.",
)


def _parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(
        prog="python -m benchmarks.side_by_side",
        description=f"zarr_vectors beside the reference zarr-vectors=={REFERENCE_VERSION} "
        "(installed into benchmarks/_reference_venv) and numpy",
    )
    parser.add_argument("--quick", action="store_true", help="smaller data sets (smoke run)")
    parser.add_argument(
        "--cases",
        type=_kinds,
        default=KINDS,
        help="comma-separated kinds: points,streamlines,mesh,skeletons (default all)",
    )
    parser.add_argument("--repeat", type=int, default=5, help="repeats per timing (default 5)")
    parser.add_argument("--boxes", type=int, default=5, help="boxes per fraction and id sets")
    parser.add_argument("--seed", type=int, default=0, help="seed of data, boxes and ids")
    parser.add_argument(
        "--timeout",
        type=float,
        default=600.0,
        help="seconds per case (write with its repeats, one box fraction...) before it is "
        "recorded as 'timeout' (default 600)",
    )
    parser.add_argument(
        "--reference-codec",
        choices=("ours", "default"),
        default="ours",
        help="the reference's compressor: ours (Blosc LZ4, default) or its own default (zstd)",
    )
    parser.add_argument(
        "--reference-python",
        type=Path,
        help="use this interpreter (with zarr-vectors==0.9.2) instead of the managed venv",
    )
    parser.add_argument(
        "--dir",
        default="/tmp",
        help="where the run's scratch directory (data, stores, spill files) goes (default /tmp)",
    )
    parser.add_argument("--json", metavar="PATH", help="also write every number as JSON")
    parser.add_argument("--peak-child", help=argparse.SUPPRESS)
    return parser


def _kinds(text: str) -> tuple[str, ...]:
    kinds = tuple(k.strip() for k in text.split(",") if k.strip())
    unknown = sorted(set(kinds) - set(KINDS))
    if unknown or not kinds:
        raise argparse.ArgumentTypeError(f"unknown kinds {unknown}; choose from {KINDS}")
    return kinds


def _heading(
    args: argparse.Namespace, versions: dict[str, str], started: str, seconds: float
) -> str:
    ours = ", ".join(f"{k} {version(k)}" for k in ("zarr-vectors", "numpy", "zarr", "numba"))
    ref = ", ".join(f"{k} {v}" for k, v in versions.items())
    return (
        f"zarr_vectors side by side, started {started}; "
        f"{platform.machine()}, {os.cpu_count()} CPUs, Python {platform.python_version()}\n"
        f"ours: {ours}\nreference: {ref or 'did not run'}\n"
        f"{'--quick; ' if args.quick else ''}seed {args.seed}, {args.boxes} boxes per fraction, "
        f"repeat {args.repeat}, timeout {args.timeout:g} s per case, reference codec "
        f"{args.reference_codec}; total run time {seconds:.0f} s"
    )


def main(argv: list[str] | None = None) -> int:
    """Run the side-by-side benchmark and print one table.

    Parameters
    ----------
    argv
        Command-line arguments (default ``sys.argv[1:]``).

    Returns
    -------
    int
        0 when every one of our answers equalled brute force, 1 otherwise.
    """
    args = _parser().parse_args(argv)
    if args.peak_child:
        return _peak_child(args.peak_child)
    if args.repeat < 1 or args.boxes < 1:
        _parser().error("--repeat and --boxes must be at least 1")
    began, started = time.perf_counter(), time.strftime("%Y-%m-%d %H:%M:%S %z")
    python = args.reference_python or ensure_venv()
    sizes = QUICK_SIZES if args.quick else DEFAULT_SIZES
    notes = Notes(len(FOOTNOTES) + 1)
    rows: list[SideRow] = []
    raw: list[dict[str, Any]] = []
    with tempfile.TemporaryDirectory(prefix="zv-side-", dir=args.dir) as tmp:
        for kind in args.cases:
            for size in sizes[kind]:
                new_rows, new_raw = run_data_set(kind, size, args, python, tmp, notes)
                rows += new_rows
                raw.append({"kind": kind, "size": size, **new_raw})
    versions: dict[str, str] = next((r["versions"] for r in raw if r["versions"]), {})
    print(_heading(args, versions, started, time.perf_counter() - began))
    print()
    print(format_table(rows))
    print()
    budgets = {"ref": REFERENCE_VERSION, "write": WRITE_BUDGET, "read": READ_BUDGET}
    budgets["warm"] = WARM_BUDGET
    for i, text in enumerate(FOOTNOTES, 1):
        print(f"[{i}] {text.format(**budgets)}")
    print("\n".join(notes.lines()))
    if args.json:
        out = {"rows": [asdict(r) for r in rows], "raw": raw, "notes": notes.lines()}
        Path(args.json).write_text(json.dumps(out, indent=1, default=str))
    failed = [r.case for r in rows if r.ours_ok is False]
    if failed:
        print(f"\nOUR answers disagree with brute force: {', '.join(failed)}", file=sys.stderr)
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main())
