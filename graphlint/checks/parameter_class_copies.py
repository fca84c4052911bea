"""A function that wraps a method of one of its parameters in place, analysed once per class of
what that parameter holds.

vLLM's offloaders hook every layer of every model the same way::

    def _hook_module_forward(self, index, module):
        original_forward = module.forward
        def forward(*args, **kwargs):
            module.forward = original_forward
            output = original_forward(*args, **kwargs)
            module.forward = forward
            return output
        module.forward = forward

Context-insensitive, ``module`` holds every layer class of every model, so ``original_forward``
holds every layer's bound ``forward``, the one ``forward`` closure calls all of them, and
``module.forward = ...`` stores that closure and every layer's bound ``forward`` on every layer
class: calling any layer ran every layer (vllm-ascend with vLLM on its extra path filled the
solve's budget with it). Here such a function gets one copy of its body per class of the objects
handed to that parameter (the Cartesian product algorithm's split, Agesen, ECOOP 1995, on one
parameter): the argument is routed by class, each class's instances reach only that class's copy,
whose locals, closures and stores are its own, so a layer's ``forward`` gets only its own
wrapper, which calls only that layer's ``forward``. What is not an instance or class of the
project (an outside value) reaches the function's own body. It is the machinery of
``receiver_copies.py`` (``MethodCopy``), with the parameter's class as the context.

Which functions: those (at module level or methods, no class inside) that store, on an attribute
of one of their parameters (not a method's ``self``, which ``receiver_copies.py`` covers), a
function defined inside them (in their body or in a function nested in it). A method copied per
receiver class (``PrefetchOffloader`` has subclasses) is copied per class of the parameter within
each of those copies (the context ``@receiver%class``). Past ``MAX_PARAMETER_CLASSES`` classes a
function's further classes share the copy the call binds otherwise.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from graphlint.checks.file_tables import per_file
from graphlint.checks.receiver_copies import MethodCopy, ReceiverCopies
from graphlint.checks.value_graph import CallArgs, FunctionKey, Obj

# Past this many classes (per copy of the function for a receiver class) a function's further
# classes share the copy the call binds otherwise.
MAX_PARAMETER_CLASSES = 512


def class_context(obj: Obj) -> str:
    """The copy name of the class of ``obj`` (an instance or a class): ``%file:qualname``."""
    return f"%{obj[1]}:{obj[2]}"


def with_argument(params: list[tuple[str, str]], args: CallArgs, name: str, node: int) -> CallArgs:
    """``args`` with the argument of parameter ``name`` (``ParameterClassCopies.argument``
    found it) replaced by ``node``."""
    positional = [p for p, kind in params if kind in ("o", "p")]
    index = positional.index(name) if name in positional else len(args.positional)
    if index < len(args.positional):
        given = list(args.positional)
        given[index] = node
        return CallArgs(given, args.star, args.keywords, args.double_star, args.forwarded_star, args.forwarded_keywords)
    keywords = [(keyword, node if keyword == name else value) for keyword, value in args.keywords]
    return CallArgs(args.positional, args.star, keywords, args.double_star, args.forwarded_star, args.forwarded_keywords)


class ParameterClassCopies(ReceiverCopies):
    """The copies of in-place wrapping functions per class of the wrapped parameter (a mixin of
    the solver)."""

    record: Callable[..., None]
    bind: Callable[..., None]
    argument: Callable[[list[tuple[str, str]], CallArgs, str], int | None]

    def __init__(self) -> None:
        super().__init__()
        # (argument node, context) → the node that holds what of it reaches that copy
        self.routed: dict[tuple[int, str], int] = {}
        self.routed_bound: set[tuple[Any, ...]] = set()

    def bind_per_class(
        self, site: Any, function: Obj, args: CallArgs, out: int, receiver: Obj | None, base: MethodCopy | None,
    ) -> bool:
        """Bind a call of an in-place wrapping ``function`` (``args`` with the receiver first, for
        a method) per class of the objects its wrapped parameter gets; ``base``: the copy the call
        binds otherwise (a method's copy for its receiver's class), of which these are copies in
        turn. False: not such a function (or the argument cannot be singled out: through
        ``*xs``), bind it as usual."""
        file, qualname = function[1], function[2]
        param = self.wrapped_parameters[file].get(qualname) if len(function) == 3 else None
        if param is None:
            return False
        params = self.files[file].facts.flow.defs[qualname].params
        node = self.argument(params, args, param)
        if node is None:
            return False
        prefix, owner = (base.context, base.owner) if base is not None else ("", "")

        def route(objs: Any) -> None:
            for obj in objs:
                copy = base
                if obj[0] in ("I", "C"):
                    context = prefix + class_context(obj)
                    copy = self.copy_of(file, qualname, owner, context, MAX_PARAMETER_CLASSES, counted=prefix + "%") or base
                context = copy.context if copy is not None else ""
                routed = self.routed.get((node, context))
                if routed is None:
                    routed = self.routed[node, context] = self.node()
                if (site, function, receiver, context) not in self.routed_bound:
                    self.routed_bound.add((site, function, receiver, context))
                    self.record(site, FunctionKey(file, qualname), "call", context)
                    self.bind(function, with_argument(params, args, param, routed), out, receiver, site, copy)
                self.add(routed, (obj,))

        self.watch(node, route)
        return True

    @per_file
    def wrapped_parameters(self, file: int) -> dict[str, str]:
        """Per file, the functions (not nested in a function, no class inside) that store a function defined inside them on an attribute of one of their
        parameters, with that parameter."""
        flow = self.files[file].facts.flow
        wrapping: dict[str, str] = {}
        for target, value in flow.assigns:
            if target[0] != "a" or target[1][0] != "v" or value[0] not in ("v", "d"):
                continue
            function, _, param = target[1][1].rpartition(".")
            definition = flow.defs.get(function)
            stored = flow.defs.get(value[1])
            if (
                definition is None or definition.kind != "function"
                or stored is None or stored.kind != "function" or not value[1].startswith(f"{function}.")
                or param not in {p for p, _ in definition.params}
                or (definition.method in ("instance", "class") and param == definition.params[0][0])
            ):
                continue
            parent = flow.defs.get(function.rpartition(".")[0])
            if parent is not None and parent.kind != "class":
                continue
            scopes = (function, *self.nested[file].get(function, ()))
            if any(flow.defs[s].kind == "class" for s in scopes[1:]):
                continue
            wrapping.setdefault(function, param)
        return wrapping
