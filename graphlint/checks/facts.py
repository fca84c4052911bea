"""Per-file facts: what one file defines, calls, compiles and might break.

Extracted once per file content (``extract.py``), cached as JSON (``cache.py``), linked across the
project (``link.py``). Nothing here depends on the file's path, so identical contents share one
cache entry; paths and module names are attached when the facts are linked.

A *ref* names something callable, resolved later against the whole project:
``["call", "pkg.helpers.norm"]`` a function (or module-level binding) by dotted name, as the
file's imports spell it; ``["instance", "Model"]`` calling an instance of a class (its
``forward``); ``["member", "Model", "block"]`` ``self.block(...)`` on a ``Model`` (a method, or
the submodules bound to that attribute); ``["local", "outer.inner"]`` a nested function.
``["instance", "build"]`` where ``build`` is a function calls what ``build`` returns (a
factory); ``["member-result", "Model", "build"]`` calls what ``self.build()`` returns on a
``Model``.
"""

from __future__ import annotations

from dataclasses import asdict, dataclass, field
from typing import Any, Literal

Ref = list[str]
RegionKind = Literal["compiled", "capture"]
MODULE_SCOPE = "<module>"


@dataclass(frozen=True)
class ExtractOptions:
    """What ``[tool.graphlint]`` adds to the built-in entry points (qualified names). Here, not
    beside the walk, so that a run served from the cache never imports the walk (libcst)."""

    compile_entrypoints: tuple[str, ...] = ()
    capture_entrypoints: tuple[str, ...] = ()
    nesting_safe_entrypoints: tuple[str, ...] = ()  # entry points that skip compiling when nested


@dataclass
class CallEdge:
    """A call made from a function body (or module level)."""

    ref: Ref
    eager: bool = False  # under the not-compiling branch of ``is_compiling()``
    block: int | None = None  # index into ``entries`` of the capture block it is made in


@dataclass
class FunctionFacts:
    qualname: str
    boundary: bool = False  # @torch.compiler.disable and friends: dynamo does not trace in
    calls: list[CallEdge] = field(default_factory=list)
    # What calling the object it returns calls, for factories: ``return Net()`` → [instance Net]
    returns: list[Ref] = field(default_factory=list)
    line: int = 0  # of the ``def`` (0: module level)


@dataclass
class ClassFacts:
    qualname: str
    bases: list[str] = field(default_factory=list)
    members: dict[str, list[Ref]] = field(default_factory=dict)  # self.x = Cls(...) → x: [instance Cls]
    line: int = 0  # of the ``class``


@dataclass
class EntryFacts:
    """A place where a region starts: a compile call or decorator, or a capture block."""

    line: int
    kind: RegionKind
    traced: bool  # dynamo traces it (compile); False for eager capture (torch.npu.graph)
    scope: str  # the function the entry site is in
    targets: list[Ref] = field(default_factory=list)  # empty for blocks: their calls are edges
    dynamic: bool | None = None  # torch.compile(dynamic=...)
    fullgraph: bool | None = None  # torch.compile(fullgraph=...): a graph break is an error


@dataclass
class Candidate:
    """A construct a rule flags if its region says so (the engine decides)."""

    code: str
    scope: str
    line: int
    column: int
    end_line: int
    end_column: int
    message: str
    anchor: tuple[str, int]  # (node kind, ordinal in source order): how fixes find the node
    fix: Literal["safe", "unsafe"] | None = None
    eager: bool = False
    block: int | None = None
    anywhere: bool = False  # reported wherever it is, region or not
    entry_scope_only: bool = False  # only where ``scope`` is itself an entry's target
    own_entry: int | None = None  # GL101: the entry this site creates does not count
    predicts: list[str] = field(default_factory=list)  # GB codes for this site, if narrower than the rule's


@dataclass
class FileFacts:
    imports: dict[str, str] = field(default_factory=dict)  # local name → dotted ("." prefixes: relative)
    functions: dict[str, FunctionFacts] = field(default_factory=dict)
    classes: dict[str, ClassFacts] = field(default_factory=dict)
    bindings: dict[str, list[Ref]] = field(default_factory=dict)  # module-level name → what it calls
    entries: list[EntryFacts] = field(default_factory=list)
    candidates: list[Candidate] = field(default_factory=list)
    suppressions: dict[int, list[str]] = field(default_factory=dict)  # line → codes ([] = all)
    error: str | None = None  # why the file could not be read or parsed (GL000)
    error_line: int = 1
    error_column: int = 1
    internal: bool = False  # the error is graphlint's own bug, not the file's

    def to_json(self) -> dict[str, Any]:
        return asdict(self)

    @classmethod
    def from_json(cls, data: dict[str, Any]) -> "FileFacts":
        return cls(
            imports=data["imports"],
            functions={
                k: FunctionFacts(**{**v, "calls": [CallEdge(**c) for c in v["calls"]]})
                for k, v in data["functions"].items()
            },
            classes={k: ClassFacts(**v) for k, v in data["classes"].items()},
            bindings=data["bindings"],
            entries=[EntryFacts(**e) for e in data["entries"]],
            candidates=[Candidate(**{**c, "anchor": tuple(c["anchor"])}) for c in data["candidates"]],
            suppressions={int(k): v for k, v in data["suppressions"].items()},
            error=data["error"],
            error_line=data["error_line"],
            error_column=data["error_column"],
            internal=data["internal"],
        )
