"""The host's memory speed at the time of a run, printed beside the benchmark tables.

The targets are ratios to a numpy floor measured in the same run, yet on a shared virtual
machine the ratios of small object queries move with the host: the floor streams through
large arrays (prefetched), while a query of a few thousand objects is many small steps whose
every cache miss waits. On one of the 2-core machines of this project, on one day, with nothing
else of ours running, the same skeleton 1% box measured 0.25x its floor and later 0.56x.
The latency of dependent loads (a random pointer chase over a buffer larger than the core's
cache) tells such hours apart; the load average does not. Measured at the start and at the end
of a run, the figures let a reader see whether two runs were made on the same host state.
"""

from __future__ import annotations

import time

import numba
import numpy as np

__all__ = ["HostState", "host_lines", "host_state"]

_STEPS = 1_000_000
"""Dependent loads per latency figure (~0.05-0.25 s)."""


@numba.njit(cache=False)  # compiled each run (~0.2 s): no cache file to go stale
def _chase(following: np.ndarray, steps: int) -> int:  # pragma: no cover - compiled
    at = 0
    for _ in range(steps):
        at = following[at]
    return at


def _cycle(n: int, seed: int) -> np.ndarray:
    """``following[i]``: the next slot after ``i`` on one random cycle through all ``n``."""
    order = np.random.default_rng(seed).permutation(n)
    following = np.empty(n, dtype=np.int64)
    following[order] = np.roll(order, -1)
    return following


def latency_ns(mebibytes: int) -> float:
    """Nanoseconds per dependent load, chasing one random cycle over ``mebibytes`` MiB."""
    following = _cycle(mebibytes * 2**20 // 8, mebibytes)
    _chase(following, 10_000)  # compiled (or loaded) and the first pages touched
    began = time.perf_counter()
    _chase(following, _STEPS)
    return (time.perf_counter() - began) / _STEPS * 1e9


def stream_gbps(mebibytes: int = 128) -> float:
    """GB/s of a sum over ``mebibytes`` MiB of float64 (the floor's kind of access)."""
    values = np.ones(mebibytes * 2**20 // 8)
    values.sum()
    began = time.perf_counter()
    for _ in range(3):
        values.sum()
    return 3 * values.nbytes / (time.perf_counter() - began) / 1e9


class HostState(dict[str, float]):
    """Memory latency over 8 and 64 MiB (ns) and streaming bandwidth (GB/s), by name."""

    def __str__(self) -> str:
        return (
            f"memory latency {self['latency_8mib_ns']:.0f} ns (8 MiB) / "
            f"{self['latency_64mib_ns']:.0f} ns (64 MiB), sum {self['stream_gbps']:.1f} GB/s"
        )


def host_state() -> HostState:
    """The host's memory speed now (~0.5 s).

    Examples
    --------
    >>> state = host_state()
    >>> sorted(state)
    ['latency_64mib_ns', 'latency_8mib_ns', 'stream_gbps']
    >>> state["latency_64mib_ns"] > 0 and state["stream_gbps"] > 0
    True
    """
    return HostState(
        latency_8mib_ns=latency_ns(8),
        latency_64mib_ns=latency_ns(64),
        stream_gbps=stream_gbps(),
    )


def host_lines(before: HostState, after: HostState) -> str:
    """The two lines a run prints of the host at its start and at its end."""
    return f"host at the start: {before}\nhost at the end:   {after}"
