"""A one-line progress bar on a terminal (standard library only).

:class:`ProgressBar` is a ``progress(stage, done, total)`` callback: for
:func:`zarr_vectors.validate` the stage is a level number and the counts are chunks; for
streaming writes it is a stage name (``"ingest"``, ``"sort"``, ``"write"``). It redraws one
line in place (``\\r``), at most once per ``interval`` seconds, and
:meth:`ProgressBar.close` draws the last state and ends the line. Callers only create one
when the stream is a terminal (:func:`wants_progress`).
"""

from __future__ import annotations

import time
from collections.abc import Callable
from types import TracebackType
from typing import TextIO

__all__ = ["ProgressBar", "format_elapsed", "render", "wants_progress"]

BAR_WIDTH = 30
"""Characters between the brackets of the bar."""

MIN_INTERVAL = 0.1
"""Seconds between two redraws (at most 10 per second)."""


def wants_progress(stream: TextIO, *, json_out: TextIO | None = None) -> bool:
    """Whether to draw a progress bar on ``stream``.

    Parameters
    ----------
    stream
        Where the bar would be drawn (the command uses ``sys.stderr``).
    json_out
        The stream receiving ``--json`` output, when the command writes JSON; no bar is
        drawn while it goes to a pipe or a file, so nothing but JSON reaches a consumer.

    Returns
    -------
    bool
        True when ``stream`` is a terminal and ``json_out`` is None or a terminal.
    """
    if not _is_tty(stream):
        return False
    return json_out is None or _is_tty(json_out)


def _is_tty(stream: TextIO) -> bool:
    isatty = getattr(stream, "isatty", None)
    return bool(isatty()) if callable(isatty) else False


def format_elapsed(seconds: float) -> str:
    """Elapsed time as ``4.2s`` below a minute, else ``3m07s``.

    Parameters
    ----------
    seconds
        A non-negative duration.

    Returns
    -------
    str
        The formatted duration.
    """
    if seconds < 60:
        return f"{seconds:.1f}s"
    minutes, rest = divmod(int(seconds), 60)
    return f"{minutes}m{rest:02d}s"


def render(level: int | str, done: int, total: int, elapsed: float, width: int = BAR_WIDTH) -> str:
    """The text of the bar (without ``\\r`` or padding).

    Parameters
    ----------
    level
        The multiscale level being read (counts are chunks), or the name of a stage of a
        write (counts are rows, or chunks for ``"write"``).
    done
        Chunks (rows) done so far.
    total
        Chunks (rows) to do; 0 counts as complete, a negative total as unknown (no bar).
    elapsed
        Seconds since the validation started.
    width
        Characters of the bar itself.

    Returns
    -------
    str
        E.g. ``"level 0 [#######-------]  512/1,024  50%  1.2s"``.
    """
    label = f"level {level}" if isinstance(level, int) else level
    unit = "chunks" if isinstance(level, int) or level == "write" else "rows"
    if total < 0:
        return f"{label} {done:,} {unit}  {format_elapsed(elapsed)}"
    fraction = 1.0 if total == 0 else min(max(done / total, 0.0), 1.0)
    filled = int(fraction * width)
    bar = "#" * filled + "-" * (width - filled)
    counts = f"{done:,}/{total:,}"
    return f"{label} [{bar}] {counts} {unit} {fraction:4.0%}  {format_elapsed(elapsed)}"


class ProgressBar:
    """A ``progress(stage, done, total)`` callback drawing one line on a stream.

    Parameters
    ----------
    stream
        Where to draw (a terminal).
    interval
        Minimum seconds between redraws; the updates in between are only remembered.
    clock
        Source of the time in seconds (for tests); default :func:`time.monotonic`.

    Attributes
    ----------
    draws
        How many times the line was drawn so far.

    Notes
    -----
    Use it as a context manager, or call :meth:`close` when the work ends: it draws the
    latest state if it was skipped and ends the line with a newline (only when something
    was drawn).
    """

    def __init__(
        self,
        stream: TextIO,
        *,
        interval: float = MIN_INTERVAL,
        clock: Callable[[], float] = time.monotonic,
    ) -> None:
        self._stream = stream
        self._interval = interval
        self._clock = clock
        self._start = clock()
        self._last_draw: float | None = None
        self._pending: tuple[int | str, int, int] | None = None
        self._width = 0
        self._line_open = False
        self.draws = 0

    def __call__(self, level: int | str, done: int, total: int) -> None:
        """Record an update and redraw if the last redraw is old enough."""
        self._pending = (level, done, total)
        now = self._clock()
        if self._last_draw is None or now - self._last_draw >= self._interval:
            self._draw(now)

    def close(self) -> None:
        """Draw the latest state if it was not drawn, then end the line (if any)."""
        if self._pending is not None:
            self._draw(self._clock())
        if self._line_open:
            self._stream.write("\n")
            self._stream.flush()
            self._line_open = False

    def _draw(self, now: float) -> None:
        assert self._pending is not None
        text = render(*self._pending, elapsed=now - self._start)
        padding = " " * max(self._width - len(text), 0)
        self._stream.write(f"\r{text}{padding}")
        self._stream.flush()
        self._width = len(text)
        self._last_draw = now
        self._pending = None
        self._line_open = True
        self.draws += 1

    def __enter__(self) -> ProgressBar:
        return self

    def __exit__(
        self,
        exc_type: type[BaseException] | None,
        exc: BaseException | None,
        traceback: TracebackType | None,
    ) -> None:
        self.close()
