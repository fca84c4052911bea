"""What dynamo does with the Python the rules meet, read from ``dynamo.toml`` (the data) once.

The table is knowledge about torch, kept beside the code that reads it so that adding a construct
is adding an entry; see the file's header for how each entry was verified.
"""

from __future__ import annotations

from functools import cache
from pathlib import Path
from typing import Any

from graphlint.tomlfile import read_toml


TABLE = Path(__file__).with_name("dynamo.toml")


@cache
def table() -> dict[str, Any]:
    return read_toml(TABLE)


def load() -> None:
    """Read the table and build its indexes now: before a pool of workers forks, which would
    each read it again at their first file."""
    for index in (_checks, _untraceable, _logging_functions, _value_checks, reductions, reduction_functions):
        index()


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


# ---- what dynamo cannot trace ------------------------------------------------------------------
@cache
def _untraceable() -> tuple[dict[str, dict[str, Any]], dict[str, dict[str, Any]]]:
    """(function name → entry, constructor name → entry)."""
    by_name: dict[str, dict[str, Any]] = {}
    by_maker: dict[str, dict[str, Any]] = {}
    for entry in table()["untraceable"]:
        by_name.update((name, entry) for name in entry.get("names", ()))
        by_maker.update((name, entry) for name in entry.get("made_by", ()))
    return by_name, by_maker


def untraceable_call(name: str | None) -> dict[str, Any] | None:
    """The table's entry for calling ``name`` (``time.time``, ``copy.deepcopy``), if it breaks."""
    return _untraceable()[0].get(name) if name else None


def untraceable_method(maker: str | None, method: str) -> dict[str, Any] | None:
    """The entry for ``obj.method()`` where ``obj`` was made by calling ``maker``."""
    entry = _untraceable()[1].get(maker) if maker else None
    return entry if entry is not None and method in entry.get("methods", ()) else None


def untraceable_object_call(maker: str | None) -> dict[str, Any] | None:
    """The entry for calling ``obj(...)`` itself where ``obj`` was made by calling ``maker``."""
    entry = _untraceable()[1].get(maker) if maker else None
    return entry if entry is not None and entry.get("called") else None


def untraceable_enter(called: str | None, maker: str | None) -> dict[str, Any] | None:
    """The entry for ``with called(...):`` or ``with obj:`` where ``maker`` made ``obj``."""
    by_name, by_maker = _untraceable()
    for entry in (by_name.get(called) if called else None, by_maker.get(maker) if maker else None,
                  by_maker.get(called) if called else None):
        if entry is not None and entry.get("enter"):
            return entry
    return None


# ---- logging, warnings, print -------------------------------------------------------------------
def logging_table() -> dict[str, Any]:
    return table()["logging"]


@cache
def _logging_functions() -> dict[str, tuple[str, ...]]:
    found = {name: tuple(entry["gb"]) for entry in logging_table()["function"] for name in entry["names"]}
    found.update((name, tuple(logging_table()["module_gb"])) for name in logging_table()["module_functions"])
    return found


def logging_function(name: str | None) -> tuple[str, ...] | None:
    """The GB codes of calling ``name`` (``warnings.warn``, ``print``, ``logging.info``)."""
    return _logging_functions().get(name) if name else None


def is_logger_factory(name: str | None) -> bool:
    if name is None:
        return False
    table_ = logging_table()
    return name in table_["factories"] or name.rsplit(".", 1)[-1] in table_["factory_bare"]


# ---- tensor values read back to Python ----------------------------------------------------------
def value_read() -> dict[str, Any]:
    return table()["value_read"]


@cache
def _value_checks() -> tuple[dict[str, dict[str, Any]], dict[str, dict[str, Any]]]:
    by_name: dict[str, dict[str, Any]] = {}
    by_bare: dict[str, dict[str, Any]] = {}
    for entry in value_read()["check"]:
        by_name.update((name, entry) for name in entry["names"])
        by_bare.update((name, entry) for name in entry.get("bare", ()))
    return by_name, by_bare


def value_check(name: str | None) -> dict[str, Any] | None:
    """The entry of a check helper that reads its condition (``torch._check_tensor_all``)."""
    if name is None:
        return None
    by_name, by_bare = _value_checks()
    if name in by_name:
        return by_name[name]
    return by_bare.get(name.rsplit(".", 1)[-1])


@cache
def reductions() -> frozenset[str]:
    return frozenset(value_read()["reductions"])


@cache
def reduction_functions() -> frozenset[str]:
    return frozenset(value_read()["reduction_functions"])
