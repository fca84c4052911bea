"""A small module-level helper that calls one of its parameters, analysed once per call site.

vLLM builds every model's layers with one ``make_layers(num_hidden_layers, layer_fn, prefix)``
that calls ``layer_fn(prefix=...)``; a decorator hands every function it decorates to one
closure (``def deco(fn): @wraps(fn) def wrapper(*a, **k): return fn(*a, **k); return wrapper``).
Context-insensitive, ``layer_fn`` holds every model's factory lambda, so every model's
``ModuleList`` held every model's layer class; and ``fn`` holds every decorated function, so the
one ``wrapper`` each decorated name holds runs all of them. Here such a helper gets one copy of
its body per call site (one level of call-site sensitivity, 1-CFA, Shivers 1991): the call (or
the decoration) binds the copy for its site, whose parameters, locals, calls, returns and nested
functions are nodes of their own, so each caller gets back only what it handed in. It is the
machinery of ``receiver_copies.py`` (``MethodCopy``), with the call site as the context.

Which helpers: functions defined at module level (no class inside) that call one of their
parameters, in their body or in a function nested in it (or any such function called as a
decorator: ``@instrument`` hands the function on to the helper that wraps it), and are *small*: at most
``MAX_CALLS`` calls and ``MAX_ASSIGNS`` assignments in their body and nested functions, so that a
copy per site costs a bounded, small part of the graph. The context is the site alone (a call in
a copy of its enclosing method is the same site), so the copies of one helper are at most its
call sites, and past ``MAX_SITE_COPIES`` the further sites share its own body, as before. A
call made inside such a copy is followed into the small function or method it calls (the same
bounds, parameter called or not) with a copy of its own, named by both sites, up to
``MAX_NESTING`` copies deep.
"""

from __future__ import annotations

from functools import cached_property
from typing import Any

from graphlint.checks.implicit_calls import DECORATION
from graphlint.checks.receiver_copies import MethodCopy, ReceiverCopies, Scoped
from graphlint.checks.value_graph import Obj

MAX_CALLS = 24  # calls in the helper's body and the functions nested in it
MAX_ASSIGNS = 24  # assignments there (imports, parameters' defaults and locals)
MAX_SITE_COPIES = 512  # copies of one helper; further call sites share its own body
MAX_NESTING = 3  # copies within copies: a helper's, the function it calls, and one more


def site_context(site: Any) -> str | None:
    """The copy name of a call site: ``#file:ordinal`` for a call (in any copy of the method it
    is in), ``#file:dindex`` for a decoration; None for sites that get no copy (entries,
    ``raise``, iteration)."""
    if isinstance(site, tuple) and len(site) >= 2 and isinstance(site[0], int) and isinstance(site[1], int):
        return f"#{site[0]}:{site[1]}"
    if isinstance(site, tuple) and len(site) == 5 and site[0] == "implicit" and site[3] == DECORATION:
        index = site[4][0] if isinstance(site[4], tuple) else site[4]
        return f"#{site[1]}:d{index}"
    return None


class CallSiteCopies(ReceiverCopies):
    """The copies of small helpers per call site (a mixin of the solver)."""

    preview: bool

    def site_copy(self, function: Obj, site: Any, base: MethodCopy | None = None) -> MethodCopy | None:
        """The copy of ``function``'s body that a call at ``site`` binds (made on first use);
        None: the function's own nodes (not a small helper, a site with no copy, too many, or
        not in preview: docs/callgraph.md "Preview"). ``base``: the method's copy for the
        receiver's class, of which this is a copy per site in turn (``@receiver#site``)."""
        if not self.preview or len(function) > 3 or function[0] != "F":
            return None
        calls_parameter = self.small_functions[function[1]].get(function[2])
        context = site_context(site)
        if calls_parameter is None or context is None:
            return None
        # A call made in a helper's copy (``#...`` the site's own context) is followed into the
        # small function it calls, per the helper's copy too: ``make_layers``' copy hands its
        # layers to ``offloader.wrap_modules(...)``, which would return every model's otherwise.
        outer = site[2] if isinstance(site[0], int) and len(site) > 2 and site[2].startswith("#") else ""
        decorating = site[0] == "implicit"  # a decorator, called with what it decorates
        if outer and outer.count("#") < MAX_NESTING:
            context += outer
        elif not (calls_parameter or decorating) or "." in function[2]:
            return None
        if base is not None:
            return self.copy_of(function[1], function[2], base.owner, base.context + context, MAX_SITE_COPIES, counted=base.context)
        return self.copy_of(function[1], function[2], "", context, MAX_SITE_COPIES)

    @cached_property
    def small_functions(self) -> list[dict[str, bool]]:
        """Per file, the small functions and methods (not nested in a function, no class
        inside), each with whether it calls one of its parameters."""
        found: list[dict[str, bool]] = []
        for file, linked in enumerate(self.files):
            flow = linked.facts.flow
            by_scope = self.scoped(file)
            nested = self.nested[file]
            small: dict[str, bool] = {}
            for name, definition in flow.defs.items():
                parent = flow.defs.get(name.rpartition(".")[0])
                if definition.kind != "function" or (parent is not None and parent.kind != "class"):
                    continue
                scopes = (name, *nested.get(name, ()))
                if any(flow.defs[s].kind == "class" for s in scopes[1:]):
                    continue
                calls = [o for s in scopes for o in by_scope.get(s, Scoped()).calls]
                assigns = {i for s in scopes for i in by_scope.get(s, Scoped()).assigns}
                if len(calls) > MAX_CALLS or len(assigns) > MAX_ASSIGNS:
                    continue
                parameters = {f"{name}.{p}" for p, _ in definition.params}
                callees = (flow.calls[o].callee for o in calls)
                small[name] = any(c is not None and c[0] == "v" and c[1] in parameters for c in callees)
            found.append(small)
        return found
