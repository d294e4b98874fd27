"""The reference implementation's own virtualenv (standard library only).

The reference package ``zarr-vectors`` on PyPI has the same import name as this project,
``zarr_vectors``, so it can never share an environment with it. :func:`ensure_venv` keeps it
in ``benchmarks/_reference_venv/`` (git-ignored), created with the base interpreter of the
running Python and filled by ``pip install zarr-vectors==VERSION``; a venv that already
holds that version is reused. :func:`clean_env` is the environment every process of that
interpreter runs with: no ``PYTHONPATH`` and no ``PYTHONHOME``, so nothing of this
repository can be imported by it.
"""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

__all__ = ["REFERENCE_VERSION", "VENV_DIR", "clean_env", "ensure_venv", "installed_version"]

REFERENCE_VERSION = "0.9.2"
"""The PyPI release of ``zarr-vectors`` the side-by-side benchmark compares against."""

VENV_DIR = Path(__file__).resolve().parent / "_reference_venv"
"""Where the reference virtualenv lives (ignored by git)."""

_PROBE = (
    "import importlib.metadata as m, pathlib, sys, zarr_vectors as z; "
    "print(m.version('zarr-vectors')); print(pathlib.Path(z.__file__).resolve()); "
    "print(sys.prefix)"
)


def clean_env() -> dict[str, str]:
    """This process's environment without the variables that could leak our package in.

    Returns
    -------
    dict
        A copy of :data:`os.environ` without ``PYTHONPATH``, ``PYTHONHOME`` and
        ``PYTHONSTARTUP``, with ``PYTHONNOUSERSITE=1`` and ``PIP_DISABLE_PIP_VERSION_CHECK=1``.
    """
    env = {
        k: v
        for k, v in os.environ.items()
        if k not in ("PYTHONPATH", "PYTHONHOME", "PYTHONSTARTUP", "VIRTUAL_ENV")
    }
    env["PYTHONNOUSERSITE"] = "1"
    env["PIP_DISABLE_PIP_VERSION_CHECK"] = "1"
    return env


def _python(venv: Path) -> Path:
    return venv / "bin" / "python"


def installed_version(venv: Path = VENV_DIR) -> str | None:
    """The ``zarr-vectors`` version importable by ``venv``'s interpreter, if it is sound.

    Sound means: the interpreter runs, ``import zarr_vectors`` works, and the module it
    imports lives inside the venv (not in this repository).

    Parameters
    ----------
    venv
        The virtualenv directory.

    Returns
    -------
    str or None
        The installed version, or None when there is no usable installation.
    """
    python = _python(venv)
    if not python.exists():
        return None
    done = subprocess.run(
        [str(python), "-I", "-c", _PROBE],
        capture_output=True,
        text=True,
        check=False,
        cwd=venv,
        env=clean_env(),
    )
    if done.returncode != 0:
        return None
    version, module, prefix = done.stdout.split("\n")[:3]
    if not Path(module).is_relative_to(Path(prefix).resolve()):
        return None
    return version.strip()


def _base_interpreter() -> str:
    """The interpreter the running venv (if any) was made from."""
    return getattr(sys, "_base_executable", None) or sys.executable


def _run(args: list[str]) -> None:
    print(f"[bench] $ {' '.join(args)}", file=sys.stderr, flush=True)
    done = subprocess.run(args, capture_output=True, text=True, check=False, env=clean_env())
    if done.returncode != 0:
        raise RuntimeError(f"{' '.join(args)} failed:\n{done.stdout[-2000:]}{done.stderr[-3000:]}")


def ensure_venv(version: str = REFERENCE_VERSION, venv: Path = VENV_DIR) -> Path:
    """Create or reuse the reference virtualenv and return its interpreter.

    Parameters
    ----------
    version
        The ``zarr-vectors`` release to install from PyPI.
    venv
        Where the virtualenv lives.

    Returns
    -------
    pathlib.Path
        ``venv/bin/python``, with ``zarr-vectors==version`` importable.

    Raises
    ------
    RuntimeError
        When the venv cannot be created or the package cannot be installed.
    """
    found = installed_version(venv)
    if found == version:
        return _python(venv)
    if not _python(venv).exists():
        _run([_base_interpreter(), "-m", "venv", str(venv)])
    _run([str(_python(venv)), "-m", "pip", "install", "--quiet", f"zarr-vectors=={version}"])
    found = installed_version(venv)
    if found != version:
        raise RuntimeError(f"{venv} holds zarr-vectors {found!r} after installing {version}")
    return _python(venv)


if __name__ == "__main__":
    print(ensure_venv())
