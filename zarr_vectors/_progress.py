"""Progress of long operations: decide whether to show it, and draw it with tqdm.

Every long operation takes ``progress=``: None (default: a bar when standard error is a
terminal or the code runs in a Jupyter kernel, else nothing), True (always a bar), False
(nothing) or a callable ``progress(stage, done, total)`` (called, nothing drawn). The
operation opens :func:`progress_reporter` as a context manager and calls it once per chunk
or batch; the reporter draws one tqdm bar per stage on standard error (a notebook widget in
Jupyter when ipywidgets is installed) and closes it when the stage changes or the
operation ends, also on error.

Stages: an ``int`` is a multiscale level being validated (counts are chunks);
``"ingest"`` and ``"sort"`` count rows (a negative total means unknown); ``"write"``,
``"merge"`` and ``"read"`` count chunks; ``"read objects"``, ``"read file"`` and
``"write file"`` are single steps; any other name is a stage of a parallel write and counts
its tasks.

An operation made of others (a conversion) opens its reporter as :func:`enclosing`; the
operations it calls with the default ``progress=None`` then report to it.
"""

from __future__ import annotations

import importlib
import importlib.util
import sys
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from contextvars import ContextVar
from typing import Any, TextIO

from zarr_vectors._closing import CloseOnExit
from zarr_vectors.errors import InvalidInputError

__all__ = [
    "Progress",
    "ProgressOption",
    "Reporter",
    "bar_class",
    "describe",
    "enclosing",
    "in_notebook",
    "progress_reporter",
    "should_draw",
    "wants_progress",
]

Progress = Callable[[Any, int, int], None]
"""``progress(stage, done, total)``: see the module docstring for the stages."""

ProgressOption = Progress | bool | None
"""What the ``progress=`` argument of a long operation accepts."""

STAGES: dict[str, tuple[str, str]] = {
    "ingest": ("ingest", "row"),
    "sort": ("sort", "row"),
    "write": ("write chunks", "chunk"),
    "read": ("read chunks", "chunk"),
    "merge": ("merge chunks", "chunk"),
    "read objects": ("read objects", "step"),
    "read file": ("read file", "step"),
    "write file": ("write file", "step"),
}
"""Description and unit of the bar of each named stage."""


def describe(stage: int | str) -> tuple[str, str]:
    """The bar's description and unit for ``stage``.

    Parameters
    ----------
    stage
        A level number (validation) or a stage name.

    Returns
    -------
    tuple of str
        E.g. ``("validate level 0", "chunk")`` or ``("write chunks", "chunk")``.
    """
    if isinstance(stage, int):
        return f"validate level {stage}", "chunk"
    return STAGES.get(stage, (stage, "task"))


def in_notebook() -> bool:
    """Whether this process is a Jupyter (IPython) kernel."""
    if "ipykernel" not in sys.modules:
        return False
    ipython = sys.modules.get("IPython")
    get_ipython = getattr(ipython, "get_ipython", None)
    shell = get_ipython() if callable(get_ipython) else None
    return shell is not None and getattr(shell, "kernel", None) is not None


def should_draw(progress: bool | None, stream: TextIO | None = None) -> bool:
    """Whether to draw a bar for ``progress`` (True, False, or None for automatic).

    Parameters
    ----------
    progress
        The caller's choice; None draws when ``stream`` (default ``sys.stderr``) is a
        terminal or when running in a Jupyter kernel.
    stream
        Where the bar would go.

    Returns
    -------
    bool
        Whether to draw.
    """
    if progress is not None:
        return bool(progress)
    return _is_tty(sys.stderr if stream is None else stream) or in_notebook()


def wants_progress(stream: TextIO, *, json_out: TextIO | None = None) -> bool:
    """Whether a command should draw a progress bar on ``stream`` (the command line).

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


def bar_class() -> Any:
    """The tqdm class to draw with: the notebook widget in a kernel with ipywidgets, else text.

    Chosen here rather than through ``tqdm.auto``, which warns when a kernel lacks
    ipywidgets.
    """
    notebook = in_notebook() and importlib.util.find_spec("ipywidgets") is not None
    return importlib.import_module("tqdm.notebook" if notebook else "tqdm.std").tqdm


class Reporter(CloseOnExit):
    """The ``progress(stage, done, total)`` callback of one operation; a context manager.

    Build it with :func:`progress_reporter`. It forwards to the caller's callback, draws
    bars, or does nothing; leaving the ``with`` block closes the open bar.

    Parameters
    ----------
    callback
        The caller's callback, or None.
    stream
        Where to draw bars, or None for no bar.
    """

    def __init__(self, callback: Progress | None, stream: TextIO | None) -> None:
        self._callback = callback
        self._stream = stream
        self._bar: Any = None
        self._stage: int | str | None = None

    @property
    def active(self) -> bool:
        """Whether reports go anywhere (callers may skip work that only serves progress)."""
        return self._callback is not None or self._stream is not None

    def __call__(self, stage: int | str, done: int, total: int) -> None:
        """Report that ``done`` of ``total`` units of ``stage`` are done (total < 0: unknown)."""
        if self._callback is not None:
            self._callback(stage, done, total)
        elif self._stream is not None:
            self._draw(stage, done, total)

    def _draw(self, stage: int | str, done: int, total: int) -> None:
        if self._bar is None or stage != self._stage:
            self._finish_step()
            self.close()
            description, unit = describe(stage)
            self._bar = bar_class()(
                desc=description,
                unit=unit,
                total=None if total < 0 else total,
                file=self._stream,
                dynamic_ncols=True,
            )
            self._stage = stage
        bar = self._bar
        if total >= 0 and bar.total != total:
            bar.total = total
        bar.update(done - bar.n)

    def _finish_step(self) -> None:
        """Mark a single-step stage done: the next stage starts once it has ended."""
        bar = self._bar
        if bar is not None and self._stage is not None and describe(self._stage)[1] == "step":
            bar.update(bar.total - bar.n)

    def close(self) -> None:
        """Close the open bar, if any (it shows its final state)."""
        if self._bar is not None:
            self._bar.close()
            self._bar = None
            self._stage = None

    def abort(self) -> None:
        """Close the open bar: an error ends the bars as success does."""
        self.close()


def progress_reporter(progress: ProgressOption, *, stream: TextIO | None = None) -> Reporter:
    """The reporter of an operation given its ``progress=`` argument.

    Parameters
    ----------
    progress
        None (automatic: a bar on a terminal or in Jupyter), True (a bar), False (nothing),
        or a callable ``progress(stage, done, total)`` (called; nothing is drawn). A
        :class:`Reporter` passed down by an enclosing operation is used as is.
    stream
        Where bars go (default ``sys.stderr``).

    Returns
    -------
    Reporter
        Use it as a context manager and call it as the work advances.

    Raises
    ------
    InvalidInputError
        When ``progress`` is none of these.
    """
    if progress is None and _ENCLOSING.get() is not None:
        progress = _ENCLOSING.get()
    if isinstance(progress, Reporter):
        return Reporter(progress, None) if progress.active else Reporter(None, None)
    if callable(progress):
        return Reporter(progress, None)
    if progress is not None and not isinstance(progress, bool):
        raise InvalidInputError(
            f"progress must be None, True, False or a callable, got {type(progress).__name__}"
        )
    target = sys.stderr if stream is None else stream
    return Reporter(None, target if should_draw(progress, target) else None)


_ENCLOSING: ContextVar[Reporter | None] = ContextVar("zarr_vectors_progress", default=None)


@contextmanager
def enclosing(reporter: Reporter) -> Iterator[Reporter]:
    """Within the block, operations called with ``progress=None`` report to ``reporter``.

    Parameters
    ----------
    reporter
        The reporter of the enclosing operation.

    Yields
    ------
    Reporter
        ``reporter``.
    """
    token = _ENCLOSING.set(reporter)
    try:
        yield reporter
    finally:
        _ENCLOSING.reset(token)
