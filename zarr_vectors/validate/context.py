"""The state of one validation run: the store, the documents read so far and derived facts.

Every check reads the store through :class:`Context`, which caches JSON documents and
listings, never raises on a damaged or unreadable key (it records why instead), and
collects findings into the :class:`~zarr_vectors.validate.report.ValidationReport`.
"""

from __future__ import annotations

import json
import zipfile
import zlib
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from typing import Any

import numpy as np

from zarr_vectors.format.nodes import node_problem
from zarr_vectors.store.io import StoreIO
from zarr_vectors.validate.checks import severity_of
from zarr_vectors.validate.report import ValidationReport

__all__ = ["STORE_ERRORS", "Context", "Doc", "Facts", "LevelFacts", "Node", "Progress"]

STORE_ERRORS: tuple[type[Exception], ...] = (
    OSError,
    NotImplementedError,
    EOFError,
    ValueError,
    zipfile.BadZipFile,
    zlib.error,
)
"""What reading a key or listing a prefix may raise on a damaged or unreachable store."""

Progress = Callable[[int, int, int], None]
"""``progress(level, chunks_done, chunks_total)``, called as L3 reads the chunks of a level."""

MAX_FINDINGS_PER_CHECK = 200
"""Findings kept per check id; a pathological store would otherwise flood the report."""


@dataclass(frozen=True, slots=True)
class Doc:
    """A JSON document of the store as read: missing, unparsable or parsed.

    Attributes
    ----------
    key
        Store key of the document.
    present
        Whether the key exists.
    value
        The parsed JSON value (None when missing or unparsable).
    error
        Why the document could not be read or parsed, or None.
    """

    key: str
    present: bool
    value: Any = None
    error: str | None = None

    @property
    def ok(self) -> bool:
        """True when the key exists and parses as JSON."""
        return self.present and self.error is None

    def obj(self) -> dict[str, Any] | None:
        """The parsed value when it is a JSON object, else None."""
        return self.value if self.ok and isinstance(self.value, dict) else None

    def describe(self) -> str:
        """Short reason why the document is not a usable JSON object."""
        if not self.present:
            return "does not exist"
        if self.error is not None:
            return self.error
        return f"is not a JSON object (got {type(self.value).__name__})"


@dataclass(frozen=True, slots=True)
class Node:
    """A Zarr node (group or array) of the store.

    Attributes
    ----------
    path
        Node path (``""`` for the root).
    exists
        Whether the node's ``zarr.json`` or any key below it exists.
    node_type
        ``"group"`` or ``"array"`` when ``zarr.json`` is a JSON object with
        ``zarr_format`` 3 and that ``node_type``, else None.
    doc
        The parsed ``zarr.json`` object, or None.
    why
        Why the node is not a valid group or array (empty when it is).
    """

    path: str
    exists: bool
    node_type: str | None
    doc: dict[str, Any] | None
    why: str = ""

    @property
    def is_group(self) -> bool:
        """True for a valid group node."""
        return self.node_type == "group"

    @property
    def is_array(self) -> bool:
        """True for a valid array node."""
        return self.node_type == "array"

    def attributes(self) -> dict[str, Any]:
        """The node's ``attributes`` member when it is an object, else an empty dict."""
        attrs = self.doc.get("attributes") if self.doc is not None else None
        return attrs if isinstance(attrs, dict) else {}


@dataclass(slots=True)
class LevelFacts:
    """What L2 established about one level; None marks a value that is not usable."""

    attrs: dict[str, Any] = field(default_factory=dict)
    bin_shape: tuple[float, ...] | None = None
    n_max: int | None = None
    vertex_count: int | None = None
    chunk_count: int | None = None
    empty_objects: np.ndarray | None = None
    """Objects with the empty manifest, once L3 decoded the level's object index."""


@dataclass(slots=True)
class Facts:
    """Values established by earlier checks and used by later ones.

    A value is None when the check establishing it failed or could not run, so the
    checks depending on it are skipped (spec §11.1, "Scope").
    """

    kind: str | None = None
    version: tuple[int, int] | None = None
    plain: bool | None = None
    """Format 1.3 or later: no ``.zattrs`` mirrors, named dimensions (spec §2.3, §9.0.3)."""
    ndim: int | None = None
    chunk_shape: tuple[float, ...] | None = None
    base_bin_shape: tuple[float, ...] | None = None
    origin: tuple[int, ...] | None = None
    bbox: tuple[tuple[float, ...], tuple[float, ...]] | None = None
    bbox_valid: bool = False
    grid_shape: tuple[int, ...] | None = None
    levels: list[int] = field(default_factory=lambda: [0])
    datasets_read: bool = False
    datasets: dict[int, tuple[int, dict[str, Any]]] = field(default_factory=dict)
    level: dict[int, LevelFacts] = field(default_factory=dict)
    coarse_bounds: dict[int, list[tuple[str, Any, Any]]] = field(default_factory=dict)


class Context:
    """One validation run over one store.

    Parameters
    ----------
    io
        Access to the opened store.
    report
        Receives findings, the ids of the checks run, and notes.
    sample
        Number of chunks per level L3 reads, or None for all.
    progress
        Called as ``progress(level, done, total)`` while L3 reads the chunks of a level.
    """

    def __init__(
        self,
        io: StoreIO,
        report: ValidationReport,
        sample: int | None,
        progress: Progress | None = None,
    ) -> None:
        self.io = io
        self.report = report
        self.sample = sample
        self.progress = progress
        self.facts = Facts()
        self.unreadable: dict[str, str] = {}
        self._docs: dict[str, Doc] = {}
        self._children: dict[str, list[str]] = {}
        self._ran: set[str] = set()
        self._counts: dict[str, int] = {}

    # -- findings ------------------------------------------------------------------------
    def mark(self, *check_ids: str) -> None:
        """Record that these checks were evaluated (``report.checks_run``)."""
        for check_id in check_ids:
            severity_of(check_id)  # unknown ids are programming errors
            if check_id not in self._ran:
                self._ran.add(check_id)
                self.report.checks_run.append(check_id)

    def fail(self, check_id: str, path: str, message: str) -> None:
        """Report a finding of ``check_id`` (with the severity of the registry)."""
        self.mark(check_id)
        seen = self._counts.get(check_id, 0) + 1
        self._counts[check_id] = seen
        if seen <= MAX_FINDINGS_PER_CHECK:
            self.report.add(check_id, severity_of(check_id), path, message)
        elif seen == MAX_FINDINGS_PER_CHECK + 1:
            self.report.note(
                f"{check_id}: more than {MAX_FINDINGS_PER_CHECK} findings; the rest are not listed"
            )

    def failed(self, check_id: str) -> bool:
        """Whether ``check_id`` has reported anything so far."""
        return check_id in self._counts

    def errors_since(self, start: int) -> bool:
        """Whether an error was reported after the first ``start`` problems."""
        return any(p.severity == "error" for p in self.report.problems[start:])

    # -- raw access ----------------------------------------------------------------------
    def fetch(self, requests: Sequence[tuple[str, Any]]) -> list[bytes | None]:
        """Read keys (or byte ranges); None for missing or unreadable keys.

        A key that exists but cannot be read is recorded in :attr:`unreadable` with the
        reason, so checks can tell it from a missing key.
        """
        try:
            return self.io.get_many(list(requests))
        except STORE_ERRORS:
            pass
        out: list[bytes | None] = []
        for key, byte_range in requests:
            try:
                out.append(self.io.get(key, byte_range))
            except STORE_ERRORS as exc:
                self.unreadable[key] = f"cannot be read ({type(exc).__name__}: {exc})"
                out.append(None)
        return out

    def prefetch(self, keys: Sequence[str]) -> None:
        """Read and parse many JSON documents in one batch (cached for :meth:`doc`)."""
        todo = [k for k in dict.fromkeys(keys) if k not in self._docs]
        for key, raw in zip(todo, self.fetch([(k, None) for k in todo]), strict=True):
            self._docs[key] = self._parse(key, raw)

    def doc(self, key: str) -> Doc:
        """The JSON document at ``key`` (cached)."""
        if key not in self._docs:
            self.prefetch([key])
        return self._docs[key]

    def _parse(self, key: str, raw: bytes | None) -> Doc:
        if raw is None:
            if key in self.unreadable:
                return Doc(key, True, None, self.unreadable[key])
            return Doc(key, False)
        try:
            return Doc(key, True, json.loads(raw.decode("utf-8")))
        except (ValueError, RecursionError) as exc:
            return Doc(key, True, None, f"is not valid UTF-8 JSON ({exc})")

    def children(self, prefix: str) -> list[str]:
        """Names of the direct children of ``prefix`` (``""`` for the root), sorted."""
        if prefix not in self._children:
            try:
                self._children[prefix] = self.io.list_dir(prefix)
            except STORE_ERRORS as exc:
                self.unreadable[prefix or "."] = f"cannot be listed ({exc})"
                self._children[prefix] = []
        return self._children[prefix]

    def list_keys(self, prefix: str) -> list[str]:
        """Every key below ``prefix`` (not cached: used once per array by L3)."""
        try:
            return self.io.list_prefix(prefix)
        except STORE_ERRORS as exc:
            self.unreadable[prefix] = f"cannot be listed ({exc})"
            return []

    def node(self, path: str) -> Node:
        """The node at ``path``: whether it exists and whether it is a group or an array."""
        key = f"{path}/zarr.json" if path else "zarr.json"
        doc = self.doc(key)
        exists = doc.present or bool(self.children(path))
        body = doc.obj()
        if body is None:
            why = f"{key} {doc.describe()}" if exists else f"{path or '.'} does not exist"
            return Node(path, exists, None, None, why)
        problem = node_problem(body)
        if problem is not None:
            return Node(path, True, None, body, f"{key} {problem}")
        return Node(path, True, body["node_type"], body)

    def root_attrs(self) -> dict[str, Any]:
        """The root metadata (attributes of the root ``zarr.json``), or an empty dict."""
        return self.node("").attributes()
