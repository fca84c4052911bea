"""Reading graphlint's own data files and the user's pyproject.toml: one place for the TOML
reader (``tomllib`` from Python 3.11, its backport ``tomli`` on 3.10)."""

from __future__ import annotations

import sys
from pathlib import Path
from typing import Any

if sys.version_info >= (3, 11):
    import tomllib
else:  # pragma: no cover - Python 3.10
    import tomli as tomllib

TOMLDecodeError = tomllib.TOMLDecodeError


def read_toml(path: Path) -> dict[str, Any]:
    """The table in the TOML file at ``path`` (UTF-8); raises ``TOMLDecodeError`` on bad TOML."""
    return tomllib.loads(path.read_text(encoding="utf-8"))
