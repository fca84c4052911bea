"""The rule catalogue: one module per rule, named by its slug, found by walking this package."""

from __future__ import annotations

import importlib
import pkgutil
from functools import cache

from graphlint.checks.rules.base import Rule


@cache
def all_rules() -> tuple[Rule, ...]:
    """One instance of every rule, ordered by code."""
    found: list[Rule] = []
    for info in pkgutil.iter_modules(__path__):
        if info.name == "base":
            continue
        module = importlib.import_module(f"{__name__}.{info.name}")
        for value in vars(module).values():
            # A rule is a Rule subclass with its own code; shared bases (``_capture``) have none.
            if isinstance(value, type) and issubclass(value, Rule) and "code" in vars(value):
                if value.__module__ == module.__name__:
                    found.append(value())
    return tuple(sorted(found, key=lambda r: r.code))


def rule_by_code(code: str) -> Rule | None:
    for rule in all_rules():
        if rule.code == code.upper() or rule.slug == code:
            return rule
    return None
