"""Solver tables with one row per file: ``per_file``.

A table computed from every file's facts (the variables each file binds, its small functions)
is a list with one row per file, made on first use. ``graphlint server`` keeps a solver between
edits and extends it when one file only gained statements (``incremental_solve.py``): there,
only that file's row is computed again, by the same function that made it.
"""

from __future__ import annotations

from collections.abc import Callable
from functools import cached_property
from typing import Any


class per_file(cached_property):  # noqa: N801 (a decorator, named as cached_property is)
    """``@per_file`` on ``def table(self, file) -> Row``: ``self.table`` is ``[Row per file]``,
    computed once; ``type(self).table.row(self, file)`` computes one row again."""

    def __init__(self, row: Callable[[Any, int], Any]) -> None:
        super().__init__(lambda owner: [row(owner, file) for file in range(len(owner.files))])
        self.row = row
        self.__doc__ = row.__doc__
