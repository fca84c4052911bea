"""Values that are never None, decided when the project is linked, from what the walk wrote
down (``not_none_walk.py``).

vLLM's ``QuantFP8.__init__`` stores ``self.use_ue8m0 = is_deep_gemm_e8m0_used() if use_ue8m0 is
None else use_ue8m0`` (never None: the function is annotated ``-> bool``, under
``functools.cache``, and the other branch is the parameter narrowed), and ``forward_cuda`` hands
``use_ue8m0=self.use_ue8m0`` to ``per_token_group_quant_fp8``, whose ``if use_ue8m0 is None:
use_ue8m0 = is_deep_gemm_e8m0_used()`` then never runs from that call.

A value expression is never None here when it is:
- a parameter of the function, in the copy at hand, that every call of that copy hands a value
  never None (``parameter_constants.py``, which asks this module about each argument);
- ``self.x`` in a method of class ``C`` (``self`` its first parameter, nothing rebinds it) where
  every store of an attribute or class variable named ``x`` in the whole project is ``self.x =
  ...`` in a method of ``C`` itself (or ``x = ...`` in ``C``'s body) of a value never None, and
  no function or property of any class is named ``x``. A store elsewhere (a subclass, another
  object's ``obj.x = ...``, ``setattr(obj, "x", ...)``, a dataclass field ``x: T``) or of a
  value judged by a parameter (which copy of the storing method?) may be None;
- what a call returns, where every function the call runs is the project's and says so by its
  return annotation (``-> bool``), the call runs nothing else, and it builds no class.
Unknown is "may be None". Known limits: a computed ``setattr``, ``__dict__`` and
``object.__setattr__`` stores, ``register_buffer(name, None)`` are not seen.
"""

from __future__ import annotations

from functools import cached_property
from typing import TYPE_CHECKING

from graphlint.checks.facts import Expr
from graphlint.checks.value_graph import FunctionKey

if TYPE_CHECKING:
    from graphlint.checks.link import Project
    from graphlint.checks.parameter_constants import ParameterConstants


class NeverNone:
    """Owned by ``ParameterConstants``, which knows the parameters per copy."""

    def __init__(self, project: Project, constants: ParameterConstants) -> None:
        self.project = project
        self.constants = constants
        self._attributes: dict[tuple[int, str, str], bool] = {}

    def holds(self, file: int, scope: FunctionKey | None, copy: str, needs: list[Expr], depth: int = 0) -> bool:
        """Whether each of ``needs`` (value expressions of ``file``) is never None; parameters
        of ``scope`` in ``copy`` count (no ``scope``: a parameter may be None)."""
        return all(self._one(file, scope, copy, expr, depth) for expr in needs)

    def _one(self, file: int, scope: FunctionKey | None, copy: str, expr: Expr, depth: int) -> bool:
        head = expr[0]
        if head == "v":
            if scope is None:
                return False
            known = self.constants.parameter(scope, copy, expr, depth)
            return known is not None and known[0] is False
        if head == "c":
            return self._returns(file, expr[1])
        if head == "a" and expr[1][0] == "v":
            owner = self._self_class(file, expr[1][1])
            return owner is not None and self._attribute(file, owner, expr[2], depth)
        return False

    def _returns(self, file: int, ordinal: int) -> bool:
        targets = self.project.graph.callees.get((file, ordinal), {})
        return bool(targets) and all(
            isinstance(t, FunctionKey) and kind == "call" and t.qualname in self._never_none_returns[t.file]
            for t, kind in targets.items()
        )

    def _self_class(self, file: int, variable: str) -> str | None:
        """The class of ``variable`` when it is the ``self`` of one of that class's methods (and
        nothing rebinds it)."""
        flow = self.project.files[file].facts.flow
        method, _, name = variable.rpartition(".")
        definition = flow.defs.get(method)
        owner = method.rpartition(".")[0]
        if definition is None or definition.method not in ("instance", "property") or not definition.params:
            return None
        if definition.params[0][0] != name or owner not in flow.defs or flow.defs[owner].kind != "class":
            return None
        if variable in self.constants.rebound[file]:
            return None
        return owner

    def _attribute(self, file: int, owner: str, name: str, depth: int) -> bool:
        key = (file, owner, name)
        if key in self._attributes:
            return self._attributes[key]
        self._attributes[key] = False  # a store of it that needs itself knows nothing
        stores = self._stores.get(name, [])
        found = bool(stores) and name not in self._defined_names and all(
            store_file == file and target == ["v", f"{owner}.{name}"] and needs is not None
            and self.holds(store_file, None, "", needs, depth + 1)
            for store_file, target, needs in stores
        )
        self._attributes[key] = found
        return found

    @cached_property
    def _never_none_returns(self) -> list[frozenset[str]]:
        return [frozenset(linked.facts.flow.never_none_returns) for linked in self.project.files]

    @cached_property
    def _stores(self) -> dict[str, list[tuple[int, Expr, list[Expr] | None]]]:
        """Attribute name → every store of an attribute or class variable of that name."""
        found: dict[str, list[tuple[int, Expr, list[Expr] | None]]] = {}
        for file, linked in enumerate(self.project.files):
            flow = linked.facts.flow
            for target, needs in flow.stores:
                name = target[2] if target[0] == "a" else target[1].rpartition(".")[2]
                found.setdefault(name, []).append((file, target, needs))
        return found

    @cached_property
    def _defined_names(self) -> set[str]:
        """The names of the functions (methods, properties) defined in a class anywhere."""
        found: set[str] = set()
        for linked in self.project.files:
            defs = linked.facts.flow.defs
            for qualname, definition in defs.items():
                owner, _, name = qualname.rpartition(".")
                if definition.kind == "function" and owner in defs and defs[owner].kind == "class":
                    found.add(name)
        return found
