"""What a parameter is known to hold on every call of a function (in one copy of it): constants
carried through the call graph, and the compile entry points they switch off.

vLLM builds its custom ops with ``compile_native=False`` (the default of ``CustomOp.__init__``,
left in place by ``RMSNorm.__init__``'s ``super().__init__()``), hands it on as
``self.dispatch_forward(compile_native=compile_native)`` and then as
``self.maybe_compile(self.forward_native, enable=compile_native)``, where ``if not enable: return
fn`` comes before the ``torch.compile(fn)``. An edge alone knows nothing there (what it hands is a
parameter, not a literal); here a parameter of a function's copy is known when *every* call of
that copy hands the same known value: a literal, a display, a default left in place, or a
parameter of the caller (nothing in the caller rebinds it) known the same way, two or more calls
up. Copies matter: ``maybe_compile`` in its copy for ``RMSNorm`` is called only by
``dispatch_forward``'s copy for ``RMSNorm``.

Sound where the calls are all in sight, and only there: nothing is known of a function that
something out of sight may call (``CallGraph.unseen``: an entry point's framework, a decorator,
an outside call it was handed to, a registry that builds its class, a saturated value set), of
one no call reaches, through a call that does not name it (a ``partial``, an alias), or after the
value flow stopped at its budget. A cycle knows nothing either. Used for entry points inside a
method's copies: a copy whose compile call cannot run (its ``if`` tests, per
``call_conditions.py``, false for the known values) starts no region, and its targets are not a
nested compile (``GL101``).
"""

from __future__ import annotations

from functools import cached_property
from typing import TYPE_CHECKING, Any

from graphlint.checks.condition_atoms import atoms
from graphlint.checks.edge_conditions import Edge, Known, handed_over, value
from graphlint.checks.facts import Expr
from graphlint.checks.not_none import NeverNone
from graphlint.checks.value_graph import FunctionKey

if TYPE_CHECKING:
    from graphlint.checks.link import Project

MAX_DEPTH = 8  # calls up a chain of parameters handed on; further up, nothing is known
Caller = tuple[int, int, str]  # (file, call ordinal, the copy of the calling function)


def live_entry_starts(project: Project, file: int, entry: int) -> list[tuple[FunctionKey, str]]:
    """``Project.entry_starts`` without the targets of the copies whose compile call cannot run."""
    live = _live_copies(project, file, entry)
    if live is None:
        return project.entry_starts(file, entry)
    found: dict[tuple[FunctionKey, str], None] = {}
    for copy in live:
        for (target, target_copy), kind in project.graph.copies[("entry", file, entry, copy)].items():
            if isinstance(target, FunctionKey) and kind == "call":
                found[target, target_copy] = None
    return list(found)


def live_entry_functions(project: Project, file: int, entry: int) -> list[FunctionKey]:
    """``Project.entry_functions`` without the targets of the copies whose compile call cannot run."""
    if _live_copies(project, file, entry) is None:
        return project.entry_functions(file, entry)
    return list(dict.fromkeys(key for key, _ in live_entry_starts(project, file, entry)))


def constants_of(project: Project) -> ParameterConstants:
    """The project's ``ParameterConstants``, made once."""
    if project.constants is None:
        by_entry: dict[tuple[int, int], list[str]] = {}
        for key in project.graph.copies:
            if key[0] == "entry" and len(key) == 4:
                by_entry.setdefault((key[1], key[2]), []).append(key[3])
        project.constants = ParameterConstants(project, by_entry)
    constants: ParameterConstants = project.constants
    return constants


def edge_given(project: Project, edge: Edge, callee: FunctionKey, caller_copy: str) -> dict[str, Known]:
    """What the call at ``edge``, made in ``caller_copy`` of its function, hands ``callee``'s
    parameters: by the arguments' form, a parameter known through every call of that copy, a
    value never None (``edge_conditions.runs``)."""
    return constants_of(project).handed(edge, callee, caller_copy)


def _live_copies(project: Project, file: int, entry: int) -> list[str] | None:
    """The copies (of the method it is in) where entry ``entry`` can run; None: every copy (or
    the entry is in no method's copies)."""
    constants = constants_of(project)
    copies = constants.entry_copies.get((file, entry))
    if not copies:
        return None
    live = [copy for copy in copies if constants.entry_runs(file, entry, copy)]
    return None if len(live) == len(copies) else live


class ParameterConstants:
    def __init__(self, project: Project, entry_copies: dict[tuple[int, int], list[str]]) -> None:
        self.project = project
        self.entry_copies = entry_copies  # (file, entry) → the copies its site was bound in
        self._known: dict[tuple[FunctionKey, str, str], Known | None] = {}
        self.never_none = NeverNone(project, self)
        self._handed: dict[tuple[Edge, FunctionKey, str], dict[str, Known]] = {}

    def handed(self, edge: Edge, callee: FunctionKey, caller_copy: str) -> dict[str, Known]:
        """``edge_given``, each edge worked out once (the regions walk asks for every call under
        an ``if`` in the callee, in every region)."""
        key = (edge, callee, caller_copy)
        found = self._handed.get(key)
        if found is None:
            site = self.project.files[edge[0]].facts.flow.calls[edge[1]]
            scope = FunctionKey(edge[0], site.scope if site is not None else "")
            resolve = lambda expr, needs: self.argument(scope, caller_copy, expr, needs)  # noqa: E731
            found = self._handed[key] = handed_over(self.project, edge, callee, resolve)
        return found

    def entry_runs(self, file: int, index: int, copy: str) -> bool:
        """Whether entry ``index`` of ``file``, in ``copy`` of the function it is in, can run:
        False only where every call of that copy hands values that make a test around its
        compile call false."""
        flow = self.project.files[file].facts.flow
        entry = self.project.files[file].facts.entries[index]
        ordinals = [target[1] for target in entry.targets if target[0] in ("arg", "receiver")]
        if not ordinals or len(ordinals) != len(entry.targets):
            return True
        for ordinal in ordinals:
            conditions = flow.call_conditions.get(ordinal)
            site = flow.calls[ordinal]
            if not conditions or site is None:
                return True
            function = FunctionKey(file, site.scope)
            given = {p: known for p in atoms(conditions) if (known := self.known(function, copy, p)) is not None}
            if all(value(tree, given) is not (not holds) for tree, holds in conditions):
                return True
        return False

    def known(self, function: FunctionKey, copy: str, parameter: str, depth: int = 0) -> Known | None:
        """``[is None, truth]`` of what ``parameter`` holds on every call of ``function``'s
        ``copy`` (either None where the calls disagree or do not say), or None."""
        key = (function, copy, parameter)
        if key in self._known:
            return self._known[key]
        self._known[key] = None  # a cycle, or a chain too long, knows nothing
        found = None if depth > MAX_DEPTH else self._every_call(function, copy, parameter, depth)
        self._known[key] = found
        return found

    def _every_call(self, function: FunctionKey, copy: str, parameter: str, depth: int) -> Known | None:
        graph = self.project.graph
        unseen = {(function.file, function.qualname, copy), (function.file, function.qualname, "*")}
        if graph.stopped is not None or unseen & graph.unseen:
            return None
        callers = self._callers.get((function, copy))
        if not callers:
            return None
        joined: Known | None = None
        for file, ordinal, caller_copy in callers:
            site = self.project.files[file].facts.flow.calls[ordinal]
            if site is None:
                return None
            scope = FunctionKey(file, site.scope)
            resolve = lambda expr, needs: self.argument(scope, caller_copy, expr, needs, depth)  # noqa: E731
            given = handed_over(self.project, (file, ordinal), function, resolve, copy).get(parameter)
            if given is None:
                return None
            joined = given if joined is None else [a if a == b else None for a, b in zip(joined, given)]
            if joined == [None, None]:
                return None
        return joined

    def argument(self, scope: FunctionKey, copy: str, expr: Expr | None, needs: list[Expr] | None, depth: int = 0) -> Known | None:
        """What an argument ``expr`` of a call in ``scope``'s ``copy`` is known to hold: a
        parameter known the same way, or never None (``needs``: ``not_none.py``)."""
        found = self.parameter(scope, copy, expr, depth)
        if found is None and needs and self.never_none.holds(scope.file, scope, copy, needs, depth):
            return [False, None]
        return found

    def parameter(self, scope: FunctionKey, copy: str, expr: Expr | None, depth: int) -> Known | None:
        """What ``expr``, a caller's own parameter nothing in it rebinds, is known to hold."""
        flow = self.project.files[scope.file].facts.flow
        definition = flow.defs.get(scope.qualname)
        if expr is None or expr[0] != "v" or definition is None or definition.kind != "function":
            return None
        name = expr[1][len(scope.qualname) + 1 :] if expr[1].startswith(f"{scope.qualname}.") else None
        if name is None or not any((name, kind) in definition.params for kind in ("o", "p", "k")):
            return None
        if expr[1] in self.rebound[scope.file]:
            return None
        return self.known(scope, copy, name, depth + 1)

    @cached_property
    def rebound(self) -> list[set[str]]:
        """Per file, the variables a statement binds (a parameter among them is not what the
        call handed over)."""
        return [
            {t[1] for t, v in linked.facts.flow.assigns if t[0] == "v" and v[0] not in ("n", "self")}
            for linked in self.project.files
        ]

    def callers(self, function: FunctionKey) -> list[Caller] | None:
        """Every call that runs ``function`` (in any copy); None where not all are in sight
        (``CallGraph.unseen``, a solve stopped at its budget) or none is."""
        if self.project.graph.stopped is not None or function in self._unseen_functions:
            return None
        return self._callers_of_function.get(function)

    @cached_property
    def _unseen_functions(self) -> set[FunctionKey]:
        return {FunctionKey(file, qualname) for file, qualname, _ in self.project.graph.unseen}

    @cached_property
    def _callers_of_function(self) -> dict[FunctionKey, list[Caller]]:
        found: dict[FunctionKey, list[Caller]] = {}
        for (function, _), callers in self._callers.items():
            found.setdefault(function, []).extend(callers)
        return found

    @cached_property
    def _callers(self) -> dict[tuple[FunctionKey, str], list[Caller]]:
        """(function, copy) → the calls that run it, each with the copy of the calling function."""
        graph = self.project.graph
        found: dict[tuple[FunctionKey, str], list[Caller]] = {}
        copied: set[tuple[Any, ...]] = set()
        for key, targets in graph.copies.items():
            if not isinstance(key[0], int):
                continue
            copied.add(key[:2])
            for (target, target_copy), _ in targets.items():
                if isinstance(target, FunctionKey):
                    found.setdefault((target, target_copy), []).append((key[0], key[1], key[2]))
        for site, targets in graph.callees.items():
            if site in copied or not isinstance(site[0], int):
                continue
            for target in targets:
                if isinstance(target, FunctionKey):
                    found.setdefault((target, ""), []).append((site[0], site[1], ""))
        return found
