"""The package's layers import only downward (kernels → format → store → geometry → ...)."""

from __future__ import annotations

import ast
from pathlib import Path

import pytest

PACKAGE = Path(__file__).parent.parent / "zarr_vectors"
RANKS = {
    "errors": 0,
    "_version": 0,
    "kernels": 1,
    "format": 2,
    "store": 3,
    "geometry": 4,
    "query": 5,
    "objects": 5,
    "regions": 5,
    "validate": 5,
    "dataset": 6,
    "lazy": 6,
    "converters": 6,
    "parallel": 6,
    "__init__": 7,
    "cli": 8,
    "_progress": 0,
    "_optional": 0,
    "display": 0,
    "store_summary": 6,
    "_warmup": 6,
    "_deprecation": 0,
}
MODULES = sorted(PACKAGE.rglob("*.py"))


def _layer(module: str) -> str:
    parts = module.split(".")
    return parts[1] if len(parts) > 1 else "__init__"


def _module_name(path: Path) -> str:
    rel = path.relative_to(PACKAGE.parent).with_suffix("")
    parts = list(rel.parts)
    if parts[-1] == "__init__" and len(parts) > 1:
        parts = parts[:-1]
    return ".".join(parts)


def _imports(path: Path) -> set[str]:
    found: set[str] = set()
    for node in ast.walk(ast.parse(path.read_text())):
        if isinstance(node, ast.Import):
            found.update(alias.name for alias in node.names)
        elif isinstance(node, ast.ImportFrom) and node.module and node.level == 0:
            found.add(node.module)
    return found


@pytest.mark.parametrize("path", MODULES, ids=lambda p: str(p.relative_to(PACKAGE)))
def test_imports_go_downward(path: Path) -> None:
    name = _module_name(path)
    own = RANKS[_layer(name) if name != "zarr_vectors" else "__init__"]
    for imported in _imports(path):
        if imported == "zarr_vectors":
            assert own >= RANKS["__init__"], f"{name} imports the public package"
        elif imported.startswith("zarr_vectors."):
            assert RANKS[_layer(imported)] <= own, f"{name} (layer {own}) imports {imported}"


@pytest.mark.parametrize("path", MODULES, ids=lambda p: str(p.relative_to(PACKAGE)))
def test_numba_and_zarr_stay_in_their_layers(path: Path) -> None:
    name = _module_name(path)
    imports = _imports(path)
    if any(i == "numba" or i.startswith("numba.") for i in imports):
        assert name == "zarr_vectors.kernels._jit", f"{name} imports numba"
    if any(i == "zarr" or i.startswith("zarr.") for i in imports):
        assert _layer(name) == "store", f"{name} imports zarr"


def test_no_broad_except_outside_cli() -> None:
    for path in MODULES:
        if path.name == "cli.py":
            continue
        for node in ast.walk(ast.parse(path.read_text())):
            if isinstance(node, ast.ExceptHandler):
                names = ast.unparse(node.type) if node.type is not None else "bare"
                assert names not in ("Exception", "BaseException", "bare"), (
                    f"{path.name}:{node.lineno} catches {names}"
                )
