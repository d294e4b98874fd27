"""The reference implementation's ``build_pyramid``, timed on one data set (issue 37).

Run by ``benchmarks/levels_overview.py`` with the interpreter of the reference virtualenv
(``benchmarks/_reference_venv``, ``zarr-vectors==0.9.2`` from PyPI)::

    python -I reference_pyramid.py SPEC.json

Standalone like :mod:`benchmarks.reference_worker` (whose :class:`ReferenceLibrary` writes
level 0 through the reference's public API): the standard library and numpy, the reference
package only through that class. The spec (JSON) holds what ``reference_worker`` reads
(``kind``, ``data_dir``, ``attribute``, ``layout``) plus ``store`` (the path to write),
``factors`` (``build_pyramid``'s ``[(coarsen, sparsity), ...]``) and ``repeat``. It prints
one JSON object: the median write and pyramid seconds, the store's bytes and files before
and after the pyramid, and the vertex and object count of every level built.
"""

from __future__ import annotations

import json
import os
import shutil
import statistics
import sys
from pathlib import Path
from typing import Any

# ``python -I`` leaves the script's folder off sys.path; it holds no zarr_vectors package.
sys.path.insert(0, str(Path(__file__).resolve().parent))
from reference_worker import ReferenceLibrary, timed_write  # type: ignore[import-not-found]


def tree_size(path: str) -> tuple[int, int]:
    """Bytes and files under ``path``."""
    sizes = [p.stat().st_size for p in Path(path).rglob("*") if p.is_file()]
    return sum(sizes), len(sizes)


def run(spec: dict[str, Any]) -> dict[str, Any]:
    """Write level 0 and build the pyramid ``repeat`` times; the medians and what it built."""
    library = ReferenceLibrary(spec)
    store, factors = spec["store"], [tuple(f) for f in spec["factors"]]
    library.warm_up(os.path.dirname(store))
    writes, pyramids, built = [], [], None
    before = after = (0, 0)
    for _ in range(int(spec["repeat"])):
        shutil.rmtree(store, ignore_errors=True)
        writes.append(timed_write(lambda: library.write(store))[0])
        before = tree_size(store)
        ds = library.zv.open(store, mode="r+")
        seconds, summary = timed_write(lambda d=ds: d.build_pyramid(factors=factors))
        pyramids.append(seconds)
        after = tree_size(store)
        built = [
            {k: s.get(k) for k in ("vertex_count", "object_count", "objects_kept")}
            for s in summary["level_specs"]
        ]
    shutil.rmtree(store, ignore_errors=True)
    return {
        "write": statistics.median(writes),
        "pyramid": statistics.median(pyramids),
        "runs": {"write": writes, "pyramid": pyramids},
        "bytes_level0": before[0],
        "files_level0": before[1],
        "bytes": after[0],
        "files": after[1],
        "levels": built,
        "versions": library.versions(),
    }


if __name__ == "__main__":
    print(json.dumps(run(json.loads(Path(sys.argv[1]).read_text()))))
