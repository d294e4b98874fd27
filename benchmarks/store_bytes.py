"""``python -m benchmarks.store_bytes``: where the bytes of object stores go, beside 0.9.2.

Writes the issue's object data sets (10,000 streamlines x 100 vertices, a 1M-triangle mesh of
100 spheres, 100 skeletons x 1,000 nodes) on 512 chunks (8^3 chunks over the 200 mm cube,
bins a quarter of a chunk) with this library and, when its virtualenv is there or can be made
(:mod:`benchmarks.reference_env`), with ``zarr-vectors==0.9.2`` given the same chunks, bins
and our codec (as :mod:`benchmarks.side_by_side` does). For every store it lists each
array's files, the sum of their sizes (the bytes stored) and the space they take on the file
system (``du``: allocated blocks); for the fragment-index arrays of ours it also splits the
bytes into ZVFG blobs, zero padding after them and shard index plus CRC32C. Below the table it
counts each store's fragments (F summed over the chunks' ``vertex_fragments`` blobs), which
drive the size of the fragment-index arrays, the fragment attributes and the manifests, and
with ``--alternatives`` what ours' blob arrays would weigh in other encodings
(:mod:`benchmarks._blob_alternatives`), with ``--framing`` how many bytes of each sharded
array are payload and how many shard index, place records, Blosc headers and block CRC32C
(:mod:`benchmarks._framing`), and with ``--codecs`` what the numeric arrays of ours would
weigh under other Blosc settings and what encoding them costs (:mod:`benchmarks._codecs`).
The sum of file sizes is what "size" means in the table; allocated blocks depend on the file
system and on how many files a store has. See ``benchmarks/README.md``.
"""

from __future__ import annotations

import argparse
import json
import os
import struct
import tempfile
from collections import Counter
from collections.abc import Callable
from pathlib import Path
from typing import Any

import numpy as np
import zarr
from numcodecs import blosc

from benchmarks import objects
from benchmarks._blob_alternatives import ENCODINGS, blob_alternatives
from benchmarks._codecs import codec_alternatives, stored_blocks
from benchmarks._framing import framing_split
from benchmarks._measure import log, run_reference
from benchmarks._table import align_table
from benchmarks.reference_env import ensure_venv
from benchmarks.side_by_side import OUR_CODEC

__all__ = ["GRID", "KINDS", "array_sizes", "blob_split", "fragment_count", "main"]

GRID = 8
"""Chunks per axis over the data cube (512 chunks); bins are a quarter of a chunk."""

KINDS = ("streamlines", "mesh", "skeletons")
"""The data sets, in the order they are written."""


def _data_sets(quick: bool, kinds: tuple[str, ...]) -> dict[str, Callable[[], objects.ObjectSet]]:
    side = objects.SIDE / GRID
    layout = (side, side / 4)
    objects.MESH_CHUNK = objects.SKELETON_CHUNK = layout[0]
    objects.MESH_BIN = objects.SKELETON_BIN = layout[1]
    scale = 10 if quick else 1
    makers: dict[str, Callable[[], objects.ObjectSet]] = {
        "streamlines": lambda: objects.make_streamlines(10_000 // scale, 100, 0, layout=layout),
        "mesh": lambda: objects.make_mesh(100 // scale, 10_000, 0),
        "skeletons": lambda: objects.make_skeletons(100 // scale, 1_000, 0),
    }
    return {kind: makers[kind] for kind in kinds}


def _array_of(relative: str) -> str:
    """The array (or ``zarr.json``) a file of a store belongs to."""
    parts = relative.split(os.sep)
    if parts[-1] == "zarr.json":
        return "zarr.json"
    return "/".join(parts[: parts.index("c")]) if "c" in parts else "/".join(parts[:-1])


def array_sizes(store: str) -> dict[str, tuple[int, int, int]]:
    """``(files, bytes, allocated bytes)`` of every array of ``store`` (and ``zarr.json``).

    The entry ``"(directories)"`` counts the directories and the blocks ``du`` gives them;
    their bytes (sum of sizes) are 0.

    Parameters
    ----------
    store
        A local store directory.

    Returns
    -------
    dict
        Array path (relative to the store) -> files, sum of file sizes, ``st_blocks * 512``.

    Examples
    --------
    >>> import os, tempfile
    >>> root = tempfile.mkdtemp()
    >>> os.makedirs(os.path.join(root, "0", "vertices", "c", "0"))
    >>> with open(os.path.join(root, "0", "vertices", "c", "0", "0"), "wb") as f:
    ...     _ = f.write(b"12345")
    >>> array_sizes(root)["0/vertices"][:2]
    (1, 5)
    """
    files: Counter[str] = Counter()
    sizes: Counter[str] = Counter()
    blocks: Counter[str] = Counter()
    for where, dirs, names in os.walk(store):
        for name in dirs:  # what ``du`` adds for the directories themselves
            stat = os.stat(os.path.join(where, name))
            files["(directories)"] += 1
            blocks["(directories)"] += stat.st_blocks * 512
            sizes["(directories)"] += 0
        for name in names:
            path = os.path.join(where, name)
            key = _array_of(os.path.relpath(path, store))
            stat = os.stat(path)
            files[key] += 1
            sizes[key] += stat.st_size
            blocks[key] += stat.st_blocks * 512
    return {k: (files[k], sizes[k], blocks[k]) for k in sizes}


def blob_split(array: str) -> tuple[int, int, int, bool]:
    """ZVFG bytes, stored block bytes after them, shard index + CRC32C + place record bytes
    of a fragment-blob array, and whether its blocks are compressed.

    Parameters
    ----------
    array
        The directory of a ``vertex_fragments`` or ``link_fragments`` array of ours.

    Returns
    -------
    tuple
        The blobs' lengths S (spec §6.2); the stored block bytes after them (raw blocks:
        zero padding) or, for compressed blocks (format 1.4, spec §9.0.4), every stored
        block byte; the rest; whether the blocks are compressed.
    """
    meta = json.loads(Path(array, "zarr.json").read_text())
    sharding = meta["codecs"][0]["configuration"]
    b = sharding["chunk_shape"][-1]
    per_shard = int(np.prod(meta["chunk_grid"]["configuration"]["chunk_shape"][:-1]))
    blocks = per_shard * (meta["chunk_grid"]["configuration"]["chunk_shape"][-1] // b)
    compressed = any(c.get("name") == "blosc" for c in sharding["codecs"])
    blob = padding = other = 0
    for where, _, names in os.walk(os.path.join(array, "c")):
        for name in names:
            raw = Path(where, name).read_bytes()
            index = np.frombuffer(raw[-(16 * blocks + 4) : -4], dtype="<u8").reshape(-1, 2)
            present = index[index[:, 0] != np.uint64(2**64 - 1)].tolist()
            stored = [raw[a : a + n - 4] for a, n in present]  # blocks without CRC
            payload = b"".join(blosc.decompress(x) for x in stored) if compressed else b""
            stored_bytes = sum(len(x) for x in stored)
            blob += _zvfg_sizes(payload or b"".join(stored), b)
            padding += stored_bytes
            other += len(raw) - stored_bytes
    if not compressed:
        padding -= blob
    return blob, padding, other, compressed


def fragment_count(store: str) -> int:
    """Fragments of a store's level 0: F summed over every chunk's ``vertex_fragments`` blob
    (or ``fragment_records`` record, format 1.6).

    Reads the blobs with zarr-python, so it counts the fragments of ours (ZVFG blobs in a
    ``uint8`` row array) and of zarr-vectors 0.9.2 (one ZVFG blob per chunk as variable-length
    bytes) alike.

    Parameters
    ----------
    store
        A local store directory with a ``0/vertex_fragments`` array.

    Returns
    -------
    int
        The number of fragments.
    """
    name = "fragment_records"  # format 1.6 (spec §6.9): F at the same header offset
    if not os.path.exists(os.path.join(store, "0", name)):
        name = "vertex_fragments"
    blobs = np.asarray(zarr.open_array(os.path.join(store, "0", name), mode="r")[...])
    if blobs.dtype == object:  # 0.9.2: one bytes object per chunk, empty chunks empty
        return sum(_header_f(bytes(b)) for b in blobs.ravel() if b is not None and len(b))
    rows = blobs.reshape(-1, blobs.shape[-1])
    return sum(_header_f(row.tobytes()) for row in rows if row[:4].any())


def _header_f(blob: bytes) -> int:
    """F of a ZVFG blob (spec §6.1)."""
    return int(struct.unpack_from("<I", blob, 8)[0])


def _zvfg_sizes(blocks: bytes, b: int) -> int:
    """Sum of S of the blobs in ``blocks``: each chunk's blob starts a run of its blocks."""
    total, at = 0, 0
    while at < len(blocks):
        size = _zvfg_size(blocks[at:])
        total += size
        at += -(-size // b) * b
    return total


def _zvfg_size(blob: bytes) -> int:
    """S of a ZVFG blob (spec §6.2) from its header, bitmap and last CSR offset, or of a
    counts-form blob (format 1.5, spec §6.8) from its header."""
    flags, n_fragments, n_ranges = struct.unpack_from("<HII", blob, 6)
    if not n_fragments:
        return 16
    if flags & 1:
        return int(16 + n_fragments * (1 << ((flags >> 1) & 3)))
    bitmap = 8 * ((n_fragments + 63) // 64)  # M = 8 * ceil(ceil(F / 8) / 8)
    explicit = n_fragments - n_ranges
    head = 16 + bitmap + 16 * n_ranges + 4 * (explicit + 1)
    (total,) = struct.unpack_from("<I", blob, head - 4)
    return int(head + 8 * total)


def _write_ours(data: objects.ObjectSet, path: str) -> None:
    data.write(path)


def _write_reference(data: objects.ObjectSet, kind: str, where: str, python: Path) -> str:
    """The reference's store of ``data`` (same chunks, bins and codec), in its venv."""
    data_dir = os.path.join(where, f"data-{kind}")
    os.makedirs(data_dir, exist_ok=True)
    data.frame.save(data_dir)
    side = objects.SIDE / GRID
    spec = {
        "kind": kind,
        "attribute": next(iter(data.frame.attributes)),
        "data_dir": data_dir,
        "layout": {
            "chunk": [side] * 3,
            "bin": [side / 4] * 3,
            "bounds": [[0.0] * 3, [objects.SIDE] * 3],
            "compression": OUR_CODEC,
        },
    }
    spec_path = os.path.join(where, f"spec-{kind}.json")
    Path(spec_path).write_text(json.dumps(spec))
    store = os.path.join(where, f"ref-{kind}.zv")
    run_reference(python, "reference_worker", "write", spec_path, store)
    return store


def _mb(n: int) -> str:
    return f"{n / 1e6:.3f}"


def _rows(kind: str, ours: str, ref: str | None) -> list[tuple[str, ...]]:
    mine = array_sizes(ours)
    theirs = array_sizes(ref) if ref else {}
    rows: list[tuple[str, ...]] = []
    for name, (files, size, alloc) in sorted(mine.items(), key=lambda kv: -kv[1][1]):
        detail = ""
        if name.endswith("_fragments"):
            blob, padding, other, packed = blob_split(os.path.join(ours, name))
            kept = "compressed blocks" if packed else "zero padding"
            detail = f"ZVFG {_mb(blob)}, {kept} {_mb(padding)}, index/CRC/place {_mb(other)}"
        rows.append((kind, "ours", name, str(files), _mb(size), _mb(alloc), detail))
    for name, (files, size, alloc) in sorted(theirs.items(), key=lambda kv: -kv[1][1])[:10]:
        rows.append((kind, "0.9.2", name, str(files), _mb(size), _mb(alloc), ""))
    for side, table in (("ours", mine), ("0.9.2", theirs)):
        if table:
            files = sum(v[0] for k, v in table.items() if k != "(directories)")
            size, alloc = (sum(v[i] for v in table.values()) for i in (1, 2))
            rows.append((kind, side, "TOTAL (files)", str(files), _mb(size), _mb(alloc), ""))
    return rows


def _fragment_line(kind: str, ours: str, ref: str | None) -> str:
    theirs = f", 0.9.2 {fragment_count(ref):,}" if ref else ""
    return f"{kind}: level-0 fragments: ours {fragment_count(ours):,}{theirs}"


def _alternative_lines(kind: str, ours: str) -> list[str]:
    lines = []
    for name in ("vertex_fragments", "link_fragments"):
        sizes = blob_alternatives(os.path.join(ours, "0", name))
        cells = ", ".join(f"{e} {_mb(sizes[e])}" for e in ENCODINGS)
        lines.append(f"{kind}: 0/{name} compressed blocks (MB): {cells}")
    return lines


def _framing_lines(kind: str, ours: str) -> list[str]:
    """Per sharded array of ours' level 0: payload and framing (:mod:`benchmarks._framing`)."""
    lines = []
    level = Path(ours, "0")
    for meta in sorted(level.rglob("zarr.json")):
        doc = json.loads(meta.read_text())
        codecs = doc.get("codecs") or [{}]
        if codecs[0].get("name") != "sharding_indexed":
            continue
        f = framing_split(meta.parent)
        lines.append(
            f"{kind}: {meta.parent.relative_to(ours).as_posix()}: {f.shards} shards, "
            f"{f.entries:,} index entries, {f.blocks:,} blocks; payload {f.payload:,}, "
            f"index {f.index:,}, place records {f.place:,}, Blosc headers {f.headers:,}, "
            f"block CRC32C {f.crc:,} bytes"
        )
    return lines


def _stored_setting(meta: dict[str, Any]) -> tuple[str, int, str] | None:
    codecs = meta["codecs"]
    if codecs[0].get("name") == "sharding_indexed":
        codecs = codecs[0]["configuration"]["codecs"]
    for codec in codecs:
        if codec.get("name") == "blosc":
            conf = codec["configuration"]
            return conf["cname"], conf["clevel"], conf["shuffle"]
    return None


def _codec_lines(kind: str, ours: str) -> list[str]:
    """Per numeric array of ours' level 0: bytes and encoding CPU under other Blosc settings
    (:mod:`benchmarks._codecs`); ``*`` marks the setting the store has."""
    lines = []
    for meta_path in sorted(Path(ours, "0").rglob("zarr.json")):
        meta = json.loads(meta_path.read_text())
        name = meta_path.parent.relative_to(ours).as_posix()
        if meta.get("node_type") != "array" or name.endswith("_fragments"):
            continue
        blocks = stored_blocks(meta_path.parent)
        if not blocks:
            continue
        stored = _stored_setting(meta)
        cells = ", ".join(
            f"{'*' if setting == stored else ''}{setting[0]} {setting[1]} {setting[2]} "
            f"{size:,} B {seconds * 1e3:.1f} ms"
            for setting, (size, seconds) in codec_alternatives(blocks).items()
        )
        lines.append(f"{kind}: {name} ({len(blocks)} blocks): {cells}")
    return lines


def main(argv: list[str] | None = None) -> int:
    """Write the stores, print the table (and write it to ``--out``).

    Parameters
    ----------
    argv
        Command-line arguments (default ``sys.argv[1:]``).

    Returns
    -------
    int
        0.
    """
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--quick", action="store_true", help="a tenth of the objects")
    parser.add_argument("--no-reference", action="store_true", help="ours only")
    parser.add_argument("--out", help="also write the table (markdown) to this file")
    parser.add_argument("--dir", default="/tmp", help="scratch directory (default /tmp)")
    parser.add_argument(
        "--kind", action="append", choices=KINDS, help="only this data set (repeatable)"
    )
    parser.add_argument(
        "--alternatives", action="store_true", help="also size ours' blobs in other encodings"
    )
    parser.add_argument(
        "--framing", action="store_true", help="also split ours' sharded arrays into framing"
    )
    parser.add_argument(
        "--codecs", action="store_true", help="also size ours' numeric arrays in other codecs"
    )
    args = parser.parse_args(argv)
    python = None if args.no_reference else ensure_venv()
    rows: list[tuple[str, ...]] = []
    counts: list[str] = []
    kinds = tuple(k for k in KINDS if k in (args.kind or KINDS))
    with tempfile.TemporaryDirectory(prefix="zv-bytes-", dir=args.dir) as where:
        for kind, make in _data_sets(args.quick, kinds).items():
            log(f"{kind}: generate and write")
            data = make()
            ours = os.path.join(where, f"{kind}.zv")
            _write_ours(data, ours)
            ref = _write_reference(data, kind, where, python) if python else None
            rows.extend(_rows(kind, ours, ref))
            counts.append(_fragment_line(kind, ours, ref))
            if args.alternatives:
                counts.extend(_alternative_lines(kind, ours))
            if args.framing:
                counts.extend(_framing_lines(kind, ours))
            if args.codecs:
                counts.extend(_codec_lines(kind, ours))
    header = ("kind", "library", "array", "files", "MB (sum of sizes)", "MB (du)", "detail")
    table = "\n".join([align_table(header, rows), "", *counts])
    print(table)
    if args.out:
        Path(args.out).write_text(table + "\n")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
