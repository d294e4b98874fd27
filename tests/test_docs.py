"""The documentation site: its Python code blocks run, and its API table lists every public name.

``mkdocs build --strict`` itself runs in ``.ci/run`` (it needs the ``docs`` extra).
"""

from __future__ import annotations

import re
from pathlib import Path

import pytest

import zarr_vectors as zv

DOCS = Path(__file__).parent.parent / "docs"
PAGES = sorted(DOCS.rglob("*.md"))
# A fenced block written exactly "```python" runs; other fences (```bash, ```text) do not.
_PYTHON_BLOCK = re.compile(r"^```python\n(?P<code>.*?)^```$", re.M | re.S)
_TABLE_NAME = re.compile(r"^\| \[?`(?P<name>[\w.]+)`", re.M)


def _python_blocks(page: Path) -> list[str]:
    return [m.group("code") for m in _PYTHON_BLOCK.finditer(page.read_text())]


def _pages_with_code() -> list[Path]:
    return [page for page in PAGES if _python_blocks(page)]


@pytest.mark.parametrize("page", _pages_with_code(), ids=lambda p: str(p.relative_to(DOCS)))
def test_python_blocks_run(page: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """A page's Python blocks run in order in one namespace, in an empty directory."""
    monkeypatch.chdir(tmp_path)
    namespace: dict[str, object] = {"__name__": "__docs__"}
    for number, code in enumerate(_python_blocks(page), start=1):
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
