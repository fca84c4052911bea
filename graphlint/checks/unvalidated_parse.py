"""libcst's parse without its per-node validation, for the walk that only reads the tree.

A monkeypatch, kept alone here: ``cst.CSTNode.__post_init__`` is swapped for the length of one
parse. The checker parses in one thread per process (a pool's workers, the server's loop), so
nothing else builds nodes meanwhile.
"""

from __future__ import annotations

import libcst as cst


def parse_unvalidated(text: str) -> cst.Module:
    """``cst.parse_module`` without the check every node's constructor runs on its fields
    (``CSTNode.__post_init__`` → ``_validate``): the parser makes only nodes that pass it, and
    checking them again is a tenth to a fifth of the parse. libcst says as much where it
    validates ("It might make more sense to move validation work into the visitor, which would
    allow us to avoid validating the tree when parsing a file"). The checker only reads the
    tree; a fix builds its nodes with validation as always (``fix.py`` parses for itself)."""
    validate = cst.CSTNode.__post_init__
    cst.CSTNode.__post_init__ = _trusted  # type: ignore[method-assign]
    try:
        return cst.parse_module(text)
    finally:
        cst.CSTNode.__post_init__ = validate  # type: ignore[method-assign]


def _trusted(self: cst.CSTNode) -> None:
    """A parsed node's ``__post_init__``: nothing to check."""
