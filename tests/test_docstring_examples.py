"""The docstrings' "Examples" sections run as doctests, and every public name has one."""

from __future__ import annotations

import doctest
import importlib
import inspect
import pkgutil
import re
from collections.abc import Iterator
from pathlib import Path
from types import ModuleType

import pytest

import zarr_vectors as zv
from zarr_vectors.kernels import set_kernel_mode

FLAGS = doctest.NORMALIZE_WHITESPACE | doctest.ELLIPSIS


_EXAMPLES = re.compile(
    r"^\s*Examples\n\s*--------\n(?P<body>.*?)(?:^\s*\w[\w ]*\n\s*-{3,}\n|\Z)", re.M | re.S
)


def _module_names() -> list[str]:
    found = [zv.__name__]
    for info in pkgutil.walk_packages(zv.__path__, prefix=f"{zv.__name__}."):
        found.append(info.name)
    return sorted(found)


def _doctests(module: ModuleType) -> list[doctest.DocTest]:
    tests = doctest.DocTestFinder(exclude_empty=True).find(module, module.__name__)
    return [test for test in tests if test.examples]


def _run_examples(module: ModuleType) -> doctest.TestResults:
    """Run every example of ``module`` (failures are printed, pytest shows them)."""
    runner = doctest.DocTestRunner(optionflags=FLAGS)
    for test in _doctests(module):
        runner.run(test)
    return runner.summarize(verbose=False)


@pytest.fixture
def users_kernel_mode() -> Iterator[None]:
    """The examples run as a user's code does, in the library's default kernel mode
    (``"auto"``: a small call of a kernel not compiled yet runs its Python source), not in
    the suite's ``"compiled"``: their small calls with dtypes of their own would otherwise
    compile a kernel each inside the test run (tests/kernels checks the machine code against
    the Python twins, tests/test_first_use.py the two paths against each other)."""
    previous = set_kernel_mode("auto")
    yield
    set_kernel_mode(previous)


@pytest.mark.parametrize("name", _module_names())
@pytest.mark.usefixtures("users_kernel_mode")
def test_module_examples_run(name: str, private_tempdir: Path) -> None:
    results = _run_examples(importlib.import_module(name))
    assert results.failed == 0, f"{results.failed} of {results.attempted} examples in {name} failed"


def test_a_wrong_example_fails() -> None:
    module = ModuleType("wrong_example")
    exec(
        'def two() -> int:\n    """Two.\n\n    >>> two()\n    3\n    """\n    return 2\n',
        module.__dict__,
    )
    assert _run_examples(module) == (1, 1)


def _own_members(cls: type) -> dict[str, object]:
    """The members of ``cls`` and of its bases defined in zarr_vectors, as ``cls`` sees them."""
    members: dict[str, object] = {}
    for base in reversed(cls.__mro__):
        if base is cls or base.__module__.startswith(f"{zv.__name__}."):
            members.update(vars(base))
    return members


def _public_callables() -> list[tuple[str, object]]:
    """Every public function and class of ``zv.__all__``, and the public methods of the
    classes (defined in the class itself or in the parts of this package it is assembled
    from, e.g. :class:`~zarr_vectors.VectorStore`'s; not those of other bases; properties
    are attributes)."""
    found: list[tuple[str, object]] = []
    for name in zv.__all__:
        obj = getattr(zv, name)
        if not (inspect.isfunction(obj) or inspect.isclass(obj)):
            continue  # constants (__version__, FORMAT_VERSION) and the errors module
        found.append((name, obj))
        if inspect.isclass(obj):
            for attr, member in _own_members(obj).items():
                if attr.startswith("_"):
                    continue
                function = (
                    member.__func__ if isinstance(member, classmethod | staticmethod) else member
                )
                if inspect.isfunction(function):
                    found.append((f"{name}.{attr}", function))
    return found


def _has_run_examples(obj: object) -> bool:
    """Whether the docstring has a numpydoc "Examples" section holding ``>>>`` lines, or
    begins "Deprecated" (an old spelling points at its new one, whose example runs)."""
    doc = inspect.getdoc(obj) or ""
    if doc.startswith("Deprecated"):
        return True
    match = _EXAMPLES.search(doc)
    return match is not None and ">>>" in match.group("body")


def test_every_public_name_has_examples() -> None:
    missing = [name for name, obj in _public_callables() if not _has_run_examples(obj)]
    assert not missing, f"public names without a numpydoc Examples section of >>> lines: {missing}"


def test_examples_section_is_recognised() -> None:
    def documented() -> None:
        """Do nothing.

        Examples
        --------
        >>> documented()
        """

    def literal_only() -> None:
        """Do nothing.

        Examples
        --------
        ::

            literal_only()
        """

    assert _has_run_examples(documented)
    assert not _has_run_examples(literal_only)
