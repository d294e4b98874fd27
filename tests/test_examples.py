"""Every script under examples/ runs to completion."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import pytest

EXAMPLES = sorted((Path(__file__).parent.parent / "examples").glob("*.py"))


def test_there_are_examples() -> None:
    assert EXAMPLES


@pytest.mark.parametrize("script", EXAMPLES, ids=lambda p: p.name)
def test_example_runs(script: Path, tmp_path: Path) -> None:
    done = subprocess.run(
        [sys.executable, str(script), str(tmp_path)],
        capture_output=True,
        text=True,
        timeout=300,
        check=False,
    )
    assert done.returncode == 0, done.stdout + done.stderr
    assert done.stdout.strip()


def _between(text: str, begin: str, end: str) -> str:
    return text.split(begin, 1)[1].split(end, 1)[0].strip()


def test_readme_quick_start_is_an_example() -> None:
    """The README's "Use" code block is examples/quickstart.py, which the tests run."""
    root = Path(__file__).parent.parent
    readme = (root / "README.md").read_text()
    shown = _between(readme.split("## Use", 1)[1], "```python", "```")
    example = (root / "examples" / "quickstart.py").read_text()
    ran = _between(example, "# README quick start: begin", "# README quick start: end")
    assert shown == ran
