"""The table of graphlint's codes that no static rule class documents (``codes.toml`` beside
this file): GL000, GL204–GL207, GT…, GD…, TA…, the static rules' Chinese summaries, and where
torch's own GBxxxx codes are found. Standard library only: ``graphlint check`` reads it for
``--select`` / ``--ignore`` and must start fast.
"""

from __future__ import annotations

import functools
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from graphlint.tomlfile import read_toml


CODES_FILE = Path(__file__).with_name("codes.toml")
LANGUAGES = ("en", "zh")


@dataclass(frozen=True)
class CodeEntry:
    code: str
    slug: str
    command: str  # "check" or "trace": the command that prints it
    layer: str
    severity: str
    doc: str  # docs/PAGE.md#anchor
    summary: dict[str, str]
    text: dict[str, str]


@functools.cache
def _table() -> dict[str, Any]:
    return read_toml(CODES_FILE)


@functools.cache
def code_entries() -> dict[str, CodeEntry]:
    """Every entry of the table by code."""
    return {
        code: CodeEntry(code, e["slug"], e["command"], e["layer"], e["severity"], e["doc"], e["summary"], e["text"])
        for code, e in _table().items()
        if isinstance(e, dict) and "slug" in e
    }


def code_entry(code: str) -> CodeEntry | None:
    """The entry of ``code`` (case-insensitive) or of its slug."""
    entries = code_entries()
    found = entries.get(code.upper())
    return found or next((e for e in entries.values() if e.slug == code), None)


def check_codes() -> frozenset[str]:
    """The codes `graphlint check` prints besides its rules' (GL000)."""
    return frozenset(code for code, entry in code_entries().items() if entry.command == "check")


def rule_summary_zh(code: str) -> str | None:
    return _table().get("rules", {}).get("zh", {}).get(code)


def graph_break_settings() -> dict[str, str]:
    """``registry`` (its path inside the torch package) and ``site`` (a page per code)."""
    return dict(_table()["graph-breaks"])


def doc_url(page: str) -> str:
    """The published address of ``docs/PAGE.md#anchor`` for this version of graphlint."""
    from graphlint import __version__

    return str(_table()["docs-base"]).format(version=__version__) + page
