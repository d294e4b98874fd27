"""Every writer entry point has numpydoc "Examples" (tests/test_docstring_examples.py runs
them, with every other module's)."""

from __future__ import annotations

import doctest
import re
from types import ModuleType

import pytest

from zarr_vectors.format import kinds
from zarr_vectors.geometry import graphs, meshes, points, polylines
from zarr_vectors.update import object_append, object_stream, point_stream

MODULES = [kinds, points, point_stream, polylines, graphs, meshes, object_append, object_stream]


@pytest.mark.parametrize("module", MODULES, ids=lambda m: m.__name__)
def test_examples_exist(module: ModuleType) -> None:
    """Each writer module has examples; running them is tests/test_docstring_examples.py's."""
    found = doctest.DocTestFinder(exclude_empty=True).find(module, module.__name__)
    assert sum(len(test.examples) for test in found) > 0


WRITERS = [
    points.write_points,
    point_stream.write_points_stream,
    point_stream.append_points,
    point_stream.PointWriter,
    polylines.write_polylines,
    graphs.write_graph,
    graphs.write_skeletons,
    meshes.write_mesh,
    object_append.append_polylines,
    object_append.append_graph,
    object_append.append_skeletons,
    object_append.append_mesh,
    object_stream.ObjectWriter,
    object_stream.write_objects_stream,
]


@pytest.mark.parametrize("writer", WRITERS, ids=lambda w: w.__name__)
def test_every_writer_has_examples(writer: object) -> None:
    assert "    Examples\n    --------\n    >>> " in (writer.__doc__ or "")


@pytest.mark.parametrize("writer", WRITERS, ids=lambda w: w.__name__)
def test_shared_parameter_docs_are_filled_in(writer: object) -> None:
    assert not re.search(r"^\s+\{\w+\}$", writer.__doc__ or "", re.MULTILINE)
