"""Parameter defaults in the value graph: a default flows into its parameter only where it can be
the value, not at every call.

``def __init__(self, layer_type=LlamaDecoderLayer)`` in a base that every model calls with its
own ``layer_type=`` never builds a ``LlamaDecoderLayer`` for them; as a plain assignment, the
default reached every call and compiled one model's layers from every other model. A default
flows into its parameter (in the method's copy for a receiver class where it has one,
``receiver_copies.py``):

- at a call that leaves the argument out, or may (a ``*xs`` or ``**kw`` graphlint cannot
  count, an entry point's framework call, an outside caller modelled as one);
- for a function no call in the project binds at the end of the solve: what calls it (a
  framework, a registry, a user) is out of sight, so it is called with its defaults; and for a
  class no call of the project constructs, whose ``__init__`` (in its copy for that class) runs
  with its defaults: a registry builds it by name (vLLM's ``InternLM2ForCausalLM(...,
  model_type=InternLM2Model)``, whose subclass's ``super().__init__(model_type=...)`` is in
  sight, its own construction not);
- for a function, bound method or class handed to a call outside the project
  (``register_forward_hook(fn)``, ``executor.submit(fn)``): that call may call it with them.

Defaults are written down per function by the walk (``facts.FlowFacts.defaults``), evaluated
where the ``def`` stands. A mixin of the solver.
"""

from __future__ import annotations

from collections.abc import Callable
from functools import cached_property
from typing import Any

from graphlint.checks.receiver_copies import MethodCopy
from graphlint.checks.value_graph import CallArgs, Obj, ValueGraph

Params = list[tuple[str, str]]


class ParameterDefaults(ValueGraph):
    files: Any
    classes: Any
    flow: Callable[[int], Any]
    compile: Callable[..., int | None]
    bound_functions: set[tuple[int, str]]  # (file, qualname) some call has bound
    defaulted: set[tuple[int, str]]  # (file, variables' prefix) given all their defaults
    outside_arguments: list[CallArgs]  # of the calls outside the project
    constructed: set[tuple[int, str]]  # (file, class) some call of the project constructs

    def bind_defaults(self, file: int, qualname: str, prefix: str, params: Params, args: CallArgs, copy: MethodCopy | None) -> None:
        """The defaults of the parameters this call leaves out, or may, into ``prefix``'s
        parameters (the function's, or its copy's)."""
        self.bound_functions.add((file, qualname))
        for param, default in self.flow(file).defaults.get(qualname, ()):
            if may_leave_out(params, args, param):
                self._default(file, prefix, param, default, copy)

    def _default(self, file: int, prefix: str, param: str, default: Any, copy: MethodCopy | None) -> None:
        value = self.compile(file, default if copy is None else copy.expr(default))
        self.edge(value, self.variable(file, f"{prefix}.{param}"))

    def _all_defaults(self, file: int, qualname: str, prefix: str, copy: MethodCopy | None) -> bool:
        if (file, prefix) in self.defaulted or qualname not in self.flow(file).defaults:
            return False
        self.defaulted.add((file, prefix))
        for param, default in self.flow(file).defaults[qualname]:
            self._default(file, prefix, param, default, copy)
        return True

    def unseen_defaults(self) -> bool:
        """At the fixed point: the defaults of the functions no call bound and of those handed
        to outside calls. True when some were added (the graph must propagate again)."""
        added = False
        for file, linked in enumerate(self.files):
            for qualname in linked.facts.flow.defaults:
                if (file, qualname) not in self.bound_functions:
                    added |= self._all_defaults(file, qualname, qualname, None)
            for qualname, definition in linked.facts.flow.defs.items():
                if definition.kind == "class" and (file, qualname) not in self.constructed:
                    added |= self._escaped(("C", file, qualname))
        for args in self.outside_arguments:
            for node in (*args.positional, *args.star, *(n for _, n in args.keywords), *args.double_star):
                for obj in list(self.values[node]) if node is not None else ():
                    added |= self._escaped(obj)
        return added

    def _escaped(self, obj: Obj) -> bool:
        """``obj``, handed to an outside call, may be called there with its defaults."""
        if obj[0] == "F" and len(obj) == 3:
            return self._all_defaults(obj[1], obj[2], obj[2], None)
        if obj[0] == "B" and len(obj[1]) == 3 and obj[1][2] in self.flow(obj[1][1]).defaults:
            function, receiver = obj[1], obj[2]
            copy = self.copy_for(function, receiver)  # type: ignore[attr-defined]
            prefix = function[2] if copy is None else copy.rename(function[2])
            return self._all_defaults(function[1], function[2], prefix, copy)
        if obj[0] == "C":
            init = next((k for k in self.classes.mro(obj) if k[0] == "C" and f"{k[2]}.__init__" in self.flow(k[1]).defs), None)
            return init is not None and self._escaped(("B", ("F", init[1], f"{init[2]}.__init__"), ("I", obj[1], obj[2])))
        return False

    @cached_property
    def defaulted_parameters(self) -> list[set[str]]:
        """Per file, the parameters a default binds (they are not returned as given)."""
        return [
            {f"{qualname}.{param}" for qualname, defaults in linked.facts.flow.defaults.items() for param, _ in defaults}
            for linked in self.files
        ]


def may_leave_out(params: Params, args: CallArgs, name: str) -> bool:
    """Whether a call may leave parameter ``name`` at its default: no argument is written for it,
    and none may come through a ``*xs`` / ``**kw`` it cannot count."""
    positional = [p for p, kind in params if kind in ("o", "p")]
    if name in positional and positional.index(name) < len(args.positional):
        return False
    if any(keyword == name for keyword, _ in args.keywords):
        return False
    return True
