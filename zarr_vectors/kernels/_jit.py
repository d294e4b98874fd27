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

__all__ = ["cgutils", "intrinsic", "njit", "numba_types"]

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
