"""A small helper that calls or returns what it is handed, analysed once per call site.

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

vLLM's online quantization config picks a layer's method with one
``self._dispatch(spec, table, layer)`` (``cls = table.get(spec.weight); return cls()``), called
with the linear methods' table and with the MoE methods'; its kernel choosers filter their own
kernel lists through one ``_filter_kernels_by_backend(backend, kernels)`` (``return [k for k in
kernels if ...]``). Shared, every linear layer got the MoE methods, and every chooser every
kernel.

Which helpers: functions and methods (no class inside) that call what they are handed, or
return it: a parameter, or a local bound to one, to an element of one or to a lookup in one
(``table.get(key)``, ``table[key]``, a loop or comprehension over it), in their body or in a
function nested in it (or any function called as a decorator: ``@instrument`` hands the function
on to the helper that wraps it). A method's copy per receiver class (``receiver_copies.py``)
comes first; a method gets copies per site where it has none (its class has no subclass). And
they are *small*: at most
``MAX_CALLS`` calls and ``MAX_ASSIGNS`` assignments in their body and nested functions, so that a
copy per site costs a bounded, small part of the graph; twice that (``MAX_CALLS_RUNNING``,
``MAX_ASSIGNS_RUNNING``) for one that calls one of its own parameters as it came, a routine that
runs what each caller hands in (sglang's ``general_mm_embed_routine`` runs each multimodal
model's language model), where sharing merges the most. The context is the site alone (a call in
a copy of its enclosing method is the same site), so the copies of one helper are at most its
call sites, and past ``MAX_SITE_COPIES`` the further sites share its own body, as before. A
call made inside such a copy is followed into the small function or method it calls (the same
bounds, parameter called or not) with a copy of its own, named by both sites, up to
``MAX_NESTING`` copies deep.
"""

from __future__ import annotations

from typing import Any

from graphlint.checks.file_tables import per_file
from graphlint.checks.implicit_calls import DECORATION
from graphlint.checks.receiver_copies import MethodCopy, ReceiverCopies, Scoped
from graphlint.checks.value_graph import Obj

MAX_CALLS = 24  # calls in the helper's body and the functions nested in it
MAX_ASSIGNS = 24  # assignments there (imports, parameters' defaults and locals)
# The bounds of a helper that calls one of its parameters as it came: a routine that runs the
# model its caller hands in (sglang's general_mm_embed_routine(input_ids, forward_batch,
# language_model, ...), managers/mm_utils.py: 22 calls, 28 assignments, called by every
# multimodal model's forward), which shared ran every model's language model from each of them.
MAX_CALLS_RUNNING = 48
MAX_ASSIGNS_RUNNING = 48
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
        off with ``preview = false``: docs/callgraph.md "Call-site contexts"). ``base``: the
        method's copy for the receiver's class, of which this is a copy per site in turn
        (``@receiver#site``)."""
        if not self.preview or len(function) > 3 or function[0] != "F":
            return None
        handed_on = self.small_functions[function[1]].get(function[2])
        context = site_context(site)
        if handed_on is None or context is None:
            return None
        # A call made in a helper's copy (``#...`` the site's own context) is followed into the
        # small function it calls, per the helper's copy too: ``make_layers``' copy hands its
        # layers to ``offloader.wrap_modules(...)``, which would return every model's otherwise.
        outer = site[2] if isinstance(site[0], int) and len(site) > 2 and site[2].startswith("#") else ""
        decorating = site[0] == "implicit"  # a decorator, called with what it decorates
        if outer and outer.count("#") < MAX_NESTING:
            context += outer
        elif not (handed_on or decorating):
            return None
        if base is not None:
            return self.copy_of(function[1], function[2], base.owner, base.context + context, MAX_SITE_COPIES, counted=base.context)
        return self.copy_of(function[1], function[2], "", context, MAX_SITE_COPIES)

    @per_file
    def small_functions(self, file: int) -> dict[str, bool]:
        """Per file, the small functions and methods (not nested in a function, no class
        inside), each with whether it calls or returns what it is handed."""
        flow = self.files[file].facts.flow
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
            parameters = {f"{name}.{p}" for p, _ in definition.params}
            most_calls, most_assigns = (
                (MAX_CALLS_RUNNING, MAX_ASSIGNS_RUNNING) if _runs_a_parameter(flow, definition, name, calls)
                else (MAX_CALLS, MAX_ASSIGNS)
            )
            if len(calls) > most_calls or len(assigns) > most_assigns:
                continue
            handed = _handed_values(flow, parameters, sorted(assigns))
            # A parameter returned as it came is a pass (``bind_passes``), shared cheaply;
            # what a loop, a comprehension or a lookup took out of one is not.
            taken = handed - parameters - {f"{name}.<return>"}
            small[name] = any(
                not _plain_names(flow.calls[o].callee).isdisjoint(handed) for o in calls
            ) or any(
                target == ["v", f"{name}.<return>"] and not _plain_names(value).isdisjoint(taken)
                for target, value in (flow.assigns[i] for i in assigns)
            )
        return small


def _runs_a_parameter(flow: Any, definition: Any, name: str, calls: list[int]) -> bool:
    """Whether the function (or a function nested in it) calls one of its own parameters as it
    came (``language_model(...)``), not a method's receiver: what it runs is what each caller
    hands in, so every caller shares all of them unless each call site has its copy."""
    receiver = definition.params[0][0] if definition.method in ("instance", "class") and definition.params else None
    parameters = {f"{name}.{p}" for p, _ in definition.params if p != receiver}
    return any(
        (callee := flow.calls[o].callee) is not None and callee[0] == "v" and callee[1] in parameters
        for o in calls
    )


def _plain_names(expr: Any) -> set[str]:
    """The variables ``expr`` may hold as they are: itself, either side of an ``or`` / ``if``
    expression, an element or a ``.get(...)`` of one (the walk writes those as the container)."""
    if not isinstance(expr, list) or not expr:
        return set()
    if expr[0] == "v":
        return {expr[1]}
    if expr[0] == "u":
        return set().union(*(_plain_names(part) for part in expr[1:]))
    return set()


def _handed_values(flow: Any, parameters: set[str], assigns: list[int]) -> set[str]:
    """The parameters and the locals bound to one of them, an element of one or a lookup in one
    (``cls = table.get(key)``), transitively: calling one calls what the caller handed in."""
    handed = set(parameters)
    pending = [flow.assigns[i] for i in assigns if flow.assigns[i][0][0] == "v"]
    grew = True
    while grew:
        grew = False
        for target, value in pending:
            if target[1] not in handed and not _plain_names(value).isdisjoint(handed):
                handed.add(target[1])
                grew = True
    return handed
