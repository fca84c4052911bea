"""Writers for check results: the JSON object is the data; text, SARIF and GitHub render it."""

from __future__ import annotations

import importlib
from collections.abc import Callable
from functools import partial
from typing import TextIO

from graphlint.checks.engine import CheckResult

Writer = Callable[[CheckResult, TextIO], None]


# Format → the module that writes it, imported only when chosen (text imports rich, sarif the
# rules and through them libcst: a run served from the cache pays for neither unless asked).
_MODULES = {"text": "text", "json": "json_report", "sarif": "sarif", "github": "github"}
FORMATS = tuple(_MODULES)


def writer(name: str, color: str = "auto", lang: str = "en") -> Writer:
    """The writer of ``--format name``; ``color`` (``--color``) and ``lang`` shape the text."""
    module = importlib.import_module(f"{__name__}.{_MODULES[name]}")
    if name == "text":
        return partial(module.write, color=color, lang=lang)
    return module.write  # type: ignore[no-any-return]
