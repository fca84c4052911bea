"""Which calls of a function an edge into it runs: the ``if``s on its parameters, per call.

``set_forward_context(None, config)`` leaves ``num_tokens`` at its default ``None`` and hands
``attn_metadata`` a ``None``: under ``if ... and (attn_metadata is not None or num_tokens is not
None):`` nothing runs for that call; ``maybe_compile(fn, enable=False)`` returns at ``if not
enable: return fn`` before its ``torch.compile``. The conditions are written down by the walk
(``call_conditions.py``); here a call of the callee is followed from an edge unless the edge's
arguments make one of its conditions false. Three-valued: what the edge hands over is known by
its form (a literal, a display, a lambda, or a default of that form the call leaves in place)
or, for the regions walk, through the caller's copy: a parameter every call of it hands the same
known value, a value never None (``parameter_constants.edge_given``, ``not_none.py``); anything
else (``*xs`` / ``**kw``, an entry point's framework call, what nothing decides) is unknown, and
unknown runs the call. Sound: a call is left out only where Python could not run it from that
edge.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from graphlint.checks import apis
from graphlint.checks.facts import CallSite, DefFacts, Expr
from graphlint.checks.link import Project
from graphlint.checks.value_graph import FunctionKey

Known = list[Any]  # [is None, truth], either None when not known
Edge = tuple[int, int]  # (file, call ordinal) of the call that enters the callee
# What an argument (its value expression, and what makes it never None: ``not_none.py``) holds
Resolve = Callable[[Expr | None, list[Expr] | None], Known | None]


def runs(
    project: Project, edge: Edge | None, callee: FunctionKey, ordinal: int, given: Callable[[], dict[str, Known]] | None = None
) -> bool:
    """Whether call ``ordinal`` of ``callee`` can run when ``callee`` is entered by ``edge``
    (None: by an entry point, with what the framework passes); ``given``: what the edge hands
    over, beyond the arguments' form too (``parameter_constants.edge_given``)."""
    conditions = project.files[callee.file].facts.flow.call_conditions.get(ordinal)
    if not conditions or edge is None:
        return True
    handed = given() if given is not None else handed_over(project, edge, callee)
    if not handed:
        return True
    return all(value(tree, handed) is not (not holds) for tree, holds in conditions)


def handed_over(
    project: Project,
    edge: Edge,
    callee: FunctionKey,
    resolve: Resolve | None = None,
    copy: str = "",
) -> dict[str, Known]:
    """What the call at ``edge`` hands ``callee``'s parameters, where its form says (or, for an
    argument of another form, where ``resolve`` knows it: ``parameter_constants.py``); ``copy``:
    the callee's copy the call binds (for a constructor's, the class built)."""
    site = project.files[edge[0]].facts.flow.calls[edge[1]]
    flow = project.files[callee.file].facts.flow
    definition = flow.defs.get(callee.qualname)
    if site is None or definition is None or definition.kind != "function":
        return {}
    kind = project.graph.callees.get(edge, {}).get(callee)
    if not _direct(site, callee, kind, copy):
        return {}
    shifts = _receiver_shifts(site, definition, kind)
    defaults = flow.known_defaults.get(callee.qualname, {})
    unpacked = bool(site.star or site.double_star)
    positional = [p for p, k in definition.params if k in ("o", "p")]
    known: dict[str, Known] = {}
    for name, k in definition.params:
        if k not in ("o", "p", "k"):
            continue
        if any(keyword == name for keyword, _ in site.keywords):
            found = site.known.get(name)
            if found is None and resolve is not None:
                found = resolve(*_argument(site, name, dict(site.keywords)[name]))
        else:
            candidates = [
                _positional(site, positional.index(name) - shift, defaults.get(name), unpacked, resolve) if name in positional
                else (None if unpacked else defaults.get(name))
                for shift in shifts
                if name not in positional or positional.index(name) - shift >= 0
            ]
            found = candidates[0] if candidates and all(c == candidates[0] for c in candidates) else None
        if found is not None:
            known[name] = found
    return known


def argument_keys(project: Project, edge: Edge, callee: FunctionKey, name: str, copy: str = "") -> list[str] | None:
    """The argument (``CallSite.known``'s key: a position as a string, or a keyword) that the
    call at ``edge`` hands ``callee``'s parameter ``name``, one per way the receiver may shift
    (``Base.method(self, ...)``); None where the call does not name the callee, or hands the
    parameter otherwise (a default, ``*xs``, ``**kw``). A call of an instance (``self.experts(h,
    topk)``) hands its arguments to the ``forward`` or ``__call__`` it runs, after the receiver."""
    site = project.files[edge[0]].facts.flow.calls[edge[1]]
    definition = project.files[callee.file].facts.flow.defs.get(callee.qualname)
    if site is None or definition is None or definition.kind != "function":
        return None
    kind = project.graph.callees.get(edge, {}).get(callee)
    called = _calls_instance(project, edge, callee, definition, kind)
    if not (called or _direct(site, callee, kind, copy)) or (site.star and not site.star_last):
        return None
    if any(keyword == name for keyword, _ in site.keywords):
        return [name]
    positional = [p for p, k in definition.params if k in ("o", "p")]
    if name not in positional:
        return None
    shifts = [1] if called else _receiver_shifts(site, definition, kind)
    indices = [positional.index(name) - shift for shift in shifts]
    if not all(0 <= index < len(site.args) for index in indices):
        return None
    return [str(index) for index in indices]


def _calls_instance(project: Project, edge: Edge, callee: FunctionKey, definition: DefFacts, kind: str | None) -> bool:
    """Whether the call at ``edge`` runs ``callee`` as the ``forward`` / ``__call__`` of an
    instance its callee holds (``CallGraph.instance_calls``): an instance method, with the
    call's own arguments after the receiver."""
    return (
        kind == "call"
        and edge in project.graph.instance_calls
        and definition.method == "instance"
        and callee.qualname.rpartition(".")[2] in apis.INSTANCE_CALL_METHODS
    )


def _direct(site: CallSite, callee: FunctionKey, kind: str | None, copy: str = "") -> bool:
    """Whether the call names the callee (``f(...)``, ``obj.f(...)``, ``Foo(...)`` for
    ``Foo.__init__``, or for the copy of an inherited ``__init__`` that building ``Foo`` binds,
    ``receiver_copies.py``): its arguments are the callee's. Not a ``functools.partial`` (bound
    arguments come first), ``map(f, xs)``, an alias or a wrapper: what they hand over is unknown."""
    written = site.callee
    if written is None:
        return False
    name = written[2] if written[0] == "a" else str(written[1]).rsplit(".", 1)[-1] if written[0] in ("v", "g") else None
    owner, _, function = callee.qualname.rpartition(".")
    if kind == "init":
        built = copy.rpartition(":")[2].rsplit(".", 1)[-1] if copy.startswith("@") else None
        return name in (owner.rsplit(".", 1)[-1], built)
    return name == function


def _positional(
    site: CallSite, index: int, default: Known | None, unpacked: bool, resolve: Resolve | None
) -> Known | None:
    if index < len(site.args):
        found = site.known.get(str(index))
        return resolve(*_argument(site, str(index), site.args[index])) if found is None and resolve is not None else found
    return None if unpacked else default


def _argument(site: CallSite, key: str, expr: Expr | None) -> tuple[Expr | None, list[Expr] | None]:
    """An argument's value expression, and what makes it never None (``CallSite.nonnull``)."""
    needs = site.nonnull.get(key)
    return expr, ([expr] if expr is not None else None) if needs == 1 else needs  # type: ignore[return-value]


def _receiver_shifts(site: CallSite, definition: DefFacts, kind: str | None) -> list[int]:
    """How many positions the receiver takes: none for a plain function, one for a constructor
    or a method called on an instance; both (and what they agree on counts) where the call
    might be ``Base.method(self, ...)``."""
    if definition.method not in ("instance", "class"):
        return [0]
    callee = site.callee
    if kind == "init" or (callee is not None and callee[0] == "a" and callee[1][0] == "s"):
        return [1]  # a constructor's ``__init__``, ``super().method(...)``
    scope_self = f"{site.scope}."
    if callee is not None and callee[0] == "a" and callee[1][0] == "v" and callee[1][1].startswith(scope_self):
        name = callee[1][1][len(scope_self) :]
        if name == "self" or (name == "cls" and definition.method == "class"):
            return [1]  # ``self.method(...)``, ``cls.make(...)`` of a classmethod
    return [0, 1]


def value(tree: Expr, given: dict[str, Known]) -> bool | None:
    """The test ``tree`` for the arguments ``given`` (None: not known)."""
    head = tree[0]
    if head == "none":
        return given[tree[1]][0] if tree[1] in given else None
    if head == "truth":
        return given[tree[1]][1] if tree[1] in given else None
    if head == "not":
        inner = value(tree[1], given)
        return None if inner is None else not inner
    if head in ("and", "or"):
        decisive = head == "or"  # the value that ends the chain
        parts = [value(part, given) for part in tree[1:]]
        if decisive in parts:
            return decisive
        return None if None in parts else not decisive
    return None
