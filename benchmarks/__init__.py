"""Benchmarks of zarr_vectors against plain numpy floors.

Run from the repository root::

    python -m benchmarks            # 1e6 and 1e7 points
    python -m benchmarks --quick    # 1e5 and 1e6 points (smoke run)

See ``benchmarks/README.md`` for the columns and the caveats. This package imports only
the standard library at import time, so ``python -m benchmarks._startup`` can time the
import of numpy and zarr_vectors in a fresh process.
"""
