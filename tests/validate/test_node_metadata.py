"""Invalid Zarr metadata in any node: an L1 error, and the reader raises MetadataError.

Issue 40: a ``zarr.json`` whose ``zarr_format`` is misspelled, whose ``node_type`` is missing
or wrong, or which is not a JSON object validated clean while the store read on.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import pytest

import zarr_vectors as zv
from tests.validate import stores as s
from tests.validate.object_stores import object_kind_store
from zarr_vectors.format.nodes import node_problem
from zarr_vectors.validate import validate

Doc = dict[str, Any]


def _misspell_zarr_format(doc: Doc) -> Any:
    doc["zars_format"] = doc.pop("zarr_format")
    return doc


def _drop_node_type(doc: Doc) -> Any:
    del doc["node_type"]
    return doc


def _wrong_node_type(doc: Doc) -> Any:
    doc["node_type"] = "group" if doc["node_type"] == "array" else "array"
    return doc


def _not_an_object(doc: Doc) -> Any:
    return [doc]


DAMAGES: dict[str, Callable[[Doc], Any]] = {
    "zars_format": _misspell_zarr_format,
    "no_node_type": _drop_node_type,
    "wrong_node_type": _wrong_node_type,
    "not_an_object": _not_an_object,
}
NODES = ("0", "0/vertices", "0/vertex_counts", "0/object_attributes/weight", "0/links")


def _damaged(node: str, damage: Callable[[Doc], Any]) -> Any:
    store = object_kind_store("mesh")
    key = f"{node}/zarr.json"
    s.write_json(store, key, damage(s.read_json(store, key)))
    return store


@pytest.mark.parametrize("damage", DAMAGES, ids=list(DAMAGES))
@pytest.mark.parametrize("node", NODES)
def test_invalid_node_metadata_is_an_l1_error(node: str, damage: str) -> None:
    report = validate(_damaged(node, DAMAGES[damage]), level=1)
    assert not report.ok, report.summary()
    assert any(i.startswith("L1.") for i in report.ids()), report.summary()


@pytest.mark.parametrize("damage", DAMAGES, ids=list(DAMAGES))
@pytest.mark.parametrize("node", ["0", "0/vertices", "0/object_attributes/weight"])
def test_invalid_node_metadata_is_refused_on_read(node: str, damage: str) -> None:
    store = _damaged(node, DAMAGES[damage])
    with pytest.raises(zv.MetadataError, match=r"zarr\.json"):
        zv.open(store).read_objects([0])


def test_invalid_root_zarr_format_is_refused_on_open() -> None:
    store = object_kind_store("mesh")
    s.edit(store, "zarr.json", _misspell_zarr_format)
    with pytest.raises(zv.NotAZarrVectorsStoreError, match="zarr_format"):
        zv.open(store)
    assert "L1.root_zarr_json" in validate(store, level=1).ids()


@pytest.mark.parametrize(
    ("doc", "node_type", "expected"),
    [
        ({"zarr_format": 3, "node_type": "group"}, None, None),
        ({"zarr_format": 3, "node_type": "array"}, "array", None),
        ({"zarr_format": 2, "node_type": "array"}, None, "zarr_format 2"),
        ({"zarr_format": 3, "node_type": "array"}, "group", "node_type 'array'"),
        ({"zarr_format": 3}, None, "node_type None"),
        ([], None, "not a JSON object"),
        (None, None, "missing"),
    ],
)
def test_node_problem_names_what_is_wrong(
    doc: Any, node_type: str | None, expected: str | None
) -> None:
    problem = node_problem(doc, node_type)
    if expected is None:
        assert problem is None
    else:
        assert problem is not None
        assert expected in problem
