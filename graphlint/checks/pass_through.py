"""Functions that return a parameter as it came: each call gets its own argument back.

A docstring or registry decorator (``def auto_docstring(obj): ...; return obj``, transformers'
``auto_class_docstring(cls)``) is called by every class it decorates. Context-insensitive, its
parameter holds all of them and so does what it returns: every decorated name then held every
decorated class and method of the project, each model's entry ran every model's ``forward``,
and on 26 transformers models the solve ran out of its budget. Here ``return p`` (``p`` a
parameter nothing rebinds) is not a return of the shared parameter: each call receives the node
of its own argument for ``p``. ``return g(p)`` with ``g`` such a function passes ``p`` on too,
found as the solve resolves ``g`` (``auto_docstring(obj)`` → ``decorator(obj)`` →
``auto_class_docstring(obj)`` → ``return cls``). Where a call's argument is not known (``*xs``),
the shared parameter is what it gets, as before.

A decorator with optional arguments returns its inner decorator only when used with arguments
(``if obj: return decorator(obj)`` then ``return decorator``, or ``if obj is None: return
decorator``): such a return does not reach a decoration (``@auto_docstring``), whose argument is a
class or a function.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from graphlint.checks.file_tables import per_file
from graphlint.checks.value_graph import CallArgs, ValueGraph

Params = list[tuple[str, str]]
Function = tuple[int, str]  # (file, qualname)


class PassThrough(ValueGraph):
    variables: dict[tuple[int, str], int]
    pass_sites: dict[Function, list[tuple[Params, CallArgs, int, tuple[Any, str]]]]
    passes_found: dict[Function, set[str]]
    hand_back_forwarded: Callable[[Params, CallArgs, str, int], None]  # ``returned_arguments.py``
    preview: bool  # the preview contexts (docs/callgraph.md "Call-site contexts")

    @per_file
    def rebound_variables(self, file: int) -> set[str]:
        """Per file, the variables a statement binds to something other than an annotation's
        instance or a method's default ``self``: a parameter among them is not returned as given."""
        assigns = self.files[file].facts.flow.assigns  # type: ignore[attr-defined]
        return {t[1] for t, value in assigns if t[0] == "v" and value[0] not in ("n", "self")}

    @per_file
    def returned_calls(self, file: int) -> set[int]:
        return set(self.files[file].facts.flow.returned_calls)  # type: ignore[attr-defined]

    def bind_passes(self, file: int, qualname: str, params: Params, args: CallArgs, out: int, site: Any, prefix: str) -> None:
        """The call ``out`` (at ``site``) receives its own argument for each parameter
        ``qualname`` returns; ``prefix``: the function's variables' (a receiver class's copy)."""
        function = (file, qualname)
        call = (params, args, out, (site, prefix))
        self.pass_sites.setdefault(function, []).append(call)
        passed = {*self.flow(file).passes.get(qualname, ()), *self.passes_found.get(function, ())}  # type: ignore[attr-defined]
        for name in sorted(passed):
            self._hand_back(file, qualname, name, call)

    def passed_on(self, site: Any, node: int | None) -> bool:
        """Whether ``node``, handed to a parameter the callee returns at call ``site``, is a
        parameter of the function that returns that call's result as it is (``return g(p)``):
        then that function passes ``p`` on, and the call's result does not take it."""
        found = self.returned_parameter(site, node)
        if found is None or found[1] != found[2]:  # in a method's copy: not here
            return False
        self._found(found[0], found[1], found[3])
        return True

    def returned_parameter(self, site: Any, node: int | None, guarded: bool = False) -> tuple[int, str, str, str] | None:
        """(file, function, the prefix of its variables, parameter) when call ``site`` is
        returned as it is by its function (``return g(...)``; ``guarded``: also under an
        ``isinstance`` test, ``instance_guards.py``) and ``node`` is that function's own
        parameter, which nothing rebinds; in a method's copy (a site ``(file, ordinal,
        context)``), the copy's parameter."""
        if node is None or not (isinstance(site, tuple) and len(site) in (2, 3) and isinstance(site[0], int)):
            return None
        file, ordinal = site[:2]
        if ordinal not in self.returned_calls[file] and not (guarded and ordinal in self.guarded_calls[file]):  # type: ignore[attr-defined]
            return None
        call = self.flow(file).calls[ordinal]  # type: ignore[attr-defined]
        definition = self.flow(file).defs.get(call.scope) if call is not None else None  # type: ignore[attr-defined]
        if definition is None or definition.kind != "function":
            return None
        prefix = call.scope if len(site) == 2 else f"{call.scope}{site[2]}"
        for name, kind in definition.params:
            key = f"{call.scope}.{name}"
            if kind in ("o", "p", "k") and self.variables.get((file, f"{prefix}.{name}")) == node and key not in self.rebound_variables[file]:
                return file, call.scope, prefix, name
        return None

    def _found(self, file: int, qualname: str, name: str) -> None:
        found = self.passes_found.setdefault((file, qualname), set())
        if name in found or name in self.flow(file).passes.get(qualname, ()):  # type: ignore[attr-defined]
            return
        found.add(name)
        for call in list(self.pass_sites.get((file, qualname), ())):
            self._hand_back(file, qualname, name, call)

    def _hand_back(self, file: int, qualname: str, name: str, call: tuple[Params, CallArgs, int, tuple[Any, str]]) -> None:
        params, args, out, (site, prefix) = call
        given, known = passed_argument(params, args, name)
        forwarded = not known and self.preview and not (args.star or args.double_star)  # preview only
        if f"{qualname}.{name}" in self.rebound_variables[file] or (not known and not forwarded):
            self.edge(self.variable(file, f"{prefix}.{name}"), out)  # rebound, or not known: the shared parameter
        elif not known:  # in the caller's own ``*args`` / ``**kwargs``, handed on
            self.hand_back_forwarded(params, args, name, out)
        elif given is not None and not self.passed_on(site, given):
            self.edge(given, out)


    def return_if_falsy(self, decorating: bool, returned: int, out: int) -> None:
        """``if p is None: return decorator``: taken by every call but a decoration, whose
        argument is the class or function it decorates (never falsy). The value flow has no
        values for numbers, strings or ``None``, so an ordinary call's argument cannot show that
        it is truthy."""
        if not decorating:
            self.edge(returned, out)


def passed_argument(params: Params, args: CallArgs, name: str) -> tuple[int | None, bool]:
    """The node a call hands to parameter ``name`` and whether that is known: (None, True) when
    the call leaves it at its default, (None, False) when a ``*xs`` / ``**d`` may fill it."""
    positional = [p for p, kind in params if kind in ("o", "p")]
    if name in positional and positional.index(name) < len(args.positional):
        return args.positional[positional.index(name)], True
    given = [node for keyword, node in args.keywords if keyword == name]
    if given:
        return given[0], True
    unknown = args.star or args.double_star or args.forwarded_star or args.forwarded_keywords
    return None, not unknown
