"""The one place that imports numba and fixes its compilation policy.

* ``cache=True``: compiled machine code is written next to the sources (or to
  ``NUMBA_CACHE_DIR``) so a new Python process loads it instead of recompiling.
* ``fastmath=False``: binning must round exactly like IEEE float64 arithmetic so a
  vertex on a chunk boundary lands in the same chunk on every machine (spec section 5).
* ``nogil=True``: kernels can run in worker threads next to I/O.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any, TypeVar

import numba
from numba import types as numba_types
from numba.core import cgutils
from numba.extending import intrinsic

__all__ = ["copy_bytes", "intrinsic", "njit", "numba_types"]

F = TypeVar("F", bound=Callable[..., Any])

_POLICY: dict[str, Any] = {"cache": True, "fastmath": False, "nogil": True, "error_model": "numpy"}


def njit(func: F) -> F:
    """Compile ``func`` with the project's numba policy.

    Parameters
    ----------
    func
        A function written in the numba-compatible subset of Python and numpy.

    Returns
    -------
    callable
        The compiled dispatcher (typed as the original function).
    """
    return numba.njit(**_POLICY)(func)  # type: ignore[no-any-return]


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


copy_bytes: Any = intrinsic(_copy_bytes_typer)
"""``copy_bytes(dst, dst_start, src, src_start, size)`` inside kernels: one memcpy."""
