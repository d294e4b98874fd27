"""Reads run ahead in one background thread, in order, within their byte limit, and none
outlives the iterator (update._read_ahead)."""

from __future__ import annotations

import contextlib
import threading
import time

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from zarr_vectors.update._read_ahead import MAX_ITEMS_AHEAD, read_ahead


class Recorder:
    """A read that records which items started and ended, on which thread."""

    def __init__(self, fail_at: int | None = None, pause: float = 0.0) -> None:
        self.started: list[int] = []
        self.ended: list[int] = []
        self.threads: set[int] = set()
        self.fail_at, self.pause = fail_at, pause
        self.lock = threading.Lock()

    def __call__(self, item: int) -> int:
        with self.lock:
            self.started.append(item)
            self.threads.add(threading.get_ident())
        time.sleep(self.pause)
        with self.lock:
            self.ended.append(item)
        if item == self.fail_at:
            raise OSError(f"item {item} failed")
        return item * 10


@settings(max_examples=40, deadline=None)
@given(
    sizes=st.lists(st.integers(0, 50), min_size=0, max_size=15),
    limit=st.integers(0, 120),
)
def test_every_result_in_order_and_never_more_ahead_than_allowed(
    sizes: list[int], limit: int
) -> None:
    read = Recorder(pause=0.001)
    items = list(range(len(sizes)))
    got = []
    with contextlib.closing(read_ahead(read, items, sizes, limit)) as found:
        for k, value in enumerate(found):
            got.append(value)
            time.sleep(0.002)  # the reader catches up: what it started shows
            with read.lock:
                ahead = [i for i in read.started if i > k]
            assert len(ahead) <= MAX_ITEMS_AHEAD
            assert len(ahead) <= 1 or sum(sizes[i] for i in ahead) <= limit
    assert got == [10 * i for i in items]
    assert read.started == items
    assert threading.get_ident() not in read.threads


def test_reads_run_ahead_of_the_caller() -> None:
    read = Recorder()
    found = read_ahead(read, list(range(6)), [1] * 6, 100)
    assert next(found) == 0
    deadline = time.monotonic() + 5
    while len(read.ended) < MAX_ITEMS_AHEAD and time.monotonic() < deadline:
        time.sleep(0.001)
    assert read.ended[:MAX_ITEMS_AHEAD] == list(range(MAX_ITEMS_AHEAD))  # ahead of item 1
    found.close()


def test_a_failed_read_is_raised_at_its_item() -> None:
    read = Recorder(fail_at=3)
    got = []
    with (
        pytest.raises(OSError, match="item 3 failed"),
        contextlib.closing(read_ahead(read, list(range(8)), [1] * 8, 100)) as found,
    ):
        got.extend(found)
    assert got == [0, 10, 20]


def test_closing_early_waits_for_the_running_read_and_starts_no_other() -> None:
    read = Recorder(pause=0.2)
    found = read_ahead(read, list(range(20)), [1] * 20, 100)
    assert next(found) == 0  # item 1 is being read now, the next ones wait for it
    found.close()
    with read.lock:
        started, ended = list(read.started), list(read.ended)
    assert started == ended == [0, 1]  # item 1 ended before close returned; none after
    time.sleep(0.3)
    assert read.started == [0, 1]
