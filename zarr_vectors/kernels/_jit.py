"""The one place that imports numba and fixes its compilation policy.

* ``cache=True``: compiled machine code is written next to the sources (or to
  ``NUMBA_CACHE_DIR``) so a new Python process loads it instead of recompiling.
* ``fastmath=False``: binning must round exactly like IEEE float64 arithmetic so a
  vertex on a chunk boundary lands in the same chunk on every machine (spec section 5).
* ``nogil=True``: kernels can run in worker threads next to I/O.

First use. Compiling a kernel costs 0.1-1 s, and a first write and query used to compile
some thirty of them (about 16 s on an idle 2-core machine; ``benchmarks/first_use.py``).
A kernel made by :func:`njit` is therefore a :class:`Kernel`: while it is neither compiled
in this process nor found in numba's cache on disk, a call with small array arguments
(:data:`SMALL_NBYTES` bytes in all) runs the kernel's own Python source instead, which
numpy executes with the same IEEE arithmetic and integer types and so returns the same
values (tests/test_first_use.py compares them byte for byte); any other call compiles (or
loads) the machine code as before. The intrinsics (:func:`copy_bytes` and the C functions
of :mod:`zarr_vectors.kernels.row_blocks`) have Python twins for that path
(:func:`intrinsic`). A kernel that has spent :data:`INTERPRETED_BUDGET` CPU seconds in Python
compiles at its next call. :func:`set_kernel_mode` turns the Python path off (the test
suite does, so that it exercises the machine code) or on for every call.
"""

from __future__ import annotations

import functools
import os
import threading
import time
from collections.abc import Callable, Iterator
from typing import Any, TypeVar

import numba
import numpy as np
from numba import types as numba_types
from numba.core import cgutils
from numba.core import event as numba_event
from numba.core.typing.templates import builtin_registry, infer_global
from numba.extending import intrinsic as numba_intrinsic
from numba.extending import typeof_impl

from zarr_vectors.errors import InvalidInputError

__all__ = [
    "CompileLog",
    "INTERPRETED_BUDGET",
    "KERNEL_MODES",
    "SMALL_NBYTES",
    "Kernel",
    "copy_bytes",
    "interpreted_seconds",
    "intrinsic",
    "kernels",
    "njit",
    "numba_types",
    "set_kernel_mode",
]

F = TypeVar("F", bound=Callable[..., Any])

_POLICY: dict[str, Any] = {"cache": True, "fastmath": False, "nogil": True, "error_model": "numpy"}

SMALL_NBYTES = 1 << 18
"""Array bytes (all arguments together) up to which a call of a kernel that is not
compiled yet runs its Python source (256 KiB: a few thousand rows, some milliseconds)."""

INTERPRETED_BUDGET = 0.3
"""CPU seconds (of the calling thread: a loaded machine does not stretch them) a kernel may
spend running its Python source, in all, before its next call compiles it anyway: about what
compiling a typical kernel costs (0.1-1 s, 0.3-0.5 s for most), so a process pays at most
about twice the cheaper of the two (a process making many small calls, such as queries of
small boxes, pays some 50 us more per Python call until then; a first use spends a few
milliseconds per kernel)."""

KERNEL_MODES = ("auto", "compiled", "python")
"""``auto``: small calls of kernels not compiled yet run as Python (the default);
``compiled``: every call runs machine code; ``python``: every call runs the Python source
(slow; for tests comparing the two)."""

_settings = {"mode": "auto"}
_python_time = {"outermost": 0.0}
_nesting = threading.local()
_registry: list[Kernel] = []
_registry_lock = threading.Lock()


def set_kernel_mode(mode: str) -> str:
    """Choose how kernels run (:data:`KERNEL_MODES`) and return the previous mode.

    Raises
    ------
    InvalidInputError
        For a mode not in :data:`KERNEL_MODES`.
    """
    if mode not in KERNEL_MODES:
        raise InvalidInputError(
            f"kernel mode must be one of {', '.join(KERNEL_MODES)}, got {mode!r}: pass one of those"
        )
    previous = _settings["mode"]
    _settings["mode"] = mode
    for kernel in kernels():
        kernel._machine = False  # each looks at the mode again at its next call
    return previous


def _array_nbytes(args: tuple[Any, ...]) -> int:
    return sum(a.nbytes for a in args if isinstance(a, np.ndarray))


def _cached_on_disk(dispatcher: Any) -> bool:
    """Whether numba's cache holds an index for ``dispatcher`` (any signature)."""
    cache_file = getattr(getattr(dispatcher, "_cache", None), "_cache_file", None)
    index = getattr(cache_file, "_index_path", None)
    return isinstance(index, str) and os.path.exists(index)


class Kernel:
    """A numba dispatcher that runs its Python source for small calls until it is compiled.

    Inside other kernels it is the dispatcher itself (numba types it so); called from
    Python, see the module docstring.

    Parameters
    ----------
    func
        A function written in the numba-compatible subset of Python and numpy.
    """

    def __init__(self, func: Callable[..., Any]) -> None:
        self.dispatcher = numba.njit(**_POLICY)(func)
        self.py_func = func
        self.interpreted_seconds = 0.0
        """CPU seconds of the calling threads spent running the Python source so far
        (nested kernels included); wall time would grow with the machine's load."""
        self._machine = False
        self._on_disk: bool | None = None
        functools.update_wrapper(self, func)
        with _registry_lock:
            _registry.append(self)

    def __reduce__(self) -> str:
        """Pickled by name, as the module-level function it replaces."""
        return str(self.py_func.__qualname__)

    @property
    def compiled(self) -> bool:
        """Whether machine code for some signature is compiled or loaded in this process."""
        return bool(self.dispatcher.signatures)

    def interprets(self, args: tuple[Any, ...]) -> bool:
        """Whether a call with ``args`` runs the Python source (see :data:`KERNEL_MODES`)."""
        mode = _settings["mode"]
        if mode == "python":
            return True
        if self._machine or self.dispatcher.signatures:
            self._machine = True  # from now on __call__ goes straight to the machine code
            return False
        if mode == "compiled":
            return False
        if self.interpreted_seconds >= INTERPRETED_BUDGET or _array_nbytes(args) > SMALL_NBYTES:
            return False
        if self._on_disk is None:  # looked up once: a process does not wait for another
            self._on_disk = _cached_on_disk(self.dispatcher)
        return not self._on_disk

    def __call__(self, *args: Any) -> Any:
        if self._machine or not self.interprets(args):
            return self.dispatcher(*args)
        depth = getattr(_nesting, "depth", 0)
        _nesting.depth = depth + 1
        begin, cpu = time.perf_counter(), time.thread_time()
        try:
            with np.errstate(all="ignore"):  # machine code does not warn either
                return self.py_func(*args)
        finally:
            self.interpreted_seconds += time.thread_time() - cpu
            _nesting.depth = depth
            if depth == 0:
                _python_time["outermost"] += time.perf_counter() - begin


def interpreted_seconds() -> float:
    """Seconds kernels have run as Python in this process (outermost calls, every thread)."""
    return _python_time["outermost"]


@typeof_impl.register(Kernel)
def _typeof_kernel(value: Kernel, context: Any) -> Any:
    return typeof_impl(value.dispatcher, context)


def njit(func: F) -> F:
    """Compile ``func`` with the project's numba policy, lazily (a :class:`Kernel`).

    Parameters
    ----------
    func
        A function written in the numba-compatible subset of Python and numpy.

    Returns
    -------
    callable
        The kernel (typed as the original function).
    """
    return Kernel(func)  # type: ignore[return-value]


def kernels() -> Iterator[Kernel]:
    """Every kernel made by :func:`njit` in the modules imported so far."""
    with _registry_lock:
        return iter(list(_registry))


class CompileLog(numba_event.Listener):
    """Counts the compilations numba runs while it is active (a context manager).

    Loading machine code from numba's cache is not a compilation. Only outermost
    compilations count (a kernel compiled while compiling its caller is part of it).

    Attributes
    ----------
    count
        Outermost compilations.
    seconds
        Their time.
    """

    def __init__(self) -> None:
        self.count = 0
        self.seconds = 0.0
        self._open: list[float] = []

    def on_start(self, event: Any) -> None:
        self._open.append(time.perf_counter())

    def on_end(self, event: Any) -> None:
        begin = self._open.pop()
        if not self._open:
            self.count += 1
            self.seconds += time.perf_counter() - begin

    def __enter__(self) -> CompileLog:
        numba_event.register("numba:compile", self)  # type: ignore[no-untyped-call]
        return self

    def __exit__(self, *exc: object) -> None:
        numba_event.unregister("numba:compile", self)  # type: ignore[no-untyped-call]


class Intrinsic:
    """A numba intrinsic with a Python twin: the intrinsic inside kernels, the twin when a
    kernel runs its Python source."""

    def __init__(self, typer: Callable[..., Any], python: Callable[..., Any]) -> None:
        self.intrinsic = numba_intrinsic(typer)
        self.python = python
        functools.update_wrapper(self, python)
        # Kernels see this object as the intrinsic: the same global function type.
        typ = next(t for v, t in builtin_registry.globals if v is self.intrinsic)
        infer_global(self, typ)  # type: ignore[no-untyped-call]

    def __call__(self, *args: Any) -> Any:
        return self.python(*args)


def intrinsic(typer: Callable[..., Any], python: Callable[..., Any]) -> Any:
    """A numba intrinsic made from ``typer``, run as ``python`` outside machine code.

    Parameters
    ----------
    typer
        The intrinsic's typing function (``numba.extending.intrinsic``).
    python
        A plain function with the same arguments and result.

    Returns
    -------
    Intrinsic
    """
    return Intrinsic(typer, python)


def _copy_bytes_typer(
    typingctx: Any, dst: Any, dst_start: Any, src: Any, src_start: Any, size: Any
) -> Any:
    """``dst[dst_start:dst_start + size] = src[src_start:src_start + size]`` on ``uint8``
    arrays, as one ``llvm.memcpy`` (numba's loops copy a byte or a word at a time)."""
    sig = numba_types.void(dst, dst_start, src, src_start, size)

    def codegen(context: Any, builder: Any, signature: Any, args: Any) -> None:
        dst_array = context.make_array(signature.args[0])(context, builder, args[0])
        src_array = context.make_array(signature.args[2])(context, builder, args[2])
        to = builder.gep(dst_array.data, [args[1]])
        from_ = builder.gep(src_array.data, [args[3]])
        cgutils.raw_memcpy(builder, to, from_, args[4], 1)  # type: ignore[no-untyped-call]

    return sig, codegen


def _copy_bytes_python(dst: Any, dst_start: int, src: Any, src_start: int, size: int) -> None:
    dst[dst_start : dst_start + size] = src[src_start : src_start + size]


copy_bytes: Any = intrinsic(_copy_bytes_typer, _copy_bytes_python)
"""``copy_bytes(dst, dst_start, src, src_start, size)`` inside kernels: one memcpy."""
