"""Writers for check results: the JSON object is the data; text, SARIF and GitHub render it."""

from __future__ import annotations

from collections.abc import Callable
from typing import TextIO

from graphlint.checks.engine import CheckResult

Writer = Callable[[CheckResult, TextIO], None]


def writer(name: str, color: str = "auto", lang: str = "en") -> Writer:
    """The writer of ``--format name``; ``color`` (``--color``) and ``lang`` shape the text."""
    from functools import partial

    from graphlint.checks.report import github, json_report, sarif, text

    if name == "text":
        return partial(text.write, color=color, lang=lang)
    return {"json": json_report.write, "sarif": sarif.write, "github": github.write}[name]


FORMATS = ("text", "json", "sarif", "github")
