"""A Neuroglancer viewer state, and a link to it, with one layer per precomputed source.

The link is only built (and printed by ``zarr-vectors serve``), never opened: the state goes
in the URL's fragment (``#!{...}``), which a browser does not send to the client's host.
"""

from __future__ import annotations

import json
import urllib.parse
from collections.abc import Mapping
from typing import Any, Protocol, runtime_checkable

import numpy as np

from zarr_vectors.precomputed.source import PrecomputedSource

__all__ = [
    "NEUROGLANCER_CLIENT",
    "SELECTED_SEGMENTS",
    "SegmentSource",
    "layer_type",
    "neuroglancer_link",
    "neuroglancer_state",
    "selection_notes",
]

NEUROGLANCER_CLIENT = "https://neuroglancer-demo.appspot.com/"
"""A public Neuroglancer client; any other (a local build, the ``neuroglancer`` package's) works."""

_LAYER_TYPES = {
    "neuroglancer_annotations_v1": "annotation",
    "neuroglancer_skeletons": "segmentation",
    "neuroglancer_multilod_draco": "segmentation",
    "neuroglancer_legacy_mesh": "segmentation",
}
"""The layer type that shows each precomputed ``@type``."""

SELECTED_SEGMENTS = 1000
"""A segmentation layer of the state selects every object id up to this many, else the first
this many (ascending): the layer starts showing objects, and the link stays a few KB."""


@runtime_checkable
class SegmentSource(Protocol):
    """A source shown by object id (skeletons, meshes): ``segment_ids()``, ascending."""

    def segment_ids(self) -> np.ndarray:
        """The object ids the source has a file for, ascending."""
        ...


def _selected(source: PrecomputedSource, limit: int) -> tuple[list[str], int]:
    """The ids a layer of ``source`` selects (decimal strings) and how many it has."""
    if not isinstance(source, SegmentSource):
        return [], 0
    ids = source.segment_ids()
    return [str(int(i)) for i in ids[:limit]], int(ids.size)


def selection_notes(
    sources: Mapping[str, PrecomputedSource], limit: int = SELECTED_SEGMENTS
) -> list[str]:
    """One line per layer that selects only some of its objects (more than ``limit``).

    Examples
    --------
    >>> import numpy as np
    >>> from zarr_vectors.precomputed.links import selection_notes
    >>> class Skeletons:
    ...     name = "skeletons"
    ...     def paths(self):
    ...         yield "info"
    ...     def read(self, path):
    ...         return b'{"@type": "neuroglancer_skeletons"}'
    ...     def segment_ids(self):
    ...         return np.arange(5000)
    >>> selection_notes({"skeletons": Skeletons()})[0].split(";")[0]
    'skeletons: the link selects the first 1,000 of 5,000 objects (ids 0 to 999)'
    >>> selection_notes({"skeletons": Skeletons()}, limit=5000)
    []
    """
    notes = []
    for name, source in sources.items():
        shown, total = _selected(source, limit)
        if total > len(shown) > 0:
            notes.append(
                f"{name}: the link selects the first {len(shown):,} of {total:,} objects "
                f"(ids {shown[0]} to {shown[-1]}); pick others from the layer's segment list"
            )
    return notes


def layer_type(info: bytes) -> str:
    """The Neuroglancer layer type that shows a precomputed source, from its ``info`` bytes.

    Annotations show in an ``annotation`` layer; skeletons and meshes in a ``segmentation``
    layer (select object ids to see them). An unknown ``@type`` is left to Neuroglancer
    (``auto``).

    Examples
    --------
    >>> from zarr_vectors.precomputed.links import layer_type
    >>> layer_type(b'{"@type": "neuroglancer_annotations_v1"}')
    'annotation'
    >>> layer_type(b'{"@type": "neuroglancer_skeletons"}')
    'segmentation'
    """
    kind = json.loads(info).get("@type", "")
    return _LAYER_TYPES.get(kind, "auto")


def neuroglancer_state(
    sources: Mapping[str, PrecomputedSource],
    base_url: str,
    *,
    segments: int = SELECTED_SEGMENTS,
) -> dict[str, Any]:
    """A viewer state with one layer per source, ``precomputed://<base_url>/<name>``.

    A segmentation layer (skeletons, meshes) selects the source's object ids, all of them
    when there are at most ``segments``, else the first ``segments`` (ascending;
    :func:`selection_notes` says so), so that it starts showing objects.

    Parameters
    ----------
    sources
        The precomputed sources by name (their ``info`` gives each layer's type).
    base_url
        Where the sources are served, without a trailing slash
        (``http://127.0.0.1:8000``).
    segments
        The most object ids a layer selects (default :data:`SELECTED_SEGMENTS`).

    Examples
    --------
    >>> import numpy as np
    >>> from zarr_vectors.precomputed.links import neuroglancer_state
    >>> class Points:
    ...     name = "annotations"
    ...     def paths(self):
    ...         yield "info"
    ...     def read(self, path):
    ...         return b'{"@type": "neuroglancer_annotations_v1"}'
    >>> state = neuroglancer_state({"annotations": Points()}, "http://127.0.0.1:8000")
    >>> state["layers"][0]["source"]
    'precomputed://http://127.0.0.1:8000/annotations'
    >>> state["layers"][0]["type"]
    'annotation'
    >>> class Skeletons(Points):
    ...     def read(self, path):
    ...         return b'{"@type": "neuroglancer_skeletons"}'
    ...     def segment_ids(self):
    ...         return np.array([3, 12])
    >>> neuroglancer_state({"skeletons": Skeletons()}, "http://h")["layers"][0]["segments"]
    ['3', '12']
    """
    layers = []
    for name, source in sources.items():
        layer: dict[str, Any] = {
            "type": layer_type(source.read("info")),
            "source": f"precomputed://{base_url}/{name}",
            "name": name,
        }
        shown, _ = _selected(source, segments)
        if shown:
            layer["segments"] = shown
        layers.append(layer)
    return {"layers": layers, "layout": "3d"}


def neuroglancer_link(state: Mapping[str, Any], client: str = NEUROGLANCER_CLIENT) -> str:
    """The URL that opens ``state`` in the Neuroglancer ``client`` (state in the fragment).

    Examples
    --------
    >>> from zarr_vectors.precomputed.links import neuroglancer_link
    >>> neuroglancer_link({"layout": "3d"}, "https://example.org/")
    'https://example.org/#!%7B%22layout%22%3A%223d%22%7D'
    """
    text = json.dumps(state, separators=(",", ":"))
    return f"{client}#!{urllib.parse.quote(text, safe='')}"
