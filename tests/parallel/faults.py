"""Partitions and stores that kill the worker process using them: faults for the tests.

They act only in a process other than the one that made them (a worker, not the test), and
are pickled by value so that workers need not import the tests.
"""

from __future__ import annotations

import os
from pathlib import Path
from typing import Any

import numpy as np
from zarr.abc.store import Store
from zarr.storage import WrapperStore

from zarr_vectors.store.zarr_adapter import Buffer


def _die(marker: str, always: bool) -> bool:
    """Whether to die now: always, or the first time; the marker file records a death."""
    if os.path.exists(marker) and not always:
        return False
    Path(marker).touch()
    return True


class KillingPositions:
    """Positions whose loading kills the worker: the first time only, or every time."""

    def __init__(self, positions: np.ndarray, marker: Path, *, always: bool = False) -> None:
        self.positions, self.marker, self.always = positions, str(marker), always
        self.home = os.getpid()

    def __array__(self, dtype: Any = None, copy: Any = None) -> np.ndarray:
        if os.getpid() != self.home and _die(self.marker, self.always):
            os._exit(1)
        return np.asarray(self.positions, dtype=dtype)


class KillingStore(WrapperStore[Store]):
    """A store whose writer dies as it writes the key ``victim`` (first time, or always).

    The writer task of that key's chunk dies; the others write their chunks.
    """

    def __init__(self, store: Store, marker: Path, *, victim: str, always: bool = False) -> None:
        super().__init__(store)
        self.marker, self.victim, self.always = str(marker), victim, always
        self.home = os.getpid()

    async def set(self, key: str, value: Buffer) -> None:
        if os.getpid() != self.home and key == self.victim and _die(self.marker, self.always):
            os._exit(1)
        await super().set(key, value)
