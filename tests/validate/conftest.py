"""The validator tests' slow cases (most of the metadata-edit corpus) run only on request.

``pytest -m slow tests/validate`` runs them; a run without ``-m`` skips them, so the
default suite keeps its budget.
"""

from __future__ import annotations

from pathlib import Path

import pytest

_HERE = Path(__file__).parent


def pytest_collection_modifyitems(config: pytest.Config, items: list[pytest.Item]) -> None:
    if config.getoption("markexpr"):
        return
    skip = pytest.mark.skip(reason="slow: run with -m slow")
    for item in items:
        if "slow" in item.keywords and _HERE in Path(item.path).parents:
            item.add_marker(skip)
