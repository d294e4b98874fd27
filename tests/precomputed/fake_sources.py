"""A minimal precomputed annotation source written from the format's description, for tests.

It serves one spatial level (one chunk holding every annotation): enough for a Neuroglancer
client to show points or line segments, independent of the store's own sources.
"""

from __future__ import annotations

import json
from collections.abc import Iterator

import numpy as np

from zarr_vectors.precomputed import PrecomputedFileNotFoundError

SPATIAL_CHUNK = "spatial0/0_0_0"


class OneChunkAnnotations:
    """Points (``geometry`` of shape (n, 3)) or lines (shape (n, 2, 3)) in one spatial chunk."""

    def __init__(self, name: str, geometry: np.ndarray) -> None:
        self.name = name
        self.geometry = np.asarray(geometry, dtype="<f4")
        self.kind = "point" if self.geometry.ndim == 2 else "line"

    def paths(self) -> Iterator[str]:
        yield "info"
        yield SPATIAL_CHUNK

    def read(self, path: str) -> bytes:
        if path == "info":
            return self._info()
        if path == SPATIAL_CHUNK:
            return self._chunk()
        raise PrecomputedFileNotFoundError(f"{self.name} has no file {path!r}")

    def _info(self) -> bytes:
        xyz = self.geometry.reshape(-1, 3)
        lower, upper = xyz.min(axis=0), xyz.max(axis=0) + 1
        info = {
            "@type": "neuroglancer_annotations_v1",
            "dimensions": {axis: [1e-9, "m"] for axis in "xyz"},
            "lower_bound": lower.tolist(),
            "upper_bound": upper.tolist(),
            "annotation_type": self.kind.upper(),
            "properties": [],
            "relationships": [],
            "by_id": {"key": "by_id"},
            "spatial": [
                {
                    "key": "spatial0",
                    "grid_shape": [1, 1, 1],
                    "chunk_size": (upper - lower).tolist(),
                    "limit": len(self.geometry),
                }
            ],
        }
        return json.dumps(info).encode()

    def _chunk(self) -> bytes:
        count = np.array([len(self.geometry)], dtype="<u8").tobytes()
        ids = np.arange(len(self.geometry), dtype="<u8").tobytes()
        return count + self.geometry.tobytes() + ids


def random_points(name: str, count: int, seed: int = 0) -> OneChunkAnnotations:
    """``count`` points uniform in a 1000 nm cube."""
    return OneChunkAnnotations(name, np.random.default_rng(seed).uniform(0, 1000, (count, 3)))


def random_segments(name: str, count: int, seed: int = 0) -> OneChunkAnnotations:
    """``count`` line segments along random walks in a 1000 nm cube."""
    rng = np.random.default_rng(seed)
    starts = rng.uniform(100, 900, (count, 3))
    return OneChunkAnnotations(name, np.stack([starts, starts + rng.normal(0, 40, (count, 3))], 1))
