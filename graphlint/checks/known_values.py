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
from collections.abc import Iterable
from collections.abc import Set as AbstractSet
from dataclasses import dataclass

from graphlint.checks import apis
from graphlint.checks.ast_children import child_nodes
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


class ChangedNames:
    """Two questions the walk asks of one file's tree, each nested statement's and definition's
    names found once. Called with a statement: the names it may bind or fill (bound or deleted,
    stored into: ``x[k] = v``, a method called on, handed to a call other than a builtin that
    only reads it, or read in a function or lambda defined in it). ``closure_names``: the names
    the functions, lambdas and classes defined in a function's body read or bind.

    The walk asks for a compound statement, then for each compound statement inside it, and for
    every function, then for each function inside it: walking every subtree again made each
    quadratic in the nesting (the first cost the flow facts a sixth of their time, the second a
    quarter). The union over a subtree is the union over its nested statements' (or
    definitions') subtrees and the rest, so a memoized answer stands for its subtree. Keyed by
    node identity: the file's tree outlives this object.
    """

    def __init__(self) -> None:
        self.memo: dict[int, frozenset[str]] = {}
        # id(definition) → the names it reads or binds (its Name nodes), and the others it binds
        # (``except E as e``, imports, ``global``, ``case [*rest]``): what it may change is both
        self.defined: dict[int, tuple[frozenset[str], frozenset[str]]] = {}

    def __call__(self, node: ast.AST) -> frozenset[str]:
        known = self.memo.get(id(node))
        if known is None:
            if isinstance(node, _DEFINING):  # every name in it counts: nothing to share
                read, bound = self._definition(node)
                known = read | bound
            else:
                known = frozenset(self._find(node))
            self.memo[id(node)] = known
        return known

    def _find(self, root: ast.AST) -> set[str]:
        found: set[str] = set()
        stack = [root]
        while stack:
            sub = stack.pop()
            if sub is not root and isinstance(sub, (ast.stmt, ast.Lambda)):
                found |= self(sub)
                continue
            _note_changed(sub, found)
            stack.extend(child_nodes(sub))
        return found

    def closure_names(self, definitions: Iterable[ast.AST]) -> set[str]:
        """The names read or bound in ``definitions``: the functions, lambdas and classes
        written in a function's body (``ScopeScan.defined``), any of which a call it makes may
        run."""
        found: set[str] = set()
        for definition in definitions:
            found |= self._definition(definition)[0]
        return found

    def _definition(self, root: ast.AST) -> tuple[frozenset[str], frozenset[str]]:
        known = self.defined.get(id(root))
        if known is not None:
            return known
        read: set[str] = set()
        bound: set[str] = set()
        stack = child_nodes(root)
        while stack:
            sub = stack.pop()
            sub_type = type(sub)
            if sub_type is ast.Name:
                read.add(sub.id)  # type: ignore[attr-defined]
                continue
            if sub_type in _DEFINING_TYPES:
                inner_read, inner_bound = self._definition(sub)
                read |= inner_read
                bound |= inner_bound
                continue
            if sub_type in _BINDING_TYPES:
                _note_changed(sub, bound)  # the other forms add Names, all of which are read
            stack.extend(child_nodes(sub))
        known = self.defined[id(root)] = (frozenset(read), frozenset(bound))
        return known


_DEFINING = (ast.FunctionDef, ast.AsyncFunctionDef, ast.Lambda, ast.ClassDef)
_DEFINING_TYPES = frozenset(_DEFINING)  # ast node types are final: ``type(node) in`` is isinstance
# what binds a name that is no Name node
_BINDING_TYPES = frozenset({ast.ExceptHandler, ast.MatchAs, ast.MatchStar, ast.Import, ast.ImportFrom, ast.Global, ast.Nonlocal})


def _note_changed(sub: ast.AST, found: set[str]) -> None:
    """What ``sub`` itself adds to the names a statement may bind or fill (a definition, which
    adds every name in it, is ``ChangedNames``' to answer)."""
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
    elif isinstance(sub, (ast.ExceptHandler, ast.MatchAs, ast.MatchStar)) and sub.name:
        found.add(sub.name)
    elif isinstance(sub, (ast.Import, ast.ImportFrom)):
        found.update(a.asname or a.name.split(".", 1)[0] for a in sub.names)
    elif isinstance(sub, (ast.Global, ast.Nonlocal)):
        found.update(sub.names)
