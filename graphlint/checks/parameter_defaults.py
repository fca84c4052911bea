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
from typing import Any

from graphlint.checks.file_tables import per_file
from graphlint.checks.receiver_copies import MAX_RECEIVER_CLASSES, MethodCopy, receiver_context
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
        return self.handed_out_defaults() or added

    def handed_out_defaults(self, since: int = 0) -> bool:
        """``unseen_defaults`` of what the outside calls from the ``since``-th on were handed
        (an extended solve's new calls, ``incremental_solve.py``: the others gave theirs)."""
        added = False
        for args in self.outside_arguments[since:]:
            for node in args.nodes():
                for obj in list(self.values[node]):
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

    def called_unseen(self) -> set[tuple[int, str, str]]:
        """At the end of the solve: (file, qualname, copy; ``"*"`` every copy) of the functions
        something out of graphlint's sight may call, with arguments it does not see: an entry
        point's targets (the framework calls them), decorators, ``raise`` and iteration, a
        function, bound method or class handed to a call outside the project, the ``__init__``
        of a class no call of the project constructs (and its methods), and what a saturated
        value set refused (the calls through it are not all seen)."""
        unseen: set[tuple[int, str, str]] = set()
        for key, targets in self.graph.copies.items():
            if key[0] == "entry":
                unseen.update((t.file, t.qualname, copy) for (t, copy) in targets if not isinstance(t, str))
        for targets in (*self.graph.entry_targets.values(), *self.graph.implicit_calls.values()):
            unseen.update((t.file, t.qualname, "*") for t in targets if not isinstance(t, str))
        unseen |= self.handed_out_unseen()
        for file, linked in enumerate(self.files):
            for qualname, definition in linked.facts.flow.defs.items():
                if definition.kind == "class" and (file, qualname) not in self.constructed:
                    unseen.update(self._callable_unseen(("C", file, qualname), protocols_only=True))
        for obj in self.refused:
            unseen.update(self._callable_unseen(obj, protocols_only=False))
        return unseen

    def handed_out_unseen(self, since: int = 0) -> set[tuple[int, str, str]]:
        """``called_unseen`` of what the outside calls from the ``since``-th on were handed."""
        handed_out = {obj for args in self.outside_arguments[since:] for node in args.nodes() for obj in self.values[node]}
        return {found for obj in handed_out for found in self._callable_unseen(obj, protocols_only=True)}

    def _callable_unseen(self, obj: Obj, protocols_only: bool) -> list[tuple[int, str, str]]:
        """The functions (and copies) calling ``obj`` may run: a function, a bound method; for a
        class or an instance, per method name the first definition in its MRO (a later one runs
        only through a ``super()`` call in sight). Outside code (``protocols_only``) knows a
        project object's methods only by the protocols it calls, the dunder methods: a class's
        ``__init__``, an instance's ``__call__`` or ``__iter__``; a library does not call
        ``dispatch_forward`` by name. The project's own code, where a saturated set refused the
        object, may call any of them."""
        if obj[0] == "F":
            return [(obj[1], obj[2], "*")]
        if obj[0] == "B" and obj[1][0] == "F":
            file, qualname = obj[1][1], obj[1][2]
            if len(obj[1]) > 3 or obj[2][0] not in ("I", "C") or qualname not in self.copied_methods[file]:  # type: ignore[attr-defined]
                return [(file, qualname, "*" if len(obj[1]) > 3 else "")]
            # that class's copy; none is made now: past the copies' bound, the method's own body
            context = receiver_context(obj[2])
            made = (file, f"{qualname}{context}") in self.copies  # type: ignore[attr-defined]
            full = self.copy_counts.get((file, qualname), 0) >= MAX_RECEIVER_CLASSES  # type: ignore[attr-defined]
            return [(file, qualname, "" if full and not made else context)]
        if obj[0] not in ("C", "I"):
            return []
        receiver = ("I", obj[1], obj[2])
        first: dict[str, tuple[int, str]] = {}
        for k in self.classes.mro(("C", obj[1], obj[2])):
            for qualname in self.methods[k[1]].get(k[2], ()) if k[0] == "C" else ():
                name = qualname.rpartition(".")[2]
                dunder = name.startswith("__") and name.endswith("__")
                if protocols_only and not (dunder and (obj[0] == "C" or name not in ("__init__", "__new__"))):
                    continue
                first.setdefault(name, (k[1], qualname))
        return [found for file, qualname in first.values() for found in self._callable_unseen(("B", ("F", file, qualname), receiver), protocols_only)]

    @per_file
    def methods(self, file: int) -> dict[str, list[str]]:
        """Per file, class → the functions defined in its body (and nested in them)."""
        defs = self.files[file].facts.flow.defs
        classes: dict[str, list[str]] = {}
        for qualname, definition in defs.items():
            owner = qualname.rpartition(".")[0]
            while owner and owner not in defs:
                owner = owner.rpartition(".")[0]
            if definition.kind == "function" and owner and defs[owner].kind == "class":
                classes.setdefault(owner, []).append(qualname)
        return classes

    @per_file
    def defaulted_parameters(self, file: int) -> set[str]:
        """Per file, the parameters a default binds (they are not returned as given)."""
        defaults = self.files[file].facts.flow.defaults
        return {f"{qualname}.{param}" for qualname, given in defaults.items() for param, _ in given}


def may_leave_out(params: Params, args: CallArgs, name: str) -> bool:
    """Whether a call may leave parameter ``name`` at its default: no argument is written for it,
    and none may come through a ``*xs`` / ``**kw`` it cannot count."""
    positional = [p for p, kind in params if kind in ("o", "p")]
    if name in positional and positional.index(name) < len(args.positional):
        return False
    if any(keyword == name for keyword, _ in args.keywords):
        return False
    return True
