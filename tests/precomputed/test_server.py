"""The precomputed server: what it answers, with which headers, from how many threads."""

from __future__ import annotations

import gzip
import http.client
import io
import json
import socket
import threading
import urllib.parse
from collections.abc import Iterator
from dataclasses import dataclass

import pytest
from hypothesis import HealthCheck, assume, given, settings
from hypothesis import strategies as st

from tests.helpers import examples
from tests.precomputed.fake_sources import SPATIAL_CHUNK, random_points, random_segments
from zarr_vectors.errors import CorruptChunkError, InvalidInputError
from zarr_vectors.precomputed import PrecomputedFileNotFoundError
from zarr_vectors.precomputed.links import neuroglancer_link
from zarr_vectors.precomputed.server import CORS_HEADERS, GZIP_MIN_BYTES, PrecomputedServer


class Bytes:
    """A source whose one file ``blob`` is whatever the test sets; counts its reads."""

    name = "bytes"

    def __init__(self, blob: bytes = b"") -> None:
        self.blob = blob
        self.reads = 0
        self._lock = threading.Lock()

    def paths(self) -> Iterator[str]:
        yield "info"
        yield "blob"

    def read(self, path: str) -> bytes:
        with self._lock:
            self.reads += 1
        if path == "info":
            return b'{"@type": "neuroglancer_annotations_v1"}'
        if path == "blob":
            return self.blob
        if path == "broken":
            raise CorruptChunkError("chunk (0, 0, 0) cannot be decoded")
        raise PrecomputedFileNotFoundError(f"no file {path!r}")


@pytest.fixture(scope="module")
def server() -> Iterator[PrecomputedServer]:
    sources = {"annotations": random_points("annotations", 300), "bytes": Bytes(b"x" * 1000)}
    with PrecomputedServer(sources) as running:
        yield running


@dataclass
class Answer:
    status: int
    headers: dict[str, str]
    body: bytes

    def getheader(self, name: str) -> str | None:
        return self.headers.get(name.lower())


def _get(server: PrecomputedServer, path: str, method: str = "GET", **headers: str) -> Answer:
    connection = http.client.HTTPConnection("127.0.0.1", server.port, timeout=10)
    try:
        connection.request(method, path, headers=headers)
        response = connection.getresponse()
        body = response.read()
        fields = {name.lower(): value for name, value in response.getheaders()}
        return Answer(response.status, fields, body)
    finally:
        connection.close()


def test_info_is_json_with_cors(server: PrecomputedServer) -> None:
    answer = _get(server, "/annotations/info")
    body = answer.body
    assert answer.status == 200
    assert answer.getheader("Content-Type") == "application/json"
    assert answer.getheader("Access-Control-Allow-Origin") == "*"
    assert body == server.sources["annotations"].read("info")
    assert json.loads(body)["@type"] == "neuroglancer_annotations_v1"


def test_a_file_is_its_sources_bytes(server: PrecomputedServer) -> None:
    answer = _get(server, f"/annotations/{SPATIAL_CHUNK}?cache=1")
    assert answer.status == 200
    assert answer.getheader("Content-Type") == "application/octet-stream"
    assert answer.body == server.sources["annotations"].read(SPATIAL_CHUNK)


@pytest.mark.parametrize(
    "path", ["/", "/nowhere/info", "/annotations", "/annotations/", "/annotations/spatial9/0_0_0"]
)
def test_a_path_no_source_has_is_404(server: PrecomputedServer, path: str) -> None:
    answer = _get(server, path)
    message = answer.body.decode()
    assert answer.status == 404
    assert answer.getheader("Access-Control-Allow-Origin") == "*"
    assert message  # says what is missing


def test_a_failing_read_is_500_with_the_reason(server: PrecomputedServer) -> None:
    answer = _get(server, "/bytes/broken")
    assert answer.status == 500
    assert "cannot be decoded" in answer.body.decode()


def test_preflight_allows_any_header(server: PrecomputedServer) -> None:
    answer = _get(server, "/annotations/info", "OPTIONS", Origin="http://example.org")
    assert answer.status == 204
    assert answer.body == b""
    for name, value in CORS_HEADERS.items():
        assert answer.getheader(name) == value


def test_head_sends_the_headers_only(server: PrecomputedServer) -> None:
    full = len(server.sources["annotations"].read("info"))
    answer = _get(server, "/annotations/info", "HEAD")
    assert answer.status == 200
    assert answer.getheader("Content-Length") == str(full)
    assert answer.body == b""


@settings(
    max_examples=25, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture]
)
@given(blob=st.binary(max_size=4 * GZIP_MIN_BYTES), gzip_ok=st.booleans())
def test_the_client_gets_the_bytes_gzip_or_not(
    server: PrecomputedServer, blob: bytes, gzip_ok: bool
) -> None:
    source = server.sources["bytes"]
    assert isinstance(source, Bytes)
    source.blob = blob
    headers = {"Accept-Encoding": "gzip, deflate"} if gzip_ok else {}
    answer = _get(server, "/bytes/blob", **headers)
    body = answer.body
    encoded = answer.getheader("Content-Encoding") == "gzip"
    assert encoded == (gzip_ok and len(blob) >= GZIP_MIN_BYTES)
    assert (gzip.decompress(body) if encoded else body) == blob
    assert server.requests[-1].size == len(blob), server.requests[-3:]


def test_threads_share_one_source(server: PrecomputedServer) -> None:
    source = server.sources["bytes"]
    assert isinstance(source, Bytes)
    before = source.reads
    source.blob = b"y" * 5000
    bodies: list[bytes] = []

    def fetch() -> None:
        bodies.append(_get(server, "/bytes/blob").body)

    threads = [threading.Thread(target=fetch) for _ in range(12)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    assert bodies == [source.blob] * 12
    assert source.reads - before == 12


def test_every_request_is_logged() -> None:
    log = io.StringIO()
    with PrecomputedServer({"bytes": Bytes(b"abc")}, log=log) as server:
        _get(server, "/bytes/blob")
        _get(server, "/bytes/nothing")
    assert [(r.path, r.status, r.size) for r in server.requests] == [
        ("/bytes/blob", 200, 3),
        ("/bytes/nothing", 404, len(f"no file {'nothing'!r}")),
    ]
    missing = len(f"no file {'nothing'!r}")
    assert log.getvalue().splitlines() == [
        "200 GET /bytes/blob 3 B",
        f"404 GET /bytes/nothing {missing} B",
    ]


def test_close_frees_the_port_and_is_idempotent() -> None:
    server = PrecomputedServer({"bytes": Bytes()})
    port = server.port
    server.close()
    server.close()
    assert "closed" in repr(server)
    with socket.socket() as again:
        again.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
        again.bind(("127.0.0.1", port))
    with pytest.raises(ConnectionRefusedError):
        socket.create_connection(("127.0.0.1", port), timeout=2)


def test_a_taken_port_is_an_oserror() -> None:
    with PrecomputedServer({"bytes": Bytes()}) as first, pytest.raises(OSError, match="in use"):
        PrecomputedServer({"bytes": Bytes()}, port=first.port)


@pytest.mark.parametrize("sources", [{}, {"a/b": Bytes()}, {"..": Bytes()}, {"": Bytes()}])
def test_bad_source_names_are_refused(sources: dict[str, Bytes]) -> None:
    with pytest.raises(InvalidInputError, match="source"):
        PrecomputedServer(sources)


def test_the_link_holds_one_layer_per_source() -> None:
    sources = {"points": random_points("points", 10), "lines": random_segments("lines", 10)}
    with PrecomputedServer(sources) as server:
        link = server.neuroglancer_link("https://client.example/")
        fragment = urllib.parse.urlsplit(link).fragment
    assert link.startswith("https://client.example/#!")
    state = json.loads(urllib.parse.unquote(fragment.removeprefix("!")))
    assert state == server.neuroglancer_state()
    assert [(layer["name"], layer["type"], layer["source"]) for layer in state["layers"]] == [
        (name, "annotation", f"precomputed://{server.url}/{name}") for name in sources
    ]


json_values = st.recursive(
    st.none() | st.booleans() | st.integers() | st.text(),
    lambda inner: st.lists(inner, max_size=3) | st.dictionaries(st.text(), inner, max_size=3),
    max_leaves=10,
)


# The first test here to draw text: Hypothesis builds its unicode table
# (.hypothesis/unicode_data) once per checkout, some seconds; later runs read it.
@settings(max_examples=examples(10, 25), deadline=None)
@given(state=st.dictionaries(st.text(), json_values, max_size=4))
def test_a_link_gives_its_state_back(state: dict[str, object]) -> None:
    link = neuroglancer_link(state, "https://client.example/")
    fragment = link.split("#!", 1)[1]
    assert not set(fragment) & set("# {}")
    assert json.loads(urllib.parse.unquote(fragment)) == state


def _range_header(start: int | None, last: int | None) -> str:
    return f"bytes={'' if start is None else start}-{'' if last is None else last}"


def _python_slice(blob: bytes, start: int | None, last: int | None) -> bytes | None:
    """What RFC 9110 says the range selects, by Python slicing; None when unsatisfiable."""
    if start is None:
        assert last is not None
        return blob[max(len(blob) - last, 0) :] if last > 0 and blob else None
    if start >= len(blob):
        return None
    return blob[start:] if last is None else blob[start : last + 1]


@settings(
    max_examples=30, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture]
)
@given(
    blob=st.binary(max_size=600),
    start=st.none() | st.integers(0, 700),
    last=st.none() | st.integers(0, 700),
)
def test_a_range_gets_its_bytes(
    server: PrecomputedServer, blob: bytes, start: int | None, last: int | None
) -> None:
    """Neuroglancer reads mesh fragments by ``Range``: 206 with the bytes, 416 past the end."""
    assume(not (start is None and last is None))
    assume(start is None or last is None or last >= start)
    source = server.sources["bytes"]
    assert isinstance(source, Bytes)
    source.blob = blob
    answer = _get(server, "/bytes/blob", Range=_range_header(start, last))
    expected = _python_slice(blob, start, last)
    if expected is None:
        assert answer.status == 416
        assert answer.getheader("Content-Range") == f"bytes */{len(blob)}"
    else:
        first = len(blob) - len(expected) if start is None else start
        assert answer.status == 206
        assert answer.body == expected
        assert answer.getheader("Content-Range") == (
            f"bytes {first}-{first + len(expected) - 1}/{len(blob)}"
        )


@pytest.mark.parametrize("header", ["bytes=0-1,3-4", "bytes=5-2", "lines=0-4", "bytes=-"])
def test_a_range_it_does_not_take_gets_the_whole_file(
    server: PrecomputedServer, header: str
) -> None:
    source = server.sources["bytes"]
    assert isinstance(source, Bytes)
    source.blob = b"0123456789"
    answer = _get(server, "/bytes/blob", Range=header)
    assert (answer.status, answer.body) == (200, b"0123456789")
    assert answer.getheader("Accept-Ranges") == "bytes"
