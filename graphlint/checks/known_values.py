"""What straight-line code says for certain: the last plain value of a name, and the elements of
a literal container by constant key.

The assignment graph is flow-insensitive: a name holds every value ever assigned to it. Within
one scope, statement after statement, Python is more exact, and so is this: after
``a = dec1; a = dec2`` the name ``a`` is ``dec2``; after ``d = {"a": f}; d["a"] = g``,
``d["a"]`` is ``g``; ``ls[1:3][0]`` is ``ls[1]``. What is known is forgotten where it may stop
being true: at the start and end of every compound statement (a branch, a loop, ``try``), when the
name is rebound in another way, handed to a call, or has a method called on it (``update`` with a
literal is followed). A name keeps its last value only when that value is itself a name, an
attribute or a definition: what a call returns may be a container that something else fills.
Reads from other scopes (a function defined here runs later) see the whole graph.

One exception, where no filling can come between: ``x = f(...)`` then ``return x`` returns what
that call made, not every value ``x`` ever held (``cu = torch.arange(..., device="cpu"); return
cu`` in a branch of a function whose parameter is also ``cu`` returns a host tensor only; vLLM's
ModelOpt config binds ``quant_method`` to a linear method in one ``isinstance`` branch and to a
MoE method in the other, and returns it from each). That holds until ``x`` may hold something
else: a statement binds it, stores into it (``x[k] = v``), calls a method on it, or hands it to a
call that is not a builtin that only reads it; a compound statement that may do any of these (or
whose branch bound it: the ``else`` does not see the body's binding); any call, where ``x`` is
global, nonlocal, or read by a function or lambda defined in the function (a closure the call may
run, which fills or rebinds it). An attribute store (``x.backend = ...``) changes what ``x``'s
object holds, not what ``x`` is.
"""

from __future__ import annotations

import ast
from collections.abc import Set as AbstractSet
from dataclasses import dataclass

from graphlint.checks import apis
from graphlint.checks.facts import Expr

Key = object  # a constant: an int index or a dict key


@dataclass
class Element:
    value: Expr | None
    keys: dict[Key, "Element"] | None = None  # the literal container's elements, when known
    made: Expr | None = None  # the call that made it, bound just now (``returned``)


class KnownValues:
    """One scope's knowledge, kept by the walk of ``assignments.py``."""

    def __init__(self) -> None:
        self.names: dict[str, Element] = {}
        self.literals: dict[int, dict[Key, Element]] = {}  # id(literal node) → its elements
        # names any call may fill or rebind: global, nonlocal, or read by a nested function
        self.shared: set[str] = set()

    def forget(self, changed: AbstractSet[str] | None = None) -> None:
        """Everything, but for what a call made (``returned``) of a name not in ``changed``
        (what a compound statement may bind or fill) when that is given."""
        if changed is None:
            self.names.clear()
            return
        self.names = {
            name: Element(None, made=known.made)
            for name, known in self.names.items()
            if known.made is not None and name not in changed and name not in self.shared
        }

    def literal(self, node: ast.expr, elements: list[Expr | None], keys: list[ast.expr | None] | None = None) -> None:
        """A list, tuple or dict literal was evaluated: remember its elements by key."""
        nodes = node.elts if keys is None else node.values  # type: ignore[attr-defined]
        found: dict[Key, Element] = {}
        for index, (element_node, value) in enumerate(zip(nodes, elements)):
            if keys is None:
                if isinstance(element_node, ast.Starred):
                    return  # the positions after it are not known
                key: Key = index
            else:
                key_node = keys[index]
                if not isinstance(key_node, ast.Constant):
                    return
                key = key_node.value
            found[key] = Element(value, self.literals.get(id(element_node)))
        self.literals[id(node)] = found

    def bind(self, name: str, value: Expr | None, node: ast.expr | None) -> None:
        if node is not None and isinstance(node, (ast.Name, ast.Attribute, ast.Lambda)):
            self.names[name] = Element(value)
        elif node is not None and id(node) in self.literals:
            self.names[name] = Element(None, self.literals[id(node)])
        elif isinstance(node, ast.Subscript) and (element := self.element(node)) is not None and element.keys is not None:
            self.names[name] = Element(None, dict(element.keys))  # ls2 = ls[1:3]
        elif isinstance(node, ast.Call) and value is not None and value[0] == "c":
            self.names[name] = Element(None, made=value)
        else:
            self.names.pop(name, None)

    def called(self) -> None:
        """A call is evaluated: it may fill or rebind a name it can reach (``shared``)."""
        for name in [n for n, known in self.names.items() if known.made is not None and n in self.shared]:
            del self.names[name]

    def returned(self, name: str) -> Expr | None:
        """What ``return name`` hands back, when the call that made it is known (see above)."""
        known = self.names.get(name)
        return known.made if known is not None else None

    def alias(self, name: str) -> Expr | None:
        known = self.names.get(name)
        return known.value if known is not None else None

    def element(self, node: ast.expr) -> Element | None:
        """The known element ``node`` (``d["a"]``, ``ls[0][1]``, ``ls[1:3]``) reads, if any."""
        if isinstance(node, ast.Name):
            return self.names.get(node.id)
        if not isinstance(node, ast.Subscript):
            return None
        parent = self.element(node.value)
        if parent is None or parent.keys is None:
            return None
        index = node.slice
        if isinstance(index, ast.Constant):
            return parent.keys.get(index.value)
        if isinstance(index, ast.Slice) and index.step is None and all(
            part is None or (isinstance(part, ast.Constant) and type(part.value) is int) for part in (index.lower, index.upper)
        ):
            ordered = [parent.keys[i] for i in sorted(k for k in parent.keys if type(k) is int)]
            start = index.lower.value if index.lower is not None else None  # type: ignore[union-attr]
            stop = index.upper.value if index.upper is not None else None  # type: ignore[union-attr]
            return Element(None, dict(enumerate(ordered[start:stop])))
        return None

    def store(self, target: ast.Subscript, value: Expr | None, node: ast.expr | None) -> None:
        """``d[k] = v``: the element is ``v`` from now on (when ``d`` is known)."""
        parent = self.element(target.value)
        if parent is not None and parent.made is not None:
            del self.names[target.value.id]  # type: ignore[attr-defined]  # x[k] = v fills what x holds
            return
        if parent is None or parent.keys is None:
            return
        if isinstance(target.slice, ast.Constant):
            keys = self.literals.get(id(node)) if node is not None else None
            parent.keys[target.slice.value] = Element(value, keys)
        else:
            parent.keys = None

    def touched(self, name: str, method: str | None = None, argument: ast.expr | None = None) -> None:
        """The name was handed to a call, or had ``method`` called on it."""
        known = self.names.get(name)
        if known is None:
            return
        if method == "update" and known.keys is not None and argument is not None and id(argument) in self.literals:
            known.keys.update(self.literals[id(argument)])
            return
        if method in ("get", "keys", "values", "items", "copy", "index", "count"):
            return
        self.names.pop(name, None)


def changed_names(node: ast.AST) -> set[str]:
    """The names a statement may bind or fill: bound or deleted, stored into (``x[k] = v``), a
    method called on, handed to a call other than a builtin that only reads it, or read in a
    function or lambda defined in it."""
    found: set[str] = set()
    for sub in ast.walk(node):
        _note_changed(sub, found)
    return found


class ChangedNames:
    """``changed_names`` for the statements of one file, each nested statement's names found
    once: the walk asks for a compound statement, then for each compound statement inside it,
    which walking every subtree again made quadratic in the nesting (a tenth of a cold check's
    CPU). The union over a subtree is the union over its statements' subtrees and the rest, so
    a nested statement's memoized answer stands for its subtree. Keyed by node identity: the
    file's tree outlives this object."""

    def __init__(self) -> None:
        self.memo: dict[int, frozenset[str]] = {}

    def __call__(self, node: ast.AST) -> frozenset[str]:
        known = self.memo.get(id(node))
        if known is None:
            known = self.memo[id(node)] = frozenset(self._find(node))
        return known

    def _find(self, root: ast.AST) -> set[str]:
        if isinstance(root, _DEFINING):
            return changed_names(root)  # every name in it counts: nothing to share
        found: set[str] = set()
        stack = [root]
        while stack:
            sub = stack.pop()
            if sub is not root and isinstance(sub, (ast.stmt, ast.Lambda)):
                found |= self(sub)
                continue
            _note_changed(sub, found)
            stack.extend(ast.iter_child_nodes(sub))
        return found


_DEFINING = (ast.FunctionDef, ast.AsyncFunctionDef, ast.Lambda, ast.ClassDef)


def _note_changed(sub: ast.AST, found: set[str]) -> None:
    """What ``sub`` itself adds to ``changed_names`` (a definition: every name in it)."""
    if isinstance(sub, ast.Name) and isinstance(sub.ctx, (ast.Store, ast.Del)):
        found.add(sub.id)
    elif isinstance(sub, ast.Subscript) and isinstance(sub.ctx, (ast.Store, ast.Del)) and isinstance(sub.value, ast.Name):
        found.add(sub.value.id)
    elif isinstance(sub, ast.Call):
        if isinstance(sub.func, ast.Attribute) and isinstance(sub.func.value, ast.Name):
            found.add(sub.func.value.id)
        if not (isinstance(sub.func, ast.Name) and sub.func.id in apis.READS_ITS_ARGUMENTS):
            for arg in (*sub.args, *(k.value for k in sub.keywords)):
                inner = arg.value if isinstance(arg, ast.Starred) else arg
                if isinstance(inner, ast.Name):
                    found.add(inner.id)
    elif isinstance(sub, _DEFINING):
        found.update(n.id for n in ast.walk(sub) if isinstance(n, ast.Name))
    elif isinstance(sub, (ast.ExceptHandler, ast.MatchAs, ast.MatchStar)) and sub.name:
        found.add(sub.name)
    elif isinstance(sub, (ast.Import, ast.ImportFrom)):
        found.update(a.asname or a.name.split(".", 1)[0] for a in sub.names)
    elif isinstance(sub, (ast.Global, ast.Nonlocal)):
        found.update(sub.names)


def closure_names(node: ast.FunctionDef | ast.AsyncFunctionDef | ast.Lambda) -> set[str]:
    """The names read or bound in the functions, lambdas and classes defined in ``node``'s body."""
    body = node.body if isinstance(node.body, list) else [node.body]
    return {
        n.id
        for statement in body
        for sub in ast.walk(statement)
        if isinstance(sub, (ast.FunctionDef, ast.AsyncFunctionDef, ast.Lambda, ast.ClassDef))
        for n in ast.walk(sub)
        if isinstance(n, ast.Name)
    }
