"""Changed arguments of calls outside the project, taken back and given anew in the kept solve.

An edit that changes what a call on a line the last full solve saw is handed is not an addition
(``incremental_solve.py``); ``rederive.py`` takes back changed assignments, and calls with them:
a local bound once is read as its value wherever it is used (``local_bindings.py``), so that
``x = y`` changed to ``x = z`` changes the calls that read ``x`` too. A call's arguments reach
the rest of the graph two ways: the watcher the call hangs on its callee binds them to the
parameters of each project function, class or instance the callee holds (edges that other calls
may make too, and whose values the callee's body reacts to: taking them back exactly needs to
know which reaction made which edge, which the solver does not note), and an outside call reads
their values at the fixed point (``CallSemantics.call``: ``outside_arguments``), where what they
hold of the project's functions, classes and instances decides the defaults those get and what
the answer says out of sight calls them (``parameter_defaults.py``: ``unseen``).

Here the exact subset where the arguments reach nothing but outside calls' reading, and the
values read there decide nothing: every object the changed call's callee holds is outside the
project and does no more with its arguments than hand them out (no pass-through, no call of
them, no ``functools.partial``: ``apis.py``), and every argument, before the edit and after,
holds no function, bound method, class or instance of the project (``hands_out_nothing``).
Then no node's values, no edge and no decision at the fixed point depend on the arguments, and
the kept solve with the site's arguments replaced (in place: the site's watcher and the outside
calls hold the same ``CallArgs``) is the full solve of the edited project, answer included.
A rebound argument (``x = f(x)``: what ``x`` held before, ``wrap_order.py``) is handed through
a node of its own that only the call reads: made as the full solve makes it, taken back with
its watcher (``Solver.rebound``). A call in a method with copies (``receiver_copies.py``: per
receiver class, call site or class of a parameter) is one site per copy, each with arguments
compiled in the copy (a rebound one's own node leaves out what the copy's receiver class wraps
later, ``wrap_order.py``): each is taken back so, and only where each qualifies. Refused too:
a call with ``*xs`` or ``**kw`` (forwarded element by element), an entry point's call (its
argument is what is compiled), a changed argument that is not a variable or a call's result (a
constant, attribute or union read only there would leave a node with values a full solve
lacks; one the solve lacks would make a node), a change of anything but arguments. A call whose callee may be the project's, or reads its arguments, is no such call: its
arguments are marked (``Replaced.project``) for ``project_calls.py``, which swaps them where the
edit moves no value (refused here still: a rebound argument's own node for it).
An argument the edit left as it is keeps its node, whatever its kind
(``self.eps`` beside a changed ``x``): a full solve of the new text compiles it to the same
node, or (a union) to one of its own that reads the same nodes.
"""

from __future__ import annotations

import json
from collections.abc import Callable, Iterable, Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from typing import Any

from graphlint.checks import apis
from graphlint.checks.facts import CallSite, FileFacts
from graphlint.checks.receiver_copies import MethodCopy
from graphlint.checks.value_graph import OUTSIDE_ANY, CallArgs, Obj, delivered
from graphlint.checks.valueflow import Solver

# The argument kinds whose nodes a solve has whatever reads them: a variable (one only read holds
# nothing), a call's result, a decorated or iterated value
_ARGUMENT_KINDS = ("v", "c", "r", "it")
# What outside calls do with their arguments beyond handing them out
_READS_ARGUMENTS = apis.PASS_THROUGH_CALLS | apis.CALLS_ITS_ARGUMENTS | apis.PARTIAL_FUNCTIONS


class NodeMade(Exception):
    """Compiling an expression would make a node the solve lacks."""


@contextmanager
def no_new_nodes(solver: Solver, file: int) -> Iterator[None]:
    """``solver.compile`` in ``file`` gives only nodes the solve has (``NodeMade`` where it would
    make one, before any table changes: each ``compile`` makes a node before it keeps it), but
    for a variable of one of the file's functions (``own_variable``) the solve has no node for:
    that one is made, as a full solve of the edited text makes it when it reads it. It holds
    nothing there unless the edit assigns it (then ``rederive.py`` derives it as a changed
    variable): only the function's assignments give such a variable values, and
    ``Solver.assign`` makes its node for each whose value compiles to a node, so none of the
    kept solve's did."""
    defs = solver.files[file].facts.flow.defs

    def made() -> int:
        raise NodeMade

    def variable(at: int, key: str) -> int:
        if at == file and (at, key) not in solver.variables and own_variable(defs, key):
            del solver.node
            try:
                return Solver.variable(solver, at, key)
            finally:
                solver.node = made  # type: ignore[method-assign]
        return Solver.variable(solver, at, key)

    solver.node, solver.variable = made, variable  # type: ignore[method-assign]
    try:
        yield
    finally:
        del solver.node, solver.variable


def own_variable(defs: dict[str, Any], name: str) -> bool:
    """Whether ``name`` is a variable of a function: not a parameter, not in a class body."""
    scope, _, variable = name.rpartition(".")
    definition = defs.get(scope)
    return definition is not None and definition.kind != "class" and all(variable != p for p, _ in definition.params)


SiteKey = tuple[Any, ...]  # (file, ordinal), or (file, ordinal, context) in a method's copy


@dataclass(frozen=True)
class Replaced:
    """A changed call's arguments where one copy of it holds them: the call after the edit, the
    copy (None: the function's own body) and the argument nodes before ``before_rebinding``."""

    site: CallSite
    copy: MethodCopy | None
    args: CallArgs
    project: bool = False  # its callee may be the project's: the arguments are swapped (``project_calls.py``)


def copies_of_calls(solver: Solver, file: int) -> dict[int, list[MethodCopy]]:
    """Per ordinal of a call of ``file`` in a method with copies (``receiver_copies.py``: per
    receiver class, per call site, per class of a parameter), the copies that bind it (one pass
    over the solver's copies: tens of thousands on ``models/``)."""
    found: dict[int, list[MethodCopy]] = {}
    for (owner, _), copy in solver.copies.items():
        if owner == file:
            for ordinal in copy.calls:
                found.setdefault(ordinal, []).append(copy)
    return found


def site_keys(file: int, ordinal: int, copies: dict[int, list[MethodCopy]]) -> list[tuple[SiteKey, MethodCopy | None]]:
    """The call's keys in the solver: the function's own body's and each copy's that binds it
    (``copies``: ``copies_of_calls`` of the file)."""
    return [((file, ordinal), None), *(((file, ordinal, copy.context), copy) for copy in copies.get(ordinal, ()))]


def changed_arguments(solver: Solver, file: int, old: FileFacts, new: FileFacts) -> dict[SiteKey, Replaced] | str:
    """Per key of a call of ``file`` whose arguments the edit changed (in each copy of it), the
    call after it and the nodes of its arguments, or why the edit changes its calls otherwise or
    past what this takes back (module docstring; the values handed out are checked by the
    caller, who knows what the edit re-derives)."""
    if len(old.flow.calls) != len(new.flow.calls):
        return "calls added or removed"
    entries = entry_ordinals(new)
    copies = copies_of_calls(solver, file)
    changed: dict[SiteKey, Replaced] = {}
    for ordinal, (before, after) in enumerate(zip(old.flow.calls, new.flow.calls)):
        if _key(before) == _key(after):
            continue
        if before is None or after is None or json.dumps(_shape(before)) != json.dumps(_shape(after)):
            return "a call's callee, scope or form changed"
        if before.star or before.double_star or after.star or after.double_star:
            return "a changed call hands on *xs or **kw"
        if ordinal in entries:
            return "a changed call is an entry point's"
        slots = [(a, b) for a, b in zip(_argument_exprs(before), _argument_exprs(after)) if json.dumps(a) != json.dumps(b)]
        if not all(_plain(expr) for slot in slots for expr in slot):
            return "a changed call's argument is not a variable or a call's result"
        for key, copy in site_keys(file, ordinal, copies):
            if key not in solver.site_args:
                return "a changed call is not bound in a copy of its function"
            project = not only_hands_out(solver, key)
            receiver_class = copy.receiver_class if copy is not None else None
            if project and (
                any(node in solver.rebound for node in solver.site_args[key].nodes())
                or (after.rebinds and solver.rebinding_made(file, after, receiver_class))
            ):
                return "a changed call of project code hands a rebound argument"
            try:
                with no_new_nodes(solver, file):
                    changed[key] = Replaced(after, copy, _arguments_after(solver, file, key, copy, before, after), project)
            except NodeMade:
                return "a changed call's argument is a node the solve lacks"
    return changed


def _arguments_after(solver: Solver, file: int, key: SiteKey, copy: MethodCopy | None, before: CallSite, after: CallSite) -> CallArgs:
    """The arguments of ``after`` as nodes (in ``copy``: its own), before ``before_rebinding``:
    one the edit left as it was keeps the node the kept site holds (the node a full solve
    compiles it to: an attribute's load and a constant are one node per expression, a union's
    node is made for this argument alone and reads the same nodes), a changed one is compiled
    (raising ``NodeMade`` where that would make a node)."""
    kept = solver.site_args[key]
    read = (lambda expr: expr) if copy is None else copy.expr

    def node(old: int | None, was: Any, expr: Any) -> int | None:
        if json.dumps(was) != json.dumps(expr):
            return solver.compile(file, read(expr))
        return solver.rebound[old][0] if old in solver.rebound else old  # (a rebound one's own node reads it)

    return CallArgs(
        [node(old, was, expr) for old, was, expr in zip(kept.positional, before.args, after.args)],
        keywords=[(name, node(old, was, expr)) for (name, old), (_, was), (_, expr) in zip(kept.keywords, before.keywords, after.keywords)],
    )


def only_hands_out(solver: Solver, key: tuple[int, int]) -> bool:
    """Whether every object the callee of site ``key`` holds is outside the project and only
    hands its arguments out (``CallSemantics.call``), or the call has no callee."""
    node = solver.callee_nodes.get(key)
    return node is None or all(_hands_out(solver, key, obj) for obj in solver.values[node])


def _hands_out(solver: Solver, key: tuple[int, int], obj: Obj) -> bool:
    if obj == OUTSIDE_ANY or obj[0] == "H":
        return True
    if obj[0] != "X":
        return False
    return not obj[1] or key[1] in solver.host_calls[key[0]] or obj[1] not in _READS_ARGUMENTS


def hands_out_nothing(values: Iterable[Obj]) -> bool:
    """Whether values handed to outside calls decide nothing (``parameter_defaults.py``: only the
    project's functions, bound methods, classes and instances get defaults and are out of sight)."""
    return all(obj[0] not in ("F", "B", "C", "I") for obj in values)


def replace_arguments(solver: Solver, file: int, changed: dict[SiteKey, Replaced]) -> int:
    """The changed sites' arguments replaced where the solver holds them: in the ``CallArgs`` each
    key of the site keeps, which its callee's watcher and the outside calls it made hold too; a
    rebound argument through a node of its own, as ``call_site`` makes it (in a copy, for the
    copy's receiver class), and the node of one before the edit no more watching what it read
    (left unread: no table names it). By how much the work bound (``incremental_solve.py``)
    grew: each such node's values, and its source's, once more for its watcher."""
    existing = len(solver.values)
    work = 0
    for key, replaced in changed.items():
        for node in solver.site_args[key].nodes():
            if node in solver.rebound:  # its own node: nothing reads it but this call
                source, react = solver.rebound.pop(node)
                solver.watchers[source].remove(react)
                solver.collapsed -= OUTSIDE_ANY in solver.values[node]  # (a full solve lacks it)
        site, args, copy = replaced.site, replaced.args, replaced.copy
        receiver_class = copy.receiver_class if copy is not None else None
        rebound = solver.before_rebinding(file, site, args, receiver_class) if site.rebinds else args
        for node, source in zip(rebound.nodes(), args.nodes()):
            if node >= existing:
                work += delivered(solver.values[source])
        kept = solver.site_args[key]
        kept.positional[:], kept.keywords[:] = rebound.positional, rebound.keywords
    solver.propagate()  # (the new nodes' values: no node reads them but these calls)
    return work + sum(delivered(solver.values[node]) for node in range(existing, len(solver.values)))


def entry_ordinals(facts: FileFacts) -> set[int]:
    """The calls whose argument or receiver an entry point reads (``ImplicitCalls.entry``)."""
    return {target[1] for entry in facts.entries for target in entry.targets if target[0] in ("arg", "receiver")}


def _key(site: CallSite | None) -> str:
    """The call as the solve reads it, as JSON (facts from the cache hold tuples where a walk
    holds lists)."""
    return json.dumps(None if site is None else [*_shape(site), site.args, site.keywords, site.rebinds])


def _shape(site: CallSite) -> list[Any]:
    """What the solve reads of a call but its arguments' values (keywords by name) and which of
    them are rebound."""
    return [site.scope, site.callee, len(site.args), [name for name, _ in site.keywords], site.star, site.star_last,
            site.double_star, site.after_super]


def _argument_exprs(site: CallSite) -> list[Any]:
    return [*site.args, *(value for _, value in site.keywords)]


def _plain(expr: Any) -> bool:
    return expr is None or expr[0] in _ARGUMENT_KINDS

