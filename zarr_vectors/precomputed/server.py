"""Serve precomputed sources over HTTP to Neuroglancer, computed on the fly.

:class:`PrecomputedServer` answers ``GET /<source name>/<path>`` with ``read(path)`` of that
source, from a thread pool (one thread per connection, stdlib
:class:`http.server.ThreadingHTTPServer`) bound to the loopback address: the sources, and the
one opened store behind them, are shared by every request. It sends the CORS headers a
Neuroglancer client on another origin needs, ``application/json`` for ``info`` files, gzip
when the client accepts it, one byte range when asked (206: Neuroglancer reads mesh fragments
so), and 404 for a path no source has. Each request is recorded in
:attr:`PrecomputedServer.requests`.
"""

from __future__ import annotations

import errno
import gzip
import http.server
import re
import threading
import time
import urllib.parse
from collections.abc import Mapping
from dataclasses import dataclass
from types import TracebackType
from typing import Any, TextIO

from zarr_vectors.errors import InvalidInputError, ZarrVectorsError
from zarr_vectors.precomputed.links import (
    NEUROGLANCER_CLIENT,
    neuroglancer_link,
    neuroglancer_state,
)
from zarr_vectors.precomputed.source import PrecomputedFileNotFoundError, PrecomputedSource

__all__ = ["PortInUseError", "PrecomputedServer", "ServedRequest", "byte_range"]

LOOPBACK = "127.0.0.1"
SHUTDOWN_POLL = 0.05
"""Seconds between the serving loop's checks for :meth:`PrecomputedServer.close`."""
GZIP_MIN_BYTES = 256
"""Smaller answers are sent as they are: compressing them saves nothing."""
CORS_HEADERS = {
    "Access-Control-Allow-Origin": "*",
    "Access-Control-Allow-Methods": "GET, HEAD, OPTIONS",
    "Access-Control-Allow-Headers": "*",
    "Access-Control-Expose-Headers": "Content-Length, Content-Encoding, Content-Range",
    "Access-Control-Max-Age": "86400",
}
"""A Neuroglancer client is served from another origin: it may read every answer."""
_RANGE = re.compile(r"^bytes=(\d*)-(\d*)$")


def byte_range(header: str, total: int) -> tuple[int, int] | None:
    """The bytes ``[start, stop)`` of ``total`` that a ``Range`` header asks for.

    Neuroglancer reads parts of a file with one range (multi-resolution mesh fragments).
    ``None`` means "send the whole file" (no range, several ranges or a malformed one:
    RFC 9110 lets a server ignore them); ``start >= stop`` means the range is not
    satisfiable (416).

    Examples
    --------
    >>> from zarr_vectors.precomputed.server import byte_range
    >>> byte_range("bytes=2-5", 10), byte_range("bytes=7-", 10), byte_range("bytes=-3", 10)
    ((2, 6), (7, 10), (7, 10))
    >>> byte_range("bytes=4-99", 10), byte_range("bytes=0-1,4-5", 10)
    ((4, 10), None)
    >>> start, stop = byte_range("bytes=10-", 10)
    >>> start >= stop
    True
    """
    match = _RANGE.match(header.strip())
    if match is None or match.group(1) == match.group(2) == "":
        return None
    first, last = match.group(1), match.group(2)
    if first == "":  # a suffix: the last n bytes
        suffix = int(last)
        return (max(total - suffix, 0), total) if suffix > 0 else (total, total)
    start = int(first)
    stop = total if last == "" else min(int(last) + 1, total)
    if last != "" and int(last) < start:
        return None
    return (start, stop) if start < total else (total, total)


class PortInUseError(ZarrVectorsError, OSError):
    """The port asked for is taken on 127.0.0.1 (another server, or this one still running).

    Examples
    --------
    >>> from zarr_vectors.precomputed.server import PortInUseError
    >>> issubclass(PortInUseError, OSError)
    True
    """


@dataclass(frozen=True)
class ServedRequest:
    """One request the server answered: what was asked, the status, the body's size.

    ``size`` is the length of the file before any gzip (0 for an error or ``HEAD``).

    Examples
    --------
    >>> from zarr_vectors.precomputed.server import ServedRequest
    >>> ServedRequest("GET", "/annotations/info", 200, 512, 0.001).status
    200
    """

    method: str
    path: str
    status: int
    size: int
    seconds: float


class _Handler(http.server.BaseHTTPRequestHandler):
    """One connection's requests; the sources and the log hang on ``self.server``."""

    server: _HTTPServer
    protocol_version = "HTTP/1.1"  # keep-alive: Neuroglancer fetches many small files

    def do_OPTIONS(self) -> None:
        """A CORS preflight: allowed, no body."""
        self._answer(204, b"", "text/plain", started=time.perf_counter())

    def do_HEAD(self) -> None:
        self._get(body=False)

    def do_GET(self) -> None:
        self._get(body=True)

    def _get(self, *, body: bool) -> None:
        started = time.perf_counter()
        status, data, content_type = self.server.lookup(self.path)
        asked = self.headers.get("Range")
        span = byte_range(asked, len(data)) if status == 200 and asked else None
        if span is None:
            self._answer(status, data, content_type, started=started, body=body)
        elif span[0] >= span[1]:
            extra = {"Content-Range": f"bytes */{len(data)}"}
            self._answer(416, b"", "text/plain", started=started, body=body, headers=extra)
        else:
            extra = {"Content-Range": f"bytes {span[0]}-{span[1] - 1}/{len(data)}"}
            part = data[span[0] : span[1]]
            self._answer(206, part, content_type, started=started, body=body, headers=extra)

    def _answer(
        self,
        status: int,
        data: bytes,
        content_type: str,
        *,
        started: float,
        body: bool = True,
        headers: Mapping[str, str] | None = None,
    ) -> None:
        size = len(data)
        encoding = None
        if status == 200 and size >= GZIP_MIN_BYTES and "gzip" in self._accepted():
            data, encoding = gzip.compress(data, compresslevel=5), "gzip"
        # logged before anything goes out: a client that has its answer finds it logged
        self.server.record(self.command, self.path, status, size if body else 0, started)
        self.send_response(status)
        for name, value in {**CORS_HEADERS, **(headers or {})}.items():
            self.send_header(name, value)
        self.send_header("Accept-Ranges", "bytes")
        self.send_header("Content-Type", content_type)
        self.send_header("Content-Length", str(len(data)))
        if encoding:
            self.send_header("Content-Encoding", encoding)
        self.end_headers()
        if body and data:
            self.wfile.write(data)

    def _accepted(self) -> str:
        return str(self.headers.get("Accept-Encoding", ""))

    def log_message(self, format: str, *args: Any) -> None:
        """The server keeps its own log (:attr:`PrecomputedServer.requests`)."""


class _HTTPServer(http.server.ThreadingHTTPServer):
    """The stdlib threading server with the sources it serves and the log it keeps."""

    daemon_threads = True

    def __init__(
        self, port: int, sources: Mapping[str, PrecomputedSource], log: TextIO | None
    ) -> None:
        try:
            super().__init__((LOOPBACK, port), _Handler)
        except OSError as exc:
            if exc.errno != errno.EADDRINUSE:
                raise
            raise PortInUseError(
                f"port {port} on {LOOPBACK} is in use: pass another port, or 0 for a free one"
            ) from exc
        self.sources = dict(sources)
        # a source's read() runs under its own lock: the sources cache what they computed
        # and share one opened store; their answers are compressed and sent outside it
        self.read_locks = {name: threading.Lock() for name in self.sources}
        self.requests: list[ServedRequest] = []
        self.log = log
        self.lock = threading.Lock()

    def lookup(self, raw_path: str) -> tuple[int, bytes, str]:
        """``(status, body, content type)`` of a request path ``/<source>/<file path>``."""
        path = urllib.parse.unquote(urllib.parse.urlsplit(raw_path).path).strip("/")
        name, _, file_path = path.partition("/")
        source = self.sources.get(name)
        if source is None or not file_path:
            return (
                404,
                f"no file {path!r}: sources are {sorted(self.sources)}".encode(),
                "text/plain",
            )
        try:
            with self.read_locks[name]:
                data = source.read(file_path)
        except PrecomputedFileNotFoundError as exc:
            return 404, str(exc).encode(), "text/plain"
        except (ZarrVectorsError, OSError, ValueError) as exc:
            return 500, f"{type(exc).__name__}: {exc}".encode(), "text/plain"
        kind = (
            "application/json"
            if file_path.rsplit("/", 1)[-1] == "info"
            else "application/octet-stream"
        )
        return 200, data, kind

    def record(self, method: str, path: str, status: int, size: int, started: float) -> None:
        """Keep one answered request; print a line of it when a log stream is set."""
        done = ServedRequest(method, path, status, size, time.perf_counter() - started)
        with self.lock:
            self.requests.append(done)
            if self.log is not None:
                print(f"{status} {method} {path} {size} B", file=self.log, flush=True)


class PrecomputedServer:
    """Precomputed sources served at ``http://127.0.0.1:<port>/<name>/``, until closed.

    The server starts answering at once, from a background thread; :meth:`close` (or the end
    of a ``with`` block) stops it and frees the port. Each source's files are computed on
    request by ``read(path)``; every handler thread shares the same source objects.

    Parameters
    ----------
    sources
        The precomputed sources by name (``{"annotations": ..., "skeletons": ...}``).
    port
        TCP port on 127.0.0.1; 0 (default) takes a free one (see :attr:`port`).
    log
        A text stream to print one line per request to (default: none; every request is
        kept in :attr:`requests` either way).

    Raises
    ------
    InvalidInputError
        When ``sources`` is empty or a name is not one path segment.
    PortInUseError
        When the port is taken.

    Examples
    --------
    >>> import urllib.request
    >>> from zarr_vectors.precomputed.server import PrecomputedServer
    >>> class Hello:
    ...     name = "hello"
    ...     def paths(self):
    ...         yield "info"
    ...     def read(self, path):
    ...         return b'{"@type": "neuroglancer_annotations_v1"}'
    >>> with PrecomputedServer({"hello": Hello()}) as server:
    ...     answer = urllib.request.urlopen(server.url + "/hello/info").read()
    >>> answer
    b'{"@type": "neuroglancer_annotations_v1"}'
    >>> server.requests[0].status
    200
    """

    def __init__(
        self,
        sources: Mapping[str, PrecomputedSource],
        *,
        port: int = 0,
        log: TextIO | None = None,
    ) -> None:
        _check_names(sources)
        self._httpd = _HTTPServer(port, sources, log)
        self._thread = threading.Thread(
            target=self._httpd.serve_forever,
            kwargs={"poll_interval": SHUTDOWN_POLL},
            name="zarr-vectors-serve",
            daemon=True,
        )
        self._thread.start()
        self._closed = threading.Event()

    @property
    def port(self) -> int:
        """The TCP port the server listens on (the free one taken for ``port=0``)."""
        return int(self._httpd.server_address[1])

    @property
    def url(self) -> str:
        """The server's root URL, ``http://127.0.0.1:<port>`` (a source is under ``/<name>``)."""
        return f"http://{LOOPBACK}:{self.port}"

    @property
    def sources(self) -> dict[str, PrecomputedSource]:
        """The sources served, by name."""
        return dict(self._httpd.sources)

    @property
    def requests(self) -> list[ServedRequest]:
        """Every request answered so far, in order (a copy)."""
        with self._httpd.lock:
            return list(self._httpd.requests)

    def neuroglancer_state(self) -> dict[str, Any]:
        """A Neuroglancer viewer state with one layer per source served here."""
        return neuroglancer_state(self._httpd.sources, self.url)

    def neuroglancer_link(self, client: str = NEUROGLANCER_CLIENT) -> str:
        """A link that opens :meth:`neuroglancer_state` in a Neuroglancer ``client``."""
        return neuroglancer_link(self.neuroglancer_state(), client)

    def wait(self, poll: float = 0.5) -> None:
        """Block until :meth:`close` is called elsewhere (Ctrl-C interrupts it)."""
        while not self._closed.wait(poll):
            pass

    def close(self) -> None:
        """Stop answering, wait for the serving thread and free the port (idempotent)."""
        if self._closed.is_set():
            return
        self._closed.set()
        self._httpd.shutdown()
        self._httpd.server_close()
        self._thread.join()

    def __enter__(self) -> PrecomputedServer:
        return self

    def __exit__(
        self,
        exc_type: type[BaseException] | None,
        exc: BaseException | None,
        traceback: TracebackType | None,
    ) -> None:
        self.close()

    def __repr__(self) -> str:
        state = "closed" if self._closed.is_set() else "serving"
        return f"<PrecomputedServer {self.url} {sorted(self._httpd.sources)} ({state})>"


def _check_names(sources: Mapping[str, PrecomputedSource]) -> None:
    if not sources:
        raise InvalidInputError("no precomputed source to serve: pass at least one")
    for name in sources:
        if not name or "/" in name or name in (".", ".."):
            raise InvalidInputError(
                f"source name {name!r} is not one URL path segment: name it like 'annotations'"
            )
