"""One file's ``ast`` → its half of the assignment graph (``facts.FlowFacts``).

In the spirit of PyCG (Salis et al., ICSE 2021): every name, attribute, parameter and return is a
node of the graph, and each statement says which values flow into which node: ``x = f(y)``
makes ``x`` receive what call ``f(y)`` returns; ``self.layer = layer`` in a method of ``Block``
makes ``Block.layer`` receive what the parameter ``layer`` receives. Names are resolved by Python's
own scoping rules (locals, closures, ``global``/``nonlocal``, class bodies), so a parameter never
reads a module-level name of the same spelling. What the calls mean is decided when the project
is linked (``valueflow.py``); this module only writes the file's statements down, which keeps
the result cacheable by the file's content.

The walk reads the ``ast`` tree (the one ``extract.py`` parses anyway): its nodes carry the
positions that number the calls the same way ``positions.py`` numbers libcst's.
"""

from __future__ import annotations

import ast
from collections import Counter
from collections.abc import Callable

from graphlint.checks.ast_children import child_nodes
from graphlint.checks.call_conditions import CallConditions
from graphlint.checks.facts import MODULE_SCOPE, Expr, FlowFacts, ImplicitCall
from graphlint.checks.flow_expressions import FlowExpressions, dotted, union
from graphlint.checks.flow_definitions import FlowDefinitions
from graphlint.checks.flow_scopes import FUNCTION_NODES, ScopeScan
from graphlint.checks.known_values import ChangedNames
from graphlint.checks.module_branches import Branch
from graphlint.checks.not_none_walk import NotNoneWalk
from graphlint.checks.return_guards import ReturnGuards
from graphlint.checks.returned_arguments import ReturnedArgumentsWalk
from graphlint.checks.self_tests import SelfTestsWalk


def flow_facts(
    tree: ast.Module, never_selected: Callable[[str], bool] | None = None, untaken: frozenset[Branch] = frozenset()
) -> FlowFacts:
    """``never_selected``: whether a dict key, as written (``PlatformEnum.CPU``), is one whose
    entry the checked devices never pick (``not-selected-keys``); ``untaken``: the module-level
    ``if`` branches the platform checked never runs, ``(id(ast.If), "body" | "orelse")``: the
    module-level bindings they make are left out (``module_branches.py``)."""
    return _FlowWalker(tree, never_selected, untaken).run()


class _FlowWalker(
    FlowDefinitions, ReturnGuards, ReturnedArgumentsWalk, CallConditions, SelfTestsWalk, NotNoneWalk, FlowExpressions
):
    def __init__(
        self, tree: ast.Module, never_selected: Callable[[str], bool] | None = None, untaken: frozenset[Branch] = frozenset()
    ) -> None:
        self.changed_names = ChangedNames()  # what each compound statement may bind or fill
        self.tree = tree
        self.never_selected = never_selected or (lambda key: False)
        self.untaken = untaken
        self.in_untaken = 0  # module-level branches the platform never runs open around here
        self.facts = FlowFacts()
        self.scan = ScopeScan.of(tree)
        calls = self.scan.calls
        self.ordinal = {id(node): index for index, node in enumerate(calls)}
        self.facts.calls = [None] * len(calls)
        self.scopes = []
        self.spreads = []
        self.bindings: Counter[str] = Counter()  # variable key → how many statements bind it
        # variable key → the value its first assignment wrote (looked up per call argument: a
        # scan of the assignments made so far was quadratic in the file's length)
        self.first_values: dict[str, Expr] = {}
        self.tuples: dict[str, list[Expr | None]] = {}  # variable key → the tuple display bound to it
        # variable key → the keywords of the ``dict(k=v)`` call or ``{"k": v}`` display bound to it
        self.dicts: dict[str, list[tuple[str, Expr | None]]] = {}
        self.keyword_spreads = []
        self.handed = set()
        # (function, parameter, classes) of each ``if isinstance(parameter, classes):`` around here
        self.guards: list[tuple[str, str, Expr]] = []
        self.annotated: Counter[str] = Counter()  # parameter key → annotations that bind it
        self.conditions: list[tuple[str, Expr, bool, bool]] = []  # the tests of the ``if``s around here
        self.loops: Counter[str] = Counter()  # function → the loops open around here
        self.self_tests: list[tuple[str, Expr, bool, int]] = []  # tests of ``self`` attributes around here
        self.self_keys: list[tuple[list, str]] = []

    def run(self) -> FlowFacts:
        module = self.scan.scope("module", MODULE_SCOPE, self.tree)
        self.scopes.append(module)
        self._statements(self.tree.body)
        self._spread_tuples()
        self._spread_dicts()
        self._keep_sound_guards()
        self._keep_sound_conditions()
        self._keep_sound_self_facts()
        return self.facts

    def _spread_tuples(self) -> None:
        """``args = (config, executor, stats); Client(*args)``: a local bound once, to a tuple
        display, hands its elements position by position (spread as one value, each element
        would reach every parameter)."""
        for ordinal, key in self.spreads:
            elements = self.tuples.get(key)
            site = self.facts.calls[ordinal]
            if elements is not None and self._local_bound_once(key) and site is not None:
                site.args.extend(elements)
                site.star, site.star_last = [], False

    def _spread_dicts(self) -> None:
        """``kwargs = dict(model=model, embed=embed); f(**kwargs)``: a local bound once, to a
        ``dict(k=v)`` call or a display with string keys, that no call is handed and no method of
        it is called (``update``, ``pop``: its keys may change), hands each value to its keyword
        (spread as one value, each would reach every parameter: sglang's multimodal embedding
        handed the model to the embedding layer's parameter, whose call then ran every model)."""
        for ordinal, key in self.keyword_spreads:
            keywords = self.dicts.get(key)
            site = self.facts.calls[ordinal]
            if keywords is not None and self._local_bound_once(key) and key not in self.handed and site is not None:
                site.keywords.extend(keywords)
                site.double_star = []

    def _local_bound_once(self, key: str) -> bool:
        """Whether the local ``key`` (``"f.x"``) is bound once in its function and is none of its
        parameters (a parameter holds whatever each caller hands)."""
        function, _, name = key.rpartition(".")
        definition = self.facts.defs.get(function)
        parameter = definition is not None and any(p == name for p, _ in definition.params)
        return self.bindings[key] == 1 and not parameter

    def _store(self, name: str) -> Expr:
        scope = self.scope
        if name in scope.globals:
            return ["v", name]
        if name in scope.nonlocals:
            for outer in reversed(self.scopes[:-1]):
                if outer.kind == "function" and name in outer.locals:
                    return ["v", outer.key(name)]
        return ["v", scope.key(name)]

    def _assign(self, target: Expr | None, value: Expr | None) -> None:
        if self.in_untaken and self.scope.kind == "module":  # never bound on the platform checked
            return
        if target is not None and target[0] == "v":
            self.bindings[target[1]] += 1
        if target is not None and value is not None:
            self.facts.assigns.append((target, value))
            if target[0] == "v":
                self.first_values.setdefault(target[1], value)

    # ---- statements -------------------------------------------------------------------------
    def _statements(self, body: list[ast.stmt]) -> None:
        pushed = 0
        conditioned = len(self.conditions)
        for statement in body:
            self._statement(statement)
            if _exits_without_else(statement):  # what follows runs where the test is false
                self._push_condition(statement.test, False)  # type: ignore[attr-defined]
            # ``if obj: return decorator(obj)`` then ``return decorator``: what follows runs only
            # when ``obj`` is falsy (a decorator with optional arguments, used bare or called)
            # ``if not isinstance(layer, LinearBase): return None``: what follows runs for a linear layer
            guard = (
                self._falsy_guard(statement.test, negated=False) or self._isinstance_guard(statement.test, negated=True)  # type: ignore[attr-defined]
                if _returns_without_else(statement) else None
            )
            if guard is not None:
                self.guards.append(guard)
                pushed += 1
        del self.guards[len(self.guards) - pushed :]
        del self.conditions[conditioned:]

    def _statement(self, node: ast.stmt) -> None:
        if isinstance(node, FUNCTION_NODES):
            self._function(node)
        elif isinstance(node, ast.ClassDef):
            self._class(node)
        elif isinstance(node, ast.Assign):
            self._assignment(node.targets, node.value)
        elif isinstance(node, (ast.AnnAssign, ast.AugAssign)):
            if node.value is not None:
                # ``x += v`` stores what ``x.__iadd__(v)`` returns, not ``v``
                self._assignment([node.target], node.value, plain=isinstance(node, ast.AnnAssign))
            if isinstance(node, ast.AnnAssign) and self.scope.kind == "class" and isinstance(node.target, ast.Name):
                # a dataclass (attrs, pydantic) field, its default or not: a generated __init__
                # stores what the caller hands in
                self._note_store(self._store(node.target.id), None)
        elif isinstance(node, (ast.For, ast.AsyncFor)):
            self.scope.known.forget(self.changed_names(node))
            self._bind_loop(node.target, node.iter)
            self.loops[self.function_scope.qualname] += 1
            self._statements(node.body)
            self.loops[self.function_scope.qualname] -= 1
            self._statements(node.orelse)
        elif isinstance(node, (ast.With, ast.AsyncWith)):
            self.scope.known.forget(self.changed_names(node))
            for item in node.items:
                value = self._expr(item.context_expr)
                if item.optional_vars is not None:
                    self._bind_target(item.optional_vars, value)
            self._statements(node.body)
        elif isinstance(node, ast.Import):
            for alias in node.names:
                if alias.asname:
                    self._assign(self._store(alias.asname), ["g", alias.name])
                else:
                    head = alias.name.split(".", 1)[0]
                    self._assign(self._store(head), ["g", head])
        elif isinstance(node, ast.ImportFrom):
            base = "." * node.level + (node.module or "")
            for alias in node.names:
                if alias.name == "*":
                    self.facts.star_imports.append(base)
                    continue
                # ``from pkg import name`` reads the package's attribute: what its ``__init__``
                # binds to ``name`` (``from .docs import docs`` there makes it the function), else
                # the submodule; never the submodule alone, as ``import pkg.name as x`` does.
                self._assign(self._store(alias.asname or alias.name), ["a", ["g", base], alias.name])
        elif isinstance(node, ast.Raise) and isinstance(node.exc, (ast.Name, ast.Attribute)):
            self._implicit("raise", self._expr(node.exc))  # raise Error: Error() is constructed
            if node.cause is not None:
                self._expr(node.cause)
        elif isinstance(node, ast.Return):
            if node.value is not None:
                if isinstance(node.value, ast.Name):
                    self._return(self.scope.known.returned(node.value.id) or self._expr(node.value))
                else:
                    self._return_branches(node.value)
        elif isinstance(node, ast.If):
            self.scope.known.forget(self.changed_names(node))
            self._expr(node.test)
            guard = self._isinstance_guard(node.test) or self._falsy_guard(node.test, negated=True)
            if guard is not None:
                self.guards.append(guard)
            conditioned = self._push_condition(node.test, True)
            tested = self._push_self_tests(node.test, True)
            self._branch(node, "body")
            self._pop_self_tests(tested)
            if conditioned:
                self.conditions.pop()
            if guard is not None:
                self.guards.pop()
            self.scope.known.forget(self.changed_names(node))  # the else does not see the body's bindings
            otherwise = self._isinstance_guard(node.test, negated=True) if node.orelse else None  # type: ignore[attr-defined]
            if otherwise is not None:
                self.guards.append(otherwise)
            conditioned = bool(node.orelse) and self._push_condition(node.test, False)
            tested = self._push_self_tests(node.test, False) if node.orelse else 0
            self._branch(node, "orelse")
            self._pop_self_tests(tested)
            if conditioned:
                self.conditions.pop()
            if otherwise is not None:
                self.guards.pop()
        elif isinstance(node, (ast.Global, ast.Nonlocal, ast.Pass, ast.Break, ast.Continue)):
            return
        else:  # if / while / try / match / expressions / raise / assert / del: their parts
            compound = not isinstance(node, (ast.Expr, ast.Assert, ast.Raise, ast.Delete))
            if compound:
                self.scope.known.forget(self.changed_names(node))
            looping = isinstance(node, ast.While)
            self.loops[self.function_scope.qualname] += looping
            self._parts(node)
            self.loops[self.function_scope.qualname] -= looping
            if compound:
                self.scope.known.forget(self.changed_names(node))
            return
        if isinstance(node, (ast.For, ast.AsyncFor, ast.With, ast.AsyncWith, ast.AugAssign, ast.If)):
            self.scope.known.forget(self.changed_names(node))

    def _branch(self, node: ast.If, part: str) -> None:
        """The statements of one branch of an ``if``, what it binds at module level left out
        where the platform never runs it (``untaken``)."""
        untaken = (id(node), part) in self.untaken
        self.in_untaken += untaken
        self._statements(node.body if part == "body" else node.orelse)
        self.in_untaken -= untaken

    def _parts(self, node: ast.stmt) -> None:
        """The parts of a compound statement in order; each block (a ``try``'s body, a handler,
        the ``else``, a ``match`` case) starts from what holds before the statement, as any of
        them may run without the ones before it."""
        changed = self.changed_names(node)
        for _, value in ast.iter_fields(node):
            block = value if isinstance(value, list) else [value]
            for child in block:
                if isinstance(child, ast.stmt):
                    self._statement(child)
                elif isinstance(child, ast.expr):
                    self._expr(child)
                elif isinstance(child, (ast.excepthandler, ast.match_case)):
                    self.scope.known.forget(changed)
                    for part in child_nodes(child):
                        if isinstance(part, ast.stmt):
                            self._statement(part)
                        elif isinstance(part, ast.expr):
                            self._expr(part)
            if any(isinstance(child, ast.stmt) for child in block):
                self.scope.known.forget(changed)

    def _implicit(self, kind: str, value: Expr | None) -> Expr | None:
        if value is None:
            return None
        self.facts.implicit.append(ImplicitCall(self.function_scope.qualname, kind, value))  # type: ignore[arg-type]
        return ["it", len(self.facts.implicit) - 1]

    def _iterate(self, iterable: Expr | None) -> Expr | None:
        """What a loop variable holds: the elements of a (transparent) container, or what the
        iterator protocol of an instance returns."""
        return union([iterable, self._implicit("iterate", iterable)])

    def _assignment(self, targets: list[ast.expr], value_node: ast.expr, plain: bool = True) -> None:
        pairwise = [
            t for t in targets
            if isinstance(t, (ast.Tuple, ast.List)) and _unpacks_pairwise(t, value_node)
        ]
        if not pairwise:
            value = self._expr(value_node)
            if isinstance(value_node, ast.Call):
                self._note_rebinding(targets, value_node)
            for target in targets:
                self._bind_target(target, value, value_node if plain else None)
            return
        elements = [self._expr(e) for e in value_node.elts]  # type: ignore[attr-defined]
        for target in targets:
            if target in pairwise:  # a, b = f, g: each name its own value
                for part, element, node in zip(target.elts, elements, value_node.elts):  # type: ignore[attr-defined]
                    self._bind_target(part, element, node)
            else:
                self._bind_target(target, union(elements))

    def _note_rebinding(self, targets: list[ast.expr], call: ast.Call) -> None:
        """``self.model = Wrapper(self.model, ...)``: the argument holds what the target held
        *before* this statement, never what the call makes (the graph alone cannot tell, as it
        does not follow the order of statements)."""
        written = {dotted(t) for t in targets} - {None}
        if not written:
            return
        site = self.facts.calls[self.ordinal[id(call)]]
        assert site is not None
        after_super = self.function_scope.after_super
        if after_super is not None and id(call) in after_super[1]:
            site.after_super = after_super[0]
        positional = [arg for arg in call.args if not isinstance(arg, ast.Starred)]  # as ``site.args``
        site.rebinds = [i for i, arg in enumerate(positional) if dotted(arg) in written] + [
            k.arg for k in call.keywords if k.arg is not None and dotted(k.value) in written
        ]

    def _bind_target(self, target: ast.expr, value: Expr | None, node: ast.expr | None = None) -> None:
        if isinstance(target, ast.Name):
            stored = self._store(target.id)
            self._assign(stored, value)
            if self.scope.kind == "class":
                self._note_store(stored, node)
                self._note_self_store(stored[1], target.lineno, node)
            if isinstance(node, ast.Tuple) and id(node) in self.scope.known.literals:
                known = self.scope.known.literals[id(node)]
                self.tuples[stored[1]] = [known[i].value for i in range(len(node.elts))]
            self._note_dict(stored[1], node)
            plain = target.id in self.scope.locals and not {target.id} & (self.scope.globals | self.scope.nonlocals)
            if plain:
                self.scope.known.bind(target.id, value, node)
        elif isinstance(target, ast.Attribute):
            attribute = self._attribute_target(target)
            self._assign(attribute, value)
            self._note_store(attribute, node)
            if self._is_self(target.value):
                self._note_self_store(f"{self.function_scope.class_name}.{target.attr}", target.lineno, node)
        elif isinstance(target, (ast.Tuple, ast.List)):
            for element in target.elts:
                self._bind_target(element, value)
        elif isinstance(target, ast.Starred):
            self._bind_target(target.value, value)
        elif isinstance(target, ast.Subscript):  # d[k] = v: the container holds v
            self._expr(target.slice)
            self.scope.known.store(target, value, node)
            self._fill(target.value, value)

    def _note_dict(self, key: str, node: ast.expr | None) -> None:
        """Remember the keywords of a ``dict(k=v)`` call of the builtin or of a ``{"k": v}``
        display bound to the variable ``key`` (``_spread_dicts``)."""
        if isinstance(node, ast.Dict) and id(node) in self.scope.known.literals:
            known = self.scope.known.literals[id(node)]
            if len(known) == len(node.keys) and all(isinstance(k, str) for k in known):
                self.dicts[key] = [(k, e.value) for k, e in known.items()]  # type: ignore[misc]
        elif isinstance(node, ast.Call) and isinstance(node.func, ast.Name) and not node.args:
            site = self.facts.calls[self.ordinal[id(node)]]
            if site is not None and site.callee == ["x", "dict"] and all(k.arg is not None for k in node.keywords):
                self.dicts[key] = list(site.keywords)  # type: ignore[arg-type]

    def _fill(self, container: ast.expr, value: Expr | None) -> None:
        """``container`` (a name, attribute or element of one) now also holds ``value``."""
        if isinstance(container, ast.Subscript):
            self._fill(container.value, value)
        elif isinstance(container, ast.Name):
            target = self._load(container.id)  # the variable it names (or the one it aliases)
            if target[0] in ("v", "a"):
                self._assign(target, value)
        elif isinstance(container, ast.Attribute):
            self._assign(self._attribute_target(container), value)

    def _attribute_target(self, target: ast.Attribute) -> Expr | None:
        owner = target.value
        scope = self.function_scope
        if isinstance(owner, ast.Name) and owner.id == scope.self_name and scope.class_name is not None:
            return ["v", f"{scope.class_name}.{target.attr}"]  # self.x: the class's namespace
        base = self._expr(owner)
        return ["a", base, target.attr] if base is not None else None


def _unpacks_pairwise(target: ast.Tuple | ast.List, value: ast.expr) -> bool:
    return (
        isinstance(value, (ast.Tuple, ast.List))
        and len(target.elts) == len(value.elts)
        and not any(isinstance(e, ast.Starred) for e in (*target.elts, *value.elts))
    )


def _exits_without_else(statement: ast.stmt) -> bool:
    """``if test: ... return`` (or ``raise``) with no ``else``."""
    return isinstance(statement, ast.If) and not statement.orelse and isinstance(statement.body[-1], (ast.Return, ast.Raise))


def _returns_without_else(statement: ast.stmt) -> bool:
    return isinstance(statement, ast.If) and not statement.orelse and isinstance(statement.body[-1], ast.Return)
