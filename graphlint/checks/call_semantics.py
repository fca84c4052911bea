"""What calling an object does in the value graph: binding, construction, partials, entries.

Calling a function makes its parameters receive the arguments (positional, keyword,
``*args``/``**kwargs``) and the call receive its returns; calling a class constructs an instance
and runs ``__init__``; calling an instance runs ``__call__`` or, for a torch module, ``forward``
(and a framework's dispatch methods); calls outside the project follow ``apis.py``'s data
(pass-through, calls-its-arguments, partials, outside classes). Decorators, ``raise Error`` and
iteration are calls without a call site; an entry point calls what it is handed.
"""

from __future__ import annotations

import re
from collections.abc import Callable
from typing import Any

from graphlint.checks.file_tables import per_file
from graphlint.checks import apis
from graphlint.checks.class_hierarchy import ClassHierarchy
from graphlint.checks.declared_types import DeclaredTypes
from graphlint.checks.facts import FALSY, CallSite, Expr
from graphlint.checks.implicit_calls import ImplicitCalls, is_decoration
from graphlint.checks.parameter_defaults import ParameterDefaults
from graphlint.checks.instance_guards import InstanceGuards
from graphlint.checks.instance_methods import InstanceMethods, any_instance
from graphlint.checks.pass_through import PassThrough
from graphlint.checks.call_site_copies import CallSiteCopies
from graphlint.checks.parameter_class_copies import ParameterClassCopies
from graphlint.checks.receiver_copies import MethodCopy
from graphlint.checks.returned_arguments import ReturnedArguments
from graphlint.checks.wrap_order import WrapOrder, instances_made
from graphlint.checks.compile_wrappers import WRAPPER, CompileWrappers
from graphlint.checks.value_graph import (
    MAX_DEPTH,
    EXTERNAL_VALUE,
    OUTSIDE_ANY,
    HOST_TENSOR,
    CallArgs,
    CallGraph,
    FunctionKey,
    LinkedModule,
    Obj,
    Rest,
    Target,
    instance_of,
)


class CallSemantics(
    ReturnedArguments, ImplicitCalls, CallSiteCopies, ParameterClassCopies, InstanceGuards, WrapOrder, ParameterDefaults,
    DeclaredTypes, CompileWrappers, InstanceMethods,
):
    """The call half of the solver (it provides ``compile``, ``member`` and the tables below)."""

    files: list[LinkedModule]
    classes: ClassHierarchy
    dispatch: list[tuple[re.Pattern[str], tuple[str, ...]]]
    not_dispatched: list[tuple[re.Pattern[str], tuple[str, ...]]]
    declared: list[set[str]]
    graph: CallGraph
    receivers: dict[tuple[int, int], int]
    site_args: dict[tuple[int, int], CallArgs]
    rebound: dict[int, tuple[int, Callable[[Any], None]]]
    called: set[tuple[Any, Obj]]
    site_edges: dict[tuple[Any, ...], dict[tuple[Target, str], str]]
    outside_any_sites: set[tuple[Any, ...]]
    callee_nodes: dict[tuple[int, int], int]
    compile: Callable[..., int | None]
    member: Callable[[Obj, str, Obj, int, Obj | None], None]

    # ---- calls ------------------------------------------------------------------------------
    def call_site(self, file: int, ordinal: int, site: CallSite, copy: MethodCopy | None = None) -> None:
        """A call's arguments and callee as nodes; in ``copy`` (a method's copy for one receiver
        class, ``receiver_copies.py``) its own, with its own result."""
        read = (lambda expr: expr) if copy is None else copy.expr
        key: tuple[Any, ...] = (file, ordinal) if copy is None else (file, ordinal, copy.context)
        callee = site.callee
        if callee is not None and callee[0] == "a":
            receiver = self.compile(file, read(callee[1]))
            if receiver is not None:
                self.receivers[key] = receiver
        callee_node = self.compile(file, read(callee))
        args = self.arguments(file, site, copy)
        if site.rebinds and callee is not None:
            args = self.before_rebinding(file, site, args, copy.receiver_class if copy is not None else None)
        self.site_args[key] = args
        out = self.result(file, ordinal if copy is None else (ordinal, copy.context))
        if ordinal in self.host_calls[file]:
            self.add(out, [HOST_TENSOR])
        if callee_node is None:
            return
        self.callee_nodes[key] = callee_node
        self.watch(callee_node, lambda objs: [self.call(key, obj, args, out) for obj in objs])

    def arguments(self, file: int, site: CallSite, copy: MethodCopy | None = None) -> CallArgs:
        """A call's arguments as nodes (in ``copy``: its own), before ``before_rebinding``."""
        read = (lambda expr: expr) if copy is None else copy.expr
        rest = lambda found: found if copy is None or found is None else (file, copy.rename(found[1]), found[2])  # noqa: E731
        forwarded_star = [r for r in (rest(self.rest_of(file, site.scope, s, "*")) for s in site.star if site.star_last) if r]
        forwarded_keywords = [r for r in (rest(self.rest_of(file, site.scope, d, "**")) for d in site.double_star) if r]
        return CallArgs(
            [self.compile(file, read(a)) for a in site.args],
            [n for n in (self.compile(file, read(s)) for s in site.star) if n is not None] if not forwarded_star else [],
            [(name, self.compile(file, read(value))) for name, value in site.keywords],
            [
                n for n in (self.compile(file, read(d)) for d in site.double_star if self.rest_of(file, site.scope, d, "**") is None)
                if n is not None
            ],
            forwarded_star,
            forwarded_keywords,
        )

    def rest_of(self, file: int, scope: str, expr: Expr, kind: str) -> Rest | None:
        """The ``*args`` (``kind`` ``"*"``) or ``**kwargs`` parameter of the function ``scope`` that
        ``expr`` reads, when nothing else is ever bound to it: then it can be handed on keyed."""
        if expr[0] != "v" or not expr[1].startswith(f"{scope}."):
            return None
        name = expr[1][len(scope) + 1 :]
        definition = self.flow(file).defs.get(scope)
        if definition is None or (name, kind) not in definition.params or expr[1] in self.bound_variables[file]:
            return None
        return (file, scope, name)

    @per_file
    def bound_variables(self, file: int) -> set[str]:
        """Per file, the variables some statement binds (not only calls, through parameters)."""
        return {t[1] for t, _ in self.files[file].facts.flow.assigns if t[0] == "v"}

    @per_file
    def rebound_variables(self, file: int) -> set[str]:
        """A parameter with a default is bound by it too: never returned as given."""
        return PassThrough.rebound_variables.row(self, file) | self.defaulted_parameters[file]

    @per_file
    def host_calls(self, file: int) -> set[int]:
        return set(self.files[file].facts.host_calls)

    def before_rebinding(self, file: int, site: CallSite, args: CallArgs, receiver_class: Obj | None) -> CallArgs:
        """``self.model = Wrapper(self.model)``: the argument written as the assignment's own
        target holds what the target held before, never an instance of the class called here,
        nor of one an override wraps it in after calling this method (``wrap_order.py``)."""
        made = self.rebinding_made(file, site, receiver_class)
        if not made:
            return args

        def before(node: int | None) -> int | None:
            if node is None:
                return None
            out = self.node()
            react = lambda objs: self.add(out, [o for o in objs if any_instance(o) not in made])  # noqa: E731
            self.rebound[out] = (node, react)
            self.watch(node, react)
            return out

        return CallArgs(
            [before(n) if i in site.rebinds else n for i, n in enumerate(args.positional)],
            args.star,
            [(name, before(n) if name in site.rebinds else n) for name, n in args.keywords],
            args.double_star,
            args.forwarded_star,
            args.forwarded_keywords,
        )

    def rebinding_made(self, file: int, site: CallSite, receiver_class: Obj | None) -> set[Obj]:
        """What a rebound argument of ``site`` never holds (``before_rebinding``; none: the
        arguments are handed as they are)."""
        return instances_made(self.classes, file, site.callee) | self.made_later(file, site.scope, receiver_class)  # type: ignore[arg-type]

    def record(self, site: Any, target: Target, kind: str, copy: str = "") -> None:
        """``site`` runs ``target`` (in ``target``'s ``copy`` for a receiver class, ``""``: its own
        body); a site is ``(file, ordinal)``, ``(file, ordinal, copy)`` in a method's copy, or
        ``("entry", file, index)``."""
        if site[0] == "implicit":
            self.graph.implicit_calls.setdefault((site[1], site[2]), set()).add(target)
            return
        key = (*site, "") if isinstance(site[0], int) and len(site) == 2 else site
        if target == OUTSIDE_ANY[1]:
            self.outside_any_sites.add(key[:2] if isinstance(key[0], int) else key[:3])
        self.site_edges.setdefault(key, {}).setdefault((target, copy), kind)

    def call(self, site: Any, obj: Obj, args: CallArgs, out: int) -> None:
        if (site, obj) in self.called:
            return
        self.called.add((site, obj))
        kind = obj[0]
        if kind == "F":
            copy = self.site_copy(obj, site)  # a small helper's copy for this site (``call_site_copies.py``)
            # per class of the wrapped parameter (``parameter_class_copies.py``), within the site's
            # copy where it has one: sglang's in-place hook is a small helper with one call site
            if self.bind_per_class(site, obj, args, out, None, copy):
                return
            self.record(site, FunctionKey(obj[1], obj[2]), "call", copy.context if copy else obj[3] if len(obj) > 3 else "")
            self.bind(obj, args, out, site=site)
        elif kind == "B":
            function, receiver = obj[1], obj[2]
            if receiver[0] == "I" and function[2].rpartition(".")[2] in self.never_dispatched(receiver):
                return
            # a method's copy for the receiver's class, per call site in turn where it is a small
            # helper called in a helper's copy (``call_site_copies.py``)
            base = self.copy_for(function, receiver)
            copy = self.site_copy(function, site, base) or base
            with_receiver = args.with_receiver(self.constant(receiver))
            if self.bind_per_class(site, function, with_receiver, out, receiver, copy):
                return
            self.record(site, FunctionKey(function[1], function[2]), "call", copy.context if copy else "")
            self.bind(function, with_receiver, out, receiver, site, copy)
        elif kind == "C":
            instance = self.allocated(site, obj)
            self.add(out, [instance])
            init = self.node()
            self.member(obj, "__init__", instance, init, skip_to=None)
            self.watch(init, lambda objs: [self.construct(site, o, args) for o in objs])
        elif kind == "I":
            method = self.node()
            for name in apis.INSTANCE_CALL_METHODS:
                if self.defines(obj, name):
                    self.member(("C", obj[1], obj[2]), name, obj, method, skip_to=None)
                    break
            for name in self.dispatched(obj):
                if self.defines(obj, name):
                    self.member(("C", obj[1], obj[2]), name, obj, method, skip_to=None)
            self.watch(method, lambda objs: [self.call(site, o, args, out) for o in objs if o[0] in ("B", "F")])
        elif obj == OUTSIDE_ANY:  # some outside names: what any of them does (value_graph.py)
            self.record(site, OUTSIDE_ANY[1], "call")
            if not (isinstance(site[0], int) and site[1] in self.host_calls[site[0]]):
                self.outside_arguments.append(args)
                self.add(out, [OUTSIDE_ANY])
        elif kind in ("X", "H") and isinstance(site[0], int) and site[1] in self.host_calls[site[0]]:
            if obj[1] and kind == "X":  # torch.arange(..., device="cpu"), x.cpu(): a host tensor
                self.record(site, obj[1], "call")
        elif kind == "X" and obj[1]:
            self.record(site, obj[1], "call")
            self.outside_arguments.append(args)
            self.external_call(site, obj[1], args, out)
        elif kind == "X":  # what an unknown callable returns is unknown, not nothing
            self.outside_arguments.append(args)
            self.add(out, [EXTERNAL_VALUE])
        elif kind == "H":  # a method of a host tensor that keeps it there
            self.add(out, [HOST_TENSOR] if obj[1] else [EXTERNAL_VALUE])
        elif kind == "P":
            self.call_partial(site, obj, args, out)
        elif kind == WRAPPER:
            self.call_wrapper(site, obj, args, out)

    def dispatched(self, instance: Obj) -> list[str]:
        """The dispatch methods named for a class of the instance's MRO (project or outside), unless a
        class before it in the MRO defines its own ``forward`` or ``__call__``: calling the instance
        runs that override, not the dispatching class's ``forward`` (vLLM's ``ShortConv.forward``
        calls its custom op; ``CustomOp.forward``'s choice of ``forward_cuda`` never runs)."""
        return self.named_for(self.dispatch, instance, overridden=apis.INSTANCE_CALL_METHODS)

    def never_dispatched(self, instance: Obj) -> list[str]:
        """The methods the dispatch of a class of the instance's MRO never picks (``forward_cpu``)."""
        return self.named_for(self.not_dispatched, instance)

    def named_for(
        self, table: list[tuple[re.Pattern[str], tuple[str, ...]]], instance: Obj, overridden: tuple[str, ...] = ()
    ) -> list[str]:
        """The methods ``table`` names for the first class of the instance's MRO each pattern matches;
        none for a pattern whose class comes after one that defines a method of ``overridden``."""
        if not table:
            return []
        mro = self.classes.mro(("C", instance[1], instance[2]))
        names = [f"{self.files[k[1]].module}.{k[2]}" if k[0] == "C" else k[1] for k in mro]
        methods: list[str] = []
        for pattern, named in table:
            first = next((index for index, name in enumerate(names) if pattern.match(name)), None)
            if first is None or any(
                k[0] == "C" and f"{k[2]}.{method}" in self.declared[k[1]] for k in mro[:first] for method in overridden
            ):
                continue
            methods.extend(named)
        return list(dict.fromkeys(methods))

    def defines(self, instance: Obj, name: str) -> bool:
        return any(k[0] == "C" and f"{k[2]}.{name}" in self.declared[k[1]] for k in self.classes.mro(("C", instance[1], instance[2])))

    def construct(self, site: Any, init: Obj, args: CallArgs) -> None:
        if init[0] == "B":
            function = init[1]
            self.constructed.add((init[2][1], init[2][2]))
            copy = self.copy_for(function, init[2])
            self.record(site, FunctionKey(function[1], function[2]), "init", copy.context if copy else "")
            self.bind(function, args.with_receiver(self.constant(init[2])), self.node(), init[2])
        elif init[0] == "X" and init[1]:
            self.record(site, init[1], "init")

    def external_call(self, site: Any, name: str, args: CallArgs, out: int) -> None:
        if name in apis.COMPILE_FUNCTIONS and self.compiles_here(site, name, args, out):
            return
        if name in apis.PASS_THROUGH_CALLS:
            for node in [*args.positional, *self.plain(args).star]:
                self.edge(node, out)
            if name == "builtins.dict":
                for _, node in args.keywords:
                    if node is not None:
                        self.edge(node, out)
        elif name in apis.CALLS_ITS_ARGUMENTS:
            for node in args.positional:
                if node is not None:
                    others = CallArgs(star=[n for n in args.positional if n is not None and n != node])
                    self.watch(node, lambda objs, others=others: [self.call(site, o, others, out) for o in objs if o[0] != "X"])
        elif name in apis.PARTIAL_FUNCTIONS and isinstance(site[0], int):
            self.add(out, [("P", *site)])  # its arguments: ``site_args`` of the site
        elif name.rsplit(".", 1)[-1][:1].isupper() and name.count(".") < MAX_DEPTH:
            self.add(out, [("X", name)])  # an instance of an outside class: named by its class
        else:  # what an outside function returns: nothing to follow (chains of them end here)
            self.add(out, [EXTERNAL_VALUE])

    def call_partial(self, site: Any, partial: Obj, args: CallArgs, out: int) -> None:
        bound = self.site_args.get(partial[1:])
        if bound is None or not bound.positional or bound.positional[0] is None:
            return
        bound, args = self.plain(bound), self.plain(args)
        combined = CallArgs(
            [*bound.positional[1:], *args.positional],
            [*bound.star, *args.star],
            [*bound.keywords, *args.keywords],
            [*bound.double_star, *args.double_star],
        )
        self.watch(bound.positional[0], lambda objs: [self.call(site, o, combined, out) for o in objs])

    def bind(
        self, function: Obj, args: CallArgs, out: int, receiver: Obj | None = None, site: Any = None,
        copy: MethodCopy | None = None,
    ) -> None:
        """Arguments → parameters, returns → the call (at ``site``); through ``receiver``, those of
        the method's copy for its class where it has copies; ``copy``: those of that copy."""
        file, qualname = function[1], function[2]
        definition = self.files[file].facts.flow.defs.get(qualname)
        if definition is None or definition.kind != "function":
            return
        copy = copy or self.copy_for(function, receiver) or self.site_copy(function, site)
        name = qualname if copy is None else copy.rename(qualname)
        params = definition.params
        self.edge(self.variable(file, f"{name}.<return>"), out)
        # a function that returns a parameter as given returns this call's argument (a
        # registering decorator hands back the class it decorates, not every class it saw)
        self.bind_passes(file, qualname, params, args, out, site, name)
        self.forward_guards(qualname, (params, args, out, (site, name)), file)
        self.bind_rest_passes(file, qualname, params, args, out, name)
        positional = [p for p, kind in params if kind in ("o", "p")]
        varargs = next((p for p, kind in params if kind == "*"), None)
        varkw = next((p for p, kind in params if kind == "**"), None)
        parameter = lambda p: self.variable(file, f"{name}.{p}")  # noqa: E731
        for index, node in enumerate(args.positional):
            if node is None:
                continue
            if index < len(positional):
                self.edge(node, parameter(positional[index]))
            elif varargs is not None:
                self.edge(node, self.rest_node((file, name, varargs), index - len(positional)))
        rest = positional[len(args.positional) :]
        for node in args.star:
            for p in rest:
                self.edge(node, parameter(p))
            if varargs is not None:
                self.edge(node, self.rest_node((file, name, varargs), None))
        by_keyword = {p for p, kind in params if kind in ("p", "k")}
        for keyword, node in args.keywords:
            if node is None:
                continue
            if keyword in by_keyword:
                self.edge(node, parameter(keyword))
            elif varkw is not None:
                self.edge(node, self.rest_node((file, name, varkw), keyword))
        unfilled = [p for p, kind in params if kind == "k" or (kind == "p" and p in rest)]
        for node in args.double_star:
            for p in unfilled:
                self.edge(node, parameter(p))
            if varkw is not None:
                self.edge(node, self.rest_node((file, name, varkw), None))
        self.bind_forwarded(file, name, params, args)
        self.bind_defaults(file, qualname, name, params, args, copy)
        for guarded, classes, key in self.flow(file).guarded.get(qualname, ()):
            falsy = classes == FALSY
            if copy is not None:
                classes, key = copy.expr(classes), name + key[len(qualname):]
            if falsy:
                self.return_if_falsy(is_decoration(site), self.variable(file, key), out)
            else:
                self.return_if_instance(file, self.argument(params, args, guarded), classes, self.variable(file, key), out, site)

    def argument(self, params: list[tuple[str, str]], args: CallArgs, name: str) -> int | None:
        """The node a call hands to parameter ``name``, when only that node can fill it (None:
        not known, e.g. through ``*xs``)."""
        positional = [p for p, kind in params if kind in ("o", "p")]
        index = positional.index(name) if name in positional else len(args.positional)
        if index < len(args.positional):
            return args.positional[index]
        given = [node for keyword, node in args.keywords if keyword == name]
        if given and not (args.star or args.forwarded_star):
            return given[0]
        return None

    def flow(self, file: int) -> Any:
        return self.files[file].facts.flow
