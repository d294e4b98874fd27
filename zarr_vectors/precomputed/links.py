"""A Neuroglancer viewer state, and a link to it, with one layer per precomputed source.

The link is only built (and printed by ``zarr-vectors serve``), never opened: the state goes
in the URL's fragment (``#!{...}``), which a browser does not send to the client's host.
"""

from __future__ import annotations

import json
import urllib.parse
from collections.abc import Mapping
from typing import Any

from zarr_vectors.precomputed.source import PrecomputedSource

__all__ = ["NEUROGLANCER_CLIENT", "layer_type", "neuroglancer_link", "neuroglancer_state"]

NEUROGLANCER_CLIENT = "https://neuroglancer-demo.appspot.com/"
"""A public Neuroglancer client; any other (a local build, the ``neuroglancer`` package's) works."""

_LAYER_TYPES = {
    "neuroglancer_annotations_v1": "annotation",
    "neuroglancer_skeletons": "segmentation",
    "neuroglancer_multilod_draco": "segmentation",
    "neuroglancer_legacy_mesh": "segmentation",
}
"""The layer type that shows each precomputed ``@type``."""


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


def neuroglancer_state(sources: Mapping[str, PrecomputedSource], base_url: str) -> dict[str, Any]:
    """A viewer state with one layer per source, ``precomputed://<base_url>/<name>``.

    Parameters
    ----------
    sources
        The precomputed sources by name (their ``info`` gives each layer's type).
    base_url
        Where the sources are served, without a trailing slash
        (``http://127.0.0.1:8000``).

    Examples
    --------
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
    """
    layers = [
        {
            "type": layer_type(source.read("info")),
            "source": f"precomputed://{base_url}/{name}",
            "name": name,
        }
        for name, source in sources.items()
    ]
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
