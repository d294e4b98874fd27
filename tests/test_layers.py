"""The package's layers import only downward (kernels → format → store → geometry → ...)."""

from __future__ import annotations

import ast
from pathlib import Path

import pytest

import zarr_vectors

PACKAGE = Path(__file__).parent.parent / "zarr_vectors"
RANKS = {
    "errors": 0,
    "_version": 0,
    "_progress": 0,
    "_optional": 0,
    "_deprecation": 0,
    "_closing": 0,
    "display": 0,
    "kernels": 1,
    "format": 2,
    "store": 3,
    "write": 4,
    "geometry": 5,
    "read": 5,
    "result": 5,
    "update": 6,
    "query": 6,
    "validate": 7,
    "dataset": 7,
    "handle": 7,
    "store_summary": 7,
    "converters": 7,
    "parallel": 7,
    "precomputed": 7,
    "_warmup": 7,
    "__init__": 8,
    "cli": 9,
}
# Import circles allowed inside one folder, and why: each is a small group of modules that
# describe one thing from two sides, closed by a ``TYPE_CHECKING`` import.
CIRCLES_ALLOWED_IN = {
    "store": (
        "shards (with shard_assembly and block_decoding, the modules of RowLayout's methods) "
        "reads its blocks through native_blocks, which takes shards' RowLayout type"
    ),
    "write": "_objects builds object runs with _object_runs, which takes the ObjectTable type",
    "read": (
        "reader and the modules of its methods (level_documents, level_globals, "
        "level_fragments, fragment_fetches, level_rows), row_reads, point_reads and "
        "_read_plans: the level reader, its concerns and its read plans"
    ),
    "update": "merge_plan takes link dtypes from merge_links, which takes the MergePlan type",
    "result": "query_result and plotting/shapes/summary/tables: the result and its presentations",
}
MODULES = sorted(PACKAGE.rglob("*.py"))
PACKAGES = {f"zarr_vectors.{p.parent.name}" for p in PACKAGE.glob("*/__init__.py")}


def _layer(module: str) -> str:
    parts = module.split(".")
    return parts[1] if len(parts) > 1 else "__init__"


def _module_name(path: Path) -> str:
    rel = path.relative_to(PACKAGE.parent).with_suffix("")
    parts = list(rel.parts)
    if parts[-1] == "__init__" and len(parts) > 1:
        parts = parts[:-1]
    return ".".join(parts)


def _package(module: str) -> str | None:
    """The package folder a module lives in (``zarr_vectors.write``), None for root modules."""
    parts = module.split(".")
    if len(parts) > 2:
        return ".".join(parts[:2])
    return module if module in PACKAGES else None


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


def _imported_modules(path: Path) -> set[str]:
    """Every ``zarr_vectors`` module a file imports, at run time or under ``TYPE_CHECKING``.

    ``from zarr_vectors.P import name`` counts as an import of the submodule ``P.name`` when
    there is one, else of the face ``P``; an import of a module in another package also runs
    that package's face, so it counts as an import of the face too.
    """
    names = {_module_name(p) for p in MODULES}
    own = _package(_module_name(path))
    found: set[str] = set()
    for node in ast.walk(ast.parse(path.read_text())):
        if isinstance(node, ast.Import):
            targets = [alias.name for alias in node.names]
        elif isinstance(node, ast.ImportFrom) and node.module and node.level == 0:
            targets = [
                f"{node.module}.{alias.name}"
                if f"{node.module}.{alias.name}" in names
                else node.module
                for alias in node.names
            ]
        else:
            continue
        for target in targets:
            if target not in names or target == "zarr_vectors":
                continue
            found.add(target)
            package = _package(target)
            if package is not None and package != own:
                found.add(package)
    return found


@pytest.mark.parametrize("path", MODULES, ids=lambda p: str(p.relative_to(PACKAGE)))
def test_no_import_of_another_packages_private_module(path: Path) -> None:
    name = _module_name(path)
    own = _package(name)
    for imported in _imported_modules(path):
        package = _package(imported)
        private = [part for part in imported.split(".")[2:] if part.startswith("_")]
        if package is not None and package != own and private:
            pytest.fail(
                f"{name} imports {imported}, a private module of {package}: import the name "
                f"from {package} (its face exports what other packages may use)"
            )


def _strongly_connected(graph: dict[str, set[str]]) -> list[set[str]]:
    """Tarjan's strongly connected components of a directed graph, iteratively."""
    index: dict[str, int] = {}
    low: dict[str, int] = {}
    stack: list[str] = []
    on_stack: set[str] = set()
    components: list[set[str]] = []
    for root in sorted(graph):
        if root in index:
            continue
        work = [(root, iter(sorted(graph[root])))]
        index[root] = low[root] = len(index)
        stack.append(root)
        on_stack.add(root)
        while work:
            node, children = work[-1]
            child = next(children, None)
            if child is not None:
                if child not in index:
                    index[child] = low[child] = len(index)
                    stack.append(child)
                    on_stack.add(child)
                    work.append((child, iter(sorted(graph.get(child, ())))))
                elif child in on_stack:
                    low[node] = min(low[node], index[child])
                continue
            work.pop()
            if work:
                low[work[-1][0]] = min(low[work[-1][0]], low[node])
            if low[node] == index[node]:
                component = set()
                while True:
                    member = stack.pop()
                    on_stack.discard(member)
                    component.add(member)
                    if member == node:
                        break
                components.append(component)
    return components


def test_strongly_connected_finds_a_circle() -> None:
    graph = {"a": {"b"}, "b": {"c"}, "c": {"a"}, "d": {"a"}}
    assert sorted(map(sorted, _strongly_connected(graph))) == [["a", "b", "c"], ["d"]]


def test_import_circles_stay_inside_one_allowed_folder() -> None:
    graph = {_module_name(p): _imported_modules(p) for p in MODULES}
    for component in _strongly_connected(graph):
        if len(component) == 1:
            continue
        folders = {_package(m) for m in component}
        assert len(folders) == 1, f"an import circle crosses folders: {sorted(component)}"
        folder = folders.pop()
        assert folder is not None, f"an import circle among root modules: {sorted(component)}"
        assert folder.split(".")[1] in CIRCLES_ALLOWED_IN, (
            f"an import circle in {folder}: {sorted(component)}; break it, or allow the folder "
            "in CIRCLES_ALLOWED_IN with the reason"
        )


def test_public_names_are_defined_in_public_modules() -> None:
    for name in zarr_vectors.__all__:
        module = getattr(getattr(zarr_vectors, name), "__module__", None) or ""
        inside = module.split(".")[2:]  # zarr_vectors.<package>.<module...>
        assert not any(part.startswith("_") for part in inside), (
            f"zarr_vectors.{name} is defined in {module}, a private module: define it in a "
            "public module of its package and export it from the package's face"
        )


# Underscore names one module takes from another: left as they are, with the reason.
PRIVATE_NAMES_SHARED = {
    ("zarr_vectors.kernels.face_links", "zarr_vectors.kernels.binning"): (
        "the face-link kernels inline binning's cell arithmetic (_chunk_index, "
        "_index_too_large); to be named publicly when the kernels are next recompiled"
    ),
}


@pytest.mark.parametrize("path", MODULES, ids=lambda p: str(p.relative_to(PACKAGE)))
def test_no_import_of_another_modules_private_name(path: Path) -> None:
    name = _module_name(path)
    modules = {_module_name(p) for p in MODULES}
    for node in ast.walk(ast.parse(path.read_text())):
        if not isinstance(node, ast.ImportFrom) or node.level or node.module not in modules:
            continue
        if (name, node.module) in PRIVATE_NAMES_SHARED:
            continue
        for alias in node.names:
            private = alias.name.startswith("_") and not alias.name.startswith("__")
            if private and f"{node.module}.{alias.name}" not in modules:
                pytest.fail(
                    f"{name} imports {alias.name}, a private name of {node.module}: make it a "
                    "public name of a module (or move the code that needs it into that module)"
                )


def _is_private_third_party(module: str) -> bool:
    """zarr-python's private modules: ``zarr.core`` and any ``_``-named module under zarr."""
    parts = module.split(".")
    return parts[0] == "zarr" and (
        (len(parts) > 1 and parts[1] == "core") or any(p.startswith("_") for p in parts[1:])
    )


@pytest.mark.parametrize("path", MODULES, ids=lambda p: str(p.relative_to(PACKAGE)))
def test_private_apis_of_other_projects_go_through_one_adapter(path: Path) -> None:
    name = _module_name(path)
    if name != "zarr_vectors.store.zarr_adapter":
        private = sorted(i for i in _imports(path) if _is_private_third_party(i))
        assert not private, (
            f"{name} imports {private}: use zarr_vectors.store.zarr_adapter, the one module "
            "that touches zarr-python's private modules (pinned to the versions checked)"
        )
    if name != "zarr_vectors.store.crc32c_adapter":
        assert "google_crc32c._crc32c" not in path.read_text(), (
            f"{name} loads google-crc32c's private extension: use "
            "zarr_vectors.store.crc32c_adapter.crc32c_function_address"
        )
