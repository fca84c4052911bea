"""``[tool.graphlint]`` in ``pyproject.toml``: what the project tells the static checker.

    [tool.graphlint]
    select = ["GL1", "GL2"]              # code prefixes to report (default: all)
    ignore = ["GL302"]                   # code prefixes not to report
    exclude = ["build", "legacy/*.py"]   # paths (globs, relative to the project root) to skip
    per-file-ignores = {"tests/*" = ["GL2"]}
    compile-entrypoints = ["vllm.compilation.decorators.support_torch_compile"]
    capture-entrypoints = ["mylib.graphs.capture"]

Keys may be spelled with ``-`` or ``_``. The project root is the nearest directory with a
``pyproject.toml`` or a ``.git``.
"""

from __future__ import annotations

import sys
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

if sys.version_info >= (3, 11):
    import tomllib
else:  # pragma: no cover - Python 3.10
    import tomli as tomllib


class ConfigError(ValueError):
    """``[tool.graphlint]`` is malformed (a usage error: exit status 2)."""


@dataclass(frozen=True)
class Config:
    select: tuple[str, ...] = ()
    ignore: tuple[str, ...] = ()
    exclude: tuple[str, ...] = ()
    per_file_ignores: dict[str, tuple[str, ...]] = field(default_factory=dict)
    compile_entrypoints: tuple[str, ...] = ()
    capture_entrypoints: tuple[str, ...] = ()


_LIST_KEYS = ("select", "ignore", "exclude", "compile-entrypoints", "capture-entrypoints")


def find_project_root(start: Path) -> Path:
    """The nearest directory at or above ``start`` with a ``pyproject.toml`` or ``.git``."""
    start = start.resolve()
    directory = start if start.is_dir() else start.parent
    for candidate in (directory, *directory.parents):
        if (candidate / "pyproject.toml").is_file() or (candidate / ".git").exists():
            return candidate
    return directory


def load_config(root: Path) -> Config:
    """The ``[tool.graphlint]`` table of ``root/pyproject.toml`` (defaults when absent)."""
    pyproject = root / "pyproject.toml"
    if not pyproject.is_file():
        return Config()
    try:
        data = tomllib.loads(pyproject.read_text(encoding="utf-8"))
    except (tomllib.TOMLDecodeError, UnicodeDecodeError) as exc:
        raise ConfigError(f"{pyproject}: {exc}") from exc
    table = data.get("tool", {}).get("graphlint", {})
    return parse_config(table, source=str(pyproject))


def parse_config(table: dict[str, Any], source: str = "[tool.graphlint]") -> Config:
    table = {key.replace("_", "-"): value for key, value in table.items()}
    known = {*_LIST_KEYS, "per-file-ignores"}
    unknown = sorted(set(table) - known)
    if unknown:
        raise ConfigError(f"{source}: unknown [tool.graphlint] keys {unknown}; known: {sorted(known)}")
    values: dict[str, Any] = {}
    for key in _LIST_KEYS:
        values[key.replace("-", "_")] = _strings(table.get(key, []), key, source)
    per_file = table.get("per-file-ignores", {})
    if not isinstance(per_file, dict):
        raise ConfigError(f"{source}: per-file-ignores must be a table of glob = [codes]")
    values["per_file_ignores"] = {
        glob: _strings(codes, f"per-file-ignores.{glob}", source) for glob, codes in per_file.items()
    }
    return Config(**values)


def _strings(value: Any, key: str, source: str) -> tuple[str, ...]:
    if not isinstance(value, list) or not all(isinstance(v, str) for v in value):
        raise ConfigError(f"{source}: {key} must be a list of strings")
    return tuple(value)
