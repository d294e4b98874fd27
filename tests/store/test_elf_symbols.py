"""Internal functions of a loaded ELF library (store/elf_symbols.py)."""

from __future__ import annotations

import sys
from pathlib import Path

import pytest

from zarr_vectors.store import elf_symbols
from zarr_vectors.store.elf_symbols import function_addresses
from zarr_vectors.store.native_blocks import blosc_libraries

_EXPORTED = ["blosc_compress_ctx", "blosc_decompress_ctx", "blosc_getitem"]
pytestmark = pytest.mark.skipif(not sys.platform.startswith("linux"), reason="ELF only")


@pytest.mark.parametrize("path", blosc_libraries())
def test_finds_c_blosc_shuffles(path: str) -> None:
    """Both C-Blosc libraries name their shuffles; the addresses differ and are set."""
    found = function_addresses(
        path, ["blosc_internal_shuffle", "blosc_internal_bitshuffle"], _EXPORTED
    )
    assert found is not None
    assert len(set(found.values())) == 2
    assert all(found.values())


def test_refuses_what_does_not_match(tmp_path: Path) -> None:
    """A missing name, a file that is no ELF library, too few exported names: None."""
    path = blosc_libraries()[0]
    assert function_addresses(path, ["no_such_function"], _EXPORTED) is None
    assert function_addresses(path, ["blosc_internal_shuffle"], _EXPORTED[:1]) is None
    text = tmp_path / "lib.so"
    text.write_bytes(b"not an ELF file" * 10)
    assert function_addresses(str(text), ["blosc_internal_shuffle"], _EXPORTED) is None
    elf = tmp_path / "cut.so"
    elf.write_bytes(Path(path).read_bytes()[:100])
    assert function_addresses(str(elf), ["blosc_internal_shuffle"], _EXPORTED) is None


def test_refuses_bases_that_disagree(monkeypatch: pytest.MonkeyPatch) -> None:
    """Exported functions placed at bases that disagree (the file read is not the library
    loaded): None, never an address."""
    path = blosc_libraries()[0]
    real = elf_symbols._function_symbols

    def shifted(file: str, names: set[str]) -> dict[str, int] | None:
        found = real(file, names)
        assert found is not None
        return {**found, "blosc_getitem": found["blosc_getitem"] + 16}

    monkeypatch.setattr(elf_symbols, "_function_symbols", shifted)
    assert function_addresses(path, ["blosc_internal_shuffle"], _EXPORTED) is None
