"""benchmarks/_host.py: the pointer chase visits every slot of its buffer once a round."""

from __future__ import annotations

import numpy as np
import pytest

from benchmarks import _host


@pytest.mark.parametrize("n", [1, 2, 7, 4096])
def test_cycle_is_one_cycle_through_every_slot(n: int) -> None:
    following = _host._cycle(n, seed=n)
    at, seen = 0, np.zeros(n, dtype=bool)
    for _ in range(n):
        seen[at] = True
        at = int(following[at])
    assert seen.all()
    assert at == 0  # back at the start after exactly n steps
    assert _host._chase(following, n) == 0


def test_host_state_prints_its_figures() -> None:
    state = _host.host_state()
    assert set(state) == {"latency_8mib_ns", "latency_64mib_ns", "stream_gbps"}
    assert all(np.isfinite(v) and v > 0 for v in state.values())
    assert f"{state['latency_8mib_ns']:.0f} ns (8 MiB)" in str(state)


def test_host_lines_name_start_and_end() -> None:
    before = _host.HostState(latency_8mib_ns=40.0, latency_64mib_ns=90.0, stream_gbps=13.0)
    after = _host.HostState(latency_8mib_ns=60.0, latency_64mib_ns=170.0, stream_gbps=12.0)
    assert _host.host_lines(before, after).splitlines() == [
        "host at the start: memory latency 40 ns (8 MiB) / 90 ns (64 MiB), sum 13.0 GB/s",
        "host at the end:   memory latency 60 ns (8 MiB) / 170 ns (64 MiB), sum 12.0 GB/s",
    ]
