"""The validate command's progress bar: rendering, throttling, closing, when it is drawn."""

from __future__ import annotations

import io

import pytest

from zarr_vectors._progress import ProgressBar, format_elapsed, render, wants_progress


class TTYStringIO(io.StringIO):
    """A captured stream that claims to be a terminal."""

    def isatty(self) -> bool:
        return True


class FakeClock:
    """A clock the test moves by hand."""

    def __init__(self) -> None:
        self.now = 100.0

    def __call__(self) -> float:
        return self.now


def test_render_shows_level_counts_percentage_and_elapsed() -> None:
    text = render(2, 512, 1024, 3.25, width=10)
    assert text == "level 2 [#####-----] 512/1,024 chunks  50%  3.2s"
    assert render(0, 0, 0, 0.0, width=4) == "level 0 [####] 0/0 chunks 100%  0.0s"
    assert "[----]" in render(0, 0, 7, 0.0, width=4)


def test_render_names_write_stages_and_unknown_totals() -> None:
    assert render("write", 3, 4, 1.0, width=4) == "write [###-] 3/4 chunks  75%  1.0s"
    assert render("sort", 10, 40, 1.0, width=4) == "sort [#---] 10/40 rows  25%  1.0s"
    assert render("ingest", 1_500_000, -1, 61.0) == "ingest 1,500,000 rows  1m01s"


@pytest.mark.parametrize(
    ("seconds", "text"), [(0.04, "0.0s"), (59.94, "59.9s"), (60.0, "1m00s"), (187.9, "3m07s")]
)
def test_format_elapsed(seconds: float, text: str) -> None:
    assert format_elapsed(seconds) == text


def test_redraws_in_place_at_most_once_per_interval() -> None:
    clock, out = FakeClock(), io.StringIO()
    bar = ProgressBar(out, interval=0.1, clock=clock)
    bar(0, 1, 10)
    for done in range(2, 8):
        clock.now += 0.01
        bar(0, done, 10)
    assert bar.draws == 1
    clock.now += 0.1
    bar(0, 8, 10)
    assert bar.draws == 2
    assert out.getvalue().count("\r") == 2
    assert "\n" not in out.getvalue()
    assert out.getvalue().endswith("8/10 chunks  80%  0.2s")


def test_close_draws_the_skipped_last_state_and_ends_the_line() -> None:
    clock, out = FakeClock(), io.StringIO()
    with ProgressBar(out, interval=0.1, clock=clock) as bar:
        bar(0, 1, 10)
        clock.now += 0.06
        bar(0, 10, 10)
        assert bar.draws == 1
    assert bar.draws == 2
    assert out.getvalue().endswith("10/10 chunks 100%  0.1s\n")
    bar.close()
    assert out.getvalue().count("\n") == 1


def test_close_without_updates_writes_nothing() -> None:
    out = io.StringIO()
    ProgressBar(out).close()
    assert out.getvalue() == ""


def test_shorter_line_blanks_the_rest_of_the_longer_one() -> None:
    clock, out = FakeClock(), io.StringIO()
    bar = ProgressBar(out, interval=0.0, clock=clock)
    bar(0, 1000, 10000)
    bar(1, 1, 10)
    first, second = out.getvalue().split("\r")[1:]
    assert len(second) == len(first)
    assert second.rstrip() == render(1, 1, 10, 0.0)


def test_wants_progress_only_on_a_terminal() -> None:
    assert wants_progress(TTYStringIO())
    assert not wants_progress(io.StringIO())
    assert not wants_progress(TTYStringIO(), json_out=io.StringIO())
    assert wants_progress(TTYStringIO(), json_out=TTYStringIO())
    assert not wants_progress(io.StringIO(), json_out=TTYStringIO())
