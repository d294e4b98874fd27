"""``python -m benchmarks.default_shards``: level 0's default shards against one chunk per shard.

The data of issue 39 (10,000 streamlines x 100 vertices, 100 skeletons x 1,000 nodes, a
1M-triangle mesh of 100 spheres, 1e6 points with object ids, 100 points per object), each
on 512 chunks (8 per axis over its bounds, bins a quarter of a chunk), written with
``shard_chunks=1`` ("S=1", one storage object per chunk and array: the default before) and
with the default (``S_0``, spec §9.0). Writes and reads run interleaved (S=1, S_0, S_0, S=1
per round) so both see the same load; the table gives the medians, files, directories and
bytes, and the ratio S_0 / S=1 measured in the same run. Reads: ``zv.open`` + a 1% box
(local disk, page cache warm), and with ``--s3`` the same over moto's S3 server on
loopback (:func:`benchmarks.remote.loopback_s3`) with the requests and waves of the
:class:`~benchmarks._latency.LatencyStore` log (no injected latency). Both stores' answers
are compared row for row. Scratch goes to a ``tempfile`` directory, removed at the end.

Usage: ``python -m benchmarks.default_shards [--repeat 3] [--s3] [--quick]``.
"""

from __future__ import annotations

import argparse
import os
import shutil
import tempfile
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

import numpy as np

import zarr_vectors as zv
from benchmarks import _data, objects
from benchmarks._latency import LatencyStore
from benchmarks._measure import log, median
from benchmarks._table import align_table
from zarr_vectors.write import ObjectWriteArgs

CHUNKS_PER_AXIS = 8
"""512 chunks over the data, as in the issue's side-by-side table."""
LAYOUTS = ("S=1", "S_0")


@dataclass
class Case:
    """One data set: how to write it with given options, and its 1% boxes."""

    name: str
    write: Callable[[str, zv.WriteOptions], None]
    boxes: list[tuple[np.ndarray, np.ndarray]]
    figures: dict[str, dict[str, Any]] = field(default_factory=dict)


def _chunk(positions: np.ndarray) -> tuple[float, float]:
    """Chunk and bin side giving ``CHUNKS_PER_AXIS`` chunks along the widest axis."""
    extent = float((positions.max(axis=0) - positions.min(axis=0)).max())
    chunk = extent / CHUNKS_PER_AXIS * 1.0001
    return chunk, chunk / 4


def _points(n: int, seed: int) -> Case:
    positions, values = _data.make_points(n, seed)
    ids = np.arange(n, dtype=np.int64) // 100
    chunk, bins = _chunk(positions)

    def write(path: str, options: zv.WriteOptions) -> None:
        zv.write_points(
            path,
            positions,
            attributes={_data.ATTRIBUTE: values},
            object_ids=ids,
            chunk_shape=chunk,
            bin_shape=bins,
            options=options,
            progress=False,
        )

    return Case(f"points {n:.0e} with ids", write, _data.make_boxes(0.01, 3, seed))


def _objects(data: objects.ObjectSet, seed: int) -> Case:
    frame = data.frame
    chunk, bins = _chunk(frame.positions)

    def write(path: str, options: zv.WriteOptions) -> None:
        settings: ObjectWriteArgs = {
            "chunk_shape": chunk,
            "bin_shape": bins,
            "options": options,
            "progress": False,
            "object_attributes": frame.object_attributes,
        }
        if data.kind == "streamlines":
            settings["attributes"] = frame.attributes
            zv.write_polylines(
                path,
                (frame.positions, frame.offsets),
                kind="streamline",
                **settings,
            )
        elif data.kind == "mesh":
            settings["attributes"] = frame.attributes
            zv.write_mesh(
                path,
                frame.positions,
                frame.links,
                vertex_objects=frame.vertex_object,
                **settings,
            )
        else:
            assert frame.links is not None
            parents = np.full(frame.positions.shape[0], -1, dtype=np.int64)
            parents[frame.links[:, 0]] = frame.links[:, 1]
            zv.write_skeletons(
                path,
                frame.positions,
                parents=parents,
                vertex_objects=frame.vertex_object,
                radius=frame.attributes["radius"],
                **settings,
            )

    return Case(f"{data.kind} {data.label}", write, objects.make_boxes(0.01, 3, seed))


def make_cases(quick: bool, seed: int) -> list[Case]:
    """The issue's four data sets (``quick``: a tenth of each)."""
    scale = 10 if quick else 1
    return [
        _objects(objects.make_streamlines(10_000 // scale, 100, seed), seed),
        _objects(objects.make_skeletons(100 // scale, 1_000, seed), seed),
        _objects(objects.make_mesh(100 // scale, 10_000, seed), seed),
        _points(1_000_000 // scale, seed),
    ]


def _options(layout: str) -> zv.WriteOptions:
    return zv.WriteOptions(shard_chunks=1) if layout == "S=1" else zv.WriteOptions()


def _tree(path: str) -> tuple[int, int, int]:
    """Files, directories (the store's root included) and bytes under ``path``."""
    files = directories = nbytes = 0
    for root, _, names in os.walk(path):
        directories += 1
        files += len(names)
        nbytes += sum(os.path.getsize(os.path.join(root, n)) for n in names)
    return files, directories, nbytes


def _rows(result: zv.QueryResult) -> np.ndarray:
    """The result's positions, sorted (both layouts must give the same rows)."""
    positions = np.asarray(result.positions)
    return positions[np.lexsort(positions.T[::-1])] if positions.size else positions


def _interleaved(rounds: int) -> list[str]:
    """S=1, S_0, S_0, S=1 per round: each layout as often first as last."""
    order: list[str] = []
    for _ in range(rounds):
        order += [LAYOUTS[0], LAYOUTS[1], LAYOUTS[1], LAYOUTS[0]]
    return order


def run_local(case: Case, tmp: str, rounds: int) -> dict[str, str]:
    """Write and query both layouts interleaved; keep the last store of each."""
    writes: dict[str, list[float]] = {k: [] for k in LAYOUTS}
    os.makedirs(tmp, exist_ok=True)
    paths = {k: os.path.join(tmp, f"{k}.zarrvectors") for k in LAYOUTS}
    for layout in _interleaved(rounds):
        shutil.rmtree(paths[layout], ignore_errors=True)
        start = time.perf_counter()
        case.write(paths[layout], _options(layout))
        writes[layout].append(time.perf_counter() - start)
    answers: dict[str, list[np.ndarray]] = {}
    reads: dict[str, list[float]] = {k: [] for k in LAYOUTS}
    for layout in _interleaved(rounds):
        start = time.perf_counter()
        found = [zv.open(paths[layout]).query(box) for box in case.boxes]
        reads[layout].append((time.perf_counter() - start) / len(case.boxes))
        answers[layout] = [_rows(f) for f in found]
    same = all(np.array_equal(a, b) for a, b in zip(answers["S=1"], answers["S_0"], strict=True))
    for layout in LAYOUTS:
        files, directories, nbytes = _tree(paths[layout])
        case.figures[layout] = {
            "files": files,
            "dirs": directories,
            "bytes": nbytes,
            "write": median(writes[layout]),
            "box": median(reads[layout]),
            "same": same,
        }
    return paths


def run_s3(case: Case, paths: dict[str, str], options: dict[str, Any], rounds: int) -> None:
    """Upload both stores to the loopback S3 server; open + 1% box over it, interleaved."""
    from benchmarks.remote import upload

    stores = {k: upload(options, p, f"{case.name.replace(' ', '_')}-{k}") for k, p in paths.items()}
    times: dict[str, list[float]] = {k: [] for k in LAYOUTS}
    upload_log: dict[str, tuple[int, int]] = {}
    for layout in _interleaved(rounds):
        store = LatencyStore(stores[layout], 0.0)
        start = time.perf_counter()
        for box in case.boxes:
            zv.open(store).query(box)
        times[layout].append((time.perf_counter() - start) / len(case.boxes))
        summary = store.log.summary()
        upload_log[layout] = (summary.requests // len(case.boxes), summary.waves // len(case.boxes))
    for layout in LAYOUTS:
        requests, waves = upload_log[layout]
        case.figures[layout] |= {"s3": median(times[layout]), "requests": requests, "waves": waves}


def _fmt_bytes(n: int) -> str:
    return f"{n / 1e6:.1f} MB"


def format_rows(cases: list[Case], s3: bool) -> str:
    """One line per case and layout, then the S_0 / S=1 ratio line of each case."""
    header = ["case", "layout", "files", "dirs", "size", "write", "open + 1% box"]
    if s3:
        header += ["S3 open + 1% box", "requests", "waves"]
    rows: list[tuple[str, ...]] = []
    for case in cases:
        for layout in LAYOUTS:
            f = case.figures[layout]
            cells = [
                case.name,
                layout,
                f"{f['files']:,}",
                f"{f['dirs']:,}",
                _fmt_bytes(f["bytes"]),
                f"{f['write']:.3f} s",
                f"{1000 * f['box']:.1f} ms" + ("" if f["same"] else " DIFFERENT"),
            ]
            if s3:
                cells += [f"{1000 * f['s3']:.1f} ms", str(f["requests"]), str(f["waves"])]
            rows.append(tuple(cells))
        a, b = case.figures["S=1"], case.figures["S_0"]
        ratio = [
            case.name,
            "S_0 / S=1",
            f"{b['files'] / a['files']:.3f}",
            f"{b['dirs'] / a['dirs']:.3f}",
            f"{b['bytes'] / a['bytes']:.3f}",
            f"{b['write'] / a['write']:.2f}",
            f"{b['box'] / a['box']:.2f}",
        ]
        if s3:
            ratio += [f"{b['s3'] / a['s3']:.2f}", "", ""]
        rows.append(tuple(ratio))
    return align_table(tuple(header), rows)


def main(argv: list[str] | None = None) -> int:
    """Run every case and print the table; 1 when the layouts' answers differ."""
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--repeat", type=int, default=2, help="rounds of S=1, S_0, S_0, S=1")
    parser.add_argument("--s3", action="store_true", help="also read over loopback S3")
    parser.add_argument("--quick", action="store_true", help="a tenth of each data set")
    parser.add_argument("--seed", type=int, default=0)
    args = parser.parse_args(argv)
    cases = make_cases(args.quick, args.seed)
    tmp = tempfile.mkdtemp(prefix="zv-bench-")
    try:
        zv.write_points(os.path.join(tmp, "warm"), np.ones((10, 3)), progress=False)
        kept = {}
        for case in cases:
            log(f"{case.name}: local")
            kept[case.name] = run_local(
                case, os.path.join(tmp, case.name.replace(" ", "_")), args.repeat
            )
        if args.s3:
            from benchmarks.remote import loopback_s3

            with loopback_s3() as options:
                for case in cases:
                    log(f"{case.name}: S3")
                    run_s3(case, kept[case.name], options, args.repeat)
    finally:
        shutil.rmtree(tmp, ignore_errors=True)
    print(format_rows(cases, args.s3))
    return 0 if all(c.figures["S_0"]["same"] for c in cases) else 1


if __name__ == "__main__":
    raise SystemExit(main())
