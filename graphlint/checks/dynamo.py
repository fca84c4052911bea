"""What dynamo does with the Python the rules meet, read from ``dynamo.toml`` (the data) once.

The table is knowledge about torch, kept beside the code that reads it so that adding a construct
is adding an entry; see the file's header for how each entry was verified.
"""

from __future__ import annotations

import sys
from functools import cache
from pathlib import Path
from typing import Any

if sys.version_info >= (3, 11):
    import tomllib
else:  # pragma: no cover - Python 3.10
    import tomli as tomllib

TABLE = Path(__file__).with_name("dynamo.toml")


@cache
def table() -> dict[str, Any]:
    return tomllib.loads(TABLE.read_text(encoding="utf-8"))


@cache
def _checks() -> tuple[dict[str, frozenset[str]], dict[str, frozenset[str]]]:
    by_name: dict[str, frozenset[str]] = {}
    by_bare: dict[str, frozenset[str]] = {}
    for entry in table()["compile_check"]:
        meaning = frozenset(entry["true_under"])
        by_name.update((name, meaning) for name in entry["names"])
        by_bare.update((name, meaning) for name in entry["bare"])
    return by_name, by_bare


def compile_check(name: str | None) -> frozenset[str] | None:
    """The tracers under which the check ``name`` (a qualified name) returns True, or None when
    ``name`` is no such check: a known qualified name first, else the function's last name."""
    if name is None:
        return None
    by_name, by_bare = _checks()
    if name in by_name:
        return by_name[name]
    return by_bare.get(name.rsplit(".", 1)[-1])


def true_when_compiling(name: str | None) -> bool | None:
    """What the check ``name`` returns while dynamo traces: True, False, or None (not a check)."""
    meaning = compile_check(name)
    return None if meaning is None else "dynamo" in meaning
