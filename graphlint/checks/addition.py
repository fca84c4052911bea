"""Whether an edited file's facts are the kept solve's with facts added, and the solver's tables
computed from the files brought up to date (``incremental_solve.py``)."""

from __future__ import annotations

import json
from collections.abc import Callable
from functools import cached_property
from typing import Any

from graphlint.checks.facts import FileFacts
from graphlint.checks.file_tables import per_file
from graphlint.checks.receiver_copies import Scoped
from graphlint.checks.renumber import in_numbering, inserted
from graphlint.checks.value_graph import LinkedModule
from graphlint.checks.valueflow import Solver


def edited_file(old: list[LinkedModule], new: list[LinkedModule]) -> int | None | str:
    """The one file whose solver-read facts differ (None: none does), or why there is no such one."""
    if len(old) != len(new):
        return "files added or removed"
    edited = None
    for index, (before, after) in enumerate(zip(old, new)):
        if before.facts is after.facts and before.module == after.module and before.is_package == after.is_package:
            continue
        if solver_view(before) != solver_view(after):
            if edited is not None:
                return "more than one file changed"
            edited = index
    return edited


def adds_to(before: list[LinkedModule], after: list[LinkedModule]) -> bool:
    """Whether ``after`` is ``before`` with facts added to one file, at its end or above other
    calls (``renumber.py``), as far as the facts tell (the extension checks the rest)."""
    edit = edited_file(before, after)
    if not isinstance(edit, int):
        return False
    old, new = before[edit].facts, after[edit].facts
    calls = len(old.flow.calls)
    numbering = inserted(old, new, list(range(calls)), calls)
    facts = None if numbering is None else in_numbering(new, numbering, old.flow.assigns)
    return facts is not None and not_appended(old, facts) is None


def solver_view(linked: LinkedModule) -> list[Any]:
    facts = linked.facts
    return [linked.module, linked.is_package, facts.flow.digest or facts.flow.solver_digest(), sorted(facts.host_calls),
            [(e.targets, e.line, e.via) for e in facts.entries]]


def not_appended(old: FileFacts, new: FileFacts) -> str | None:
    """Why ``new`` is not ``old`` with assignments and calls appended (None: it is)."""
    a, b = old.flow, new.flow
    if a.error or b.error:
        return "the file's calls could not be numbered"
    # as JSON values: facts read from the cache hold tuples where a fresh walk may hold lists
    parts_a, parts_b = json.loads(json.dumps(a.solver_parts())), json.loads(json.dumps(b.solver_parts()))
    calls_a, calls_b = parts_a.pop("calls"), parts_b.pop("calls")
    assigns_a, assigns_b = parts_a.pop("assigns"), parts_b.pop("assigns")
    changed = [name for name in parts_a if parts_a[name] != parts_b[name]]
    if changed:
        return f"not an addition: {', '.join(changed)} changed"
    if calls_b[: len(calls_a)] != calls_a or assigns_b[: len(assigns_a)] != assigns_a:
        return "not an addition: calls or assignments changed or renumbered"
    if {o for o in new.host_calls if o < len(calls_a)} != set(old.host_calls):
        return "not an addition: host calls changed"
    if [(e.targets, e.line, e.via) for e in old.entries] != [(e.targets, e.line, e.via) for e in new.entries]:
        return "not an addition: entry points changed"
    return None


def in_a_copy(solver: Solver, file: int, scoped: dict[str, Scoped]) -> bool:
    """Whether an added fact is in a function with copies (``receiver_copies.py``; a method's
    copy holds the functions nested in it): a full solve binds it in every copy too, the
    continuation only in the function's own body."""
    before = solver.scoped(file)
    return copied(solver, file, [scope for scope, found in scoped.items() if found != before.get(scope)])


def copied(solver: Solver, file: int, scopes: list[str]) -> bool:
    """Whether one of ``scopes`` (qualnames of ``file``) is a method with copies or in one."""
    if not scopes:
        return False
    methods = {copy.qualname for (owner, _), copy in solver.copies.items() if owner == file}
    return any(scope in methods or any(scope.startswith(f"{name}.") for name in methods) for scope in scopes)


def solver_text(facts: FileFacts) -> str:
    return json.dumps(list(facts.flow.solver_parts().values()))


def tables_again(solver: Solver, file: int, fresh: Callable[[Any], bool], either_way: bool = False) -> str | None:
    """Every table the solver computed from the files, computed again from the new facts: a
    table per file (``file_tables.per_file``) in the edited file's row alone, another whole.
    Only the edited file's row may differ, and only by fresh elements added (``either_way``:
    or removed)."""
    tables = {
        name: value for klass in reversed(type(solver).__mro__) for name, value in vars(klass).items()
        if isinstance(value, cached_property) and name in solver.__dict__
    }
    # the rows first: a whole table may be made of them (``wrap_order.py``)
    for name, table in sorted(tables.items(), key=lambda item: not isinstance(item[1], per_file)):
        if isinstance(table, per_file):
            rows = solver.__dict__[name]
            old, new = rows[file], table.row(solver, file)
            rows[file] = new
        else:
            old = solver.__dict__.pop(name)
            new = getattr(solver, name)
        if old == new:
            continue
        if not (isinstance(old, set) and isinstance(new, set) and (either_way or old <= new) and all(map(fresh, old ^ new))):
            return f"the solver's table {name} changed"
    return None
