"""The imports a module runs whenever it is imported: those written as statements of its top level.

An import under ``if`` (``TYPE_CHECKING``, a platform test), ``try`` (``except ImportError``),
``with`` or in a function may not run, so it is not one of them. What they name decides which
modules cannot be imported on a platform that lacks a package (``importable.py``).
"""

from __future__ import annotations

import libcst as cst

from graphlint.checks.syntax import dotted_name


def top_level_imports(module: cst.Module) -> list[str]:
    """The dotted names a module's top-level import statements import, as written ("." prefixes:
    relative): ``import a.b`` → ``a.b``; ``from a import b`` → ``a.b`` (``b`` may be a submodule
    of ``a``, or a name ``a`` defines: the reader takes the longest prefix that is a module);
    ``from a import *`` → ``a``."""
    names: list[str] = []
    for statement in module.body:
        if not isinstance(statement, cst.SimpleStatementLine):
            continue
        for small in statement.body:
            if isinstance(small, cst.Import):
                names += [name for alias in small.names if (name := dotted_name(alias.name)) is not None]
            elif isinstance(small, cst.ImportFrom):
                base = "." * len(small.relative) + ((dotted_name(small.module) or "") if small.module is not None else "")
                if isinstance(small.names, cst.ImportStar):
                    names.append(base)
                    continue
                joiner = "" if base.endswith(".") or not base else "."
                names += [f"{base}{joiner}{name}" for alias in small.names if (name := dotted_name(alias.name)) is not None]
    return names
