"""The documentation site: its Python code blocks run, and its API table lists every public name.

``mkdocs build --strict`` itself runs in ``.ci/run`` (it needs the ``docs`` extra).
"""

from __future__ import annotations

import re
from pathlib import Path

import pytest

import zarr_vectors as zv
from tests.s3server import LoopbackS3

DOCS = Path(__file__).parent.parent / "docs"
PAGES = sorted(DOCS.rglob("*.md"))
# A fenced block written exactly "```python" runs; other fences (```bash, ```text) do not.
_PYTHON_BLOCK = re.compile(r"^```python\n(?P<code>.*?)^```$", re.M | re.S)
S3_URL = "s3://bucket/"
_TABLE_NAME = re.compile(r"^\| \[?`(?P<name>[\w.]+)`", re.M)


def _python_blocks(page: Path) -> list[str]:
    return [m.group("code") for m in _PYTHON_BLOCK.finditer(page.read_text())]


def _pages_with_code() -> list[Path]:
    return [page for page in PAGES if _python_blocks(page)]


@pytest.mark.parametrize("page", _pages_with_code(), ids=lambda p: str(p.relative_to(DOCS)))
def test_python_blocks_run(
    page: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch, request: pytest.FixtureRequest
) -> None:
    """A page's Python blocks run in order in one namespace, in an empty directory.

    ``s3://bucket/`` URLs go to the loopback S3 server (tests/s3server.py), under a key
    prefix of their own.
    """
    monkeypatch.chdir(tmp_path)
    namespace: dict[str, object] = {"__name__": "__docs__"}
    blocks = _python_blocks(page)
    if any(S3_URL in code for code in blocks):
        s3: LoopbackS3 = request.getfixturevalue("s3")
        blocks = [code.replace(S3_URL, f"s3://{s3.fresh_prefix()}/") for code in blocks]
    for number, code in enumerate(blocks, start=1):
        exec(compile(code, f"{page.name}, block {number}", "exec"), namespace)


def test_the_docs_have_python_blocks() -> None:
    assert len(_pages_with_code()) >= 8


def test_no_symbolic_links_in_docs() -> None:
    links = [p for p in DOCS.rglob("*") if p.is_symlink()]
    assert not links, f"the docs folder must hold files, not links: {links}"


def test_api_table_lists_every_public_name() -> None:
    listed = set(_TABLE_NAME.findall((DOCS / "api" / "index.md").read_text()))
    missing = [name for name in zv.__all__ if f"zv.{name}" not in listed]
    unknown = sorted(n for n in listed if n.removeprefix("zv.") not in zv.__all__)
    assert not missing, f"docs/api/index.md lacks a row for {missing}"
    assert not unknown, f"docs/api/index.md lists names that are not public: {unknown}"


def test_api_reference_documents_every_public_name() -> None:
    """Each public function and class is rendered by a ``::: zarr_vectors.NAME`` directive
    (the error classes by the ``zarr_vectors.errors`` module's); a constant is named on a
    reference page."""
    pages = sorted(p for p in (DOCS / "api").glob("*.md") if p.name != "index.md")
    text = "\n".join(page.read_text() for page in pages)
    rendered = set(re.findall(r"^::: zarr_vectors\.(\w+)", text, re.M))
    if "errors" in rendered:
        rendered |= set(zv.errors.__all__)
    missing = [
        name
        for name in zv.__all__
        if name not in rendered and (callable(getattr(zv, name)) or f"`zv.{name}`" not in text)
    ]
    assert not missing, f"no API reference page renders {missing}"
