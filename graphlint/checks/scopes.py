"""The scope stack both walks of a file keep: the libcst walk (``extract.py``) and the ``ast``
walk of the assignment graph (``assignments.py``).

Both name functions, classes and lambdas the same way (``Outer.method``, ``f.<lambda1>``: the
n-th lambda written directly in a scope), because the link step matches the two walks' facts by
these qualnames; keeping one stack is what keeps the names equal.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Generic, Literal, TypeVar


@dataclass
class Scope:
    kind: Literal["module", "class", "function"]
    qualname: str  # MODULE_SCOPE for the module
    class_name: str | None = None  # the class whose ``self`` is in scope (methods and their closures)
    lambdas: int = 0  # lambdas met so far directly in this scope


ScopeT = TypeVar("ScopeT", bound=Scope)


class ScopeStack(Generic[ScopeT]):
    """A walker's scopes, the module's first (a mixin: the walker fills ``scopes``)."""

    scopes: list[ScopeT]

    @property
    def scope(self) -> ScopeT:
        return self.scopes[-1]

    @property
    def module_scope(self) -> ScopeT:
        return self.scopes[0]

    @property
    def function_scope(self) -> ScopeT:
        """The innermost function (or the module): a class body is not a scope its methods see."""
        for scope in reversed(self.scopes):
            if scope.kind != "class":
                return scope
        return self.scopes[0]

    def nested_qualname(self, name: str) -> str:
        """The qualname of ``name`` defined in the current scope."""
        outer = self.scope
        return name if outer.kind == "module" else f"{outer.qualname}.{name}"

    def lambda_qualname(self) -> str:
        """The qualname of the next lambda written in the current scope."""
        self.scope.lambdas += 1
        return self.nested_qualname(f"<lambda{self.scope.lambdas}>")
