"""Module-level branches the platform checked never runs: what they bind is not bound there.

sglang's rotary helpers bind one name per platform at import: ``if _is_npu: apply_rotary_pos_emb
= apply_rotary_pos_emb_npu``, ``else: apply_rotary_pos_emb = apply_rotary_pos_emb_native`` (a
compiled function). A module's top level runs once, at import, on the platform checked, so a
branch of a module-level ``if`` whose test the knowledge decides against every capture mode (the
decision ``unbound_names.py`` makes of the same blocks: ``_is_npu = is_npu()`` read through the
module's binding, ``[platforms.npu]`` of the preset) binds nothing: the assignment graph
(``assignments.py``) leaves out the module-level bindings it makes (assignments, imports, ``def``
and ``class`` names, attribute stores), so a call of the name runs the NPU's binding only, in
every region. What a ``def`` in such a branch does inside its own body, and the calls the branch
makes, are kept; so is every binding of a branch the knowledge does not decide.

The extractor's walk (libcst) decides the branches and numbers each ``if`` (``elif`` included) in
source order, as ``positions.py`` does; the ``ast`` walk finds its twin by that number. Where the
two trees do not count the same ``if``\\ s, nothing is left out.
"""

from __future__ import annotations

import ast

import libcst as cst

# A branch of an ``if``: "body", or "orelse" (an ``else`` block; an ``elif`` is an ``if`` of its own)
Branch = tuple[int, str]


def untaken_branches(ordinal: int, node: cst.If, taken: frozenset[str], modes: frozenset[str]) -> list[Branch]:
    """The branches of the module-level ``if`` numbered ``ordinal`` that run in none of ``modes``:
    its body where its test is true in none (``taken``), its ``else`` where it is true in all."""
    untaken = [] if taken else [(ordinal, "body")]
    if isinstance(node.orelse, cst.Else) and not modes - taken:
        untaken.append((ordinal, "orelse"))
    return untaken


def ast_branches(tree: ast.Module, branches: set[Branch], counted: int) -> frozenset[Branch]:
    """``branches`` (numbered ``if``\\ s of the libcst walk, which counted ``counted``) as
    ``(id(ast.If), part)``; none where the ``ast`` tree counts another number of ``if``\\ s."""
    if not branches:
        return frozenset()
    ifs = sorted(
        (node for node in ast.walk(tree) if isinstance(node, ast.If)),
        key=lambda n: (n.test.lineno, n.test.col_offset, -(n.test.end_lineno or 0), -(n.test.end_col_offset or 0)),
    )
    if len(ifs) != counted:
        return frozenset()
    return frozenset((id(ifs[ordinal]), part) for ordinal, part in branches)
