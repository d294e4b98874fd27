"""mkdocs hooks of the documentation site (``hooks:`` in mkdocs.yml).

The docstrings cross-reference in Sphinx's roles (``:func:`write_points```), which
mkdocstrings' numpydoc parser leaves as text: the role prefix is dropped from the rendered
page, so the name shows as code.
"""

from __future__ import annotations

import re
from typing import Any

_ROLE = re.compile(r":(?:func|meth|class|attr|mod|data|exc|obj):<code>~?")


def on_page_content(html: str, **_: Any) -> str:
    """Drop Sphinx role prefixes (and the ``~`` shortening mark) before inline code."""
    return _ROLE.sub("<code>", html)
