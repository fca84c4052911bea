"""Per-file facts: what one file defines, calls, compiles and might break.

Extracted once per file content (``extract.py``), cached as JSON (``cache.py``), linked across the
project (``link.py``). Nothing here depends on the file's path, so identical contents share one
cache entry; paths and module names are attached when the facts are linked.

What values flow where (the assignment graph's per-file half, ``FlowFacts``) is written in
*value expressions*, JSON lists resolved when the project is linked (``valueflow.py``):
``["v", key]`` a variable of this file (``"f.x"``: local ``x`` of ``f``; ``"x"``: module level;
``"C.x"``: class or instance attribute ``x`` of ``C``), ``["g", dotted]`` an imported name (a
leading ``.`` is relative), ``["d", qualname]`` a function, lambda or class defined here,
``["self", qualname]`` what ``self`` is in a method of that class when no caller says (an
instance of the class, unless the project derives classes from it), ``["n", expr]`` an instance
of the class ``expr`` names (an annotation), ``["a", expr, name]``
an attribute, ``["c", ordinal]`` what the call numbered ``ordinal`` returns (calls are numbered in
source order, as ``positions.py`` numbers them), ``["r", index]`` what a decorator returns,
``["s", class, expr]`` ``super()`` in a method of ``class`` with ``self`` = ``expr``,
``["x", name]`` a builtin or unknown name, ``["u", expr, ...]`` any of several values.
Containers are transparent: a list of layers evaluates to the layers.
"""

from __future__ import annotations

import hashlib
import json
from dataclasses import dataclass, field, fields
from typing import Any, Literal

Expr = list[Any]  # a value expression (above)
# The "classes" of a guarded return taken only when its parameter is falsy (``if p is None:``)
FALSY: Expr = ["falsy"]
RegionKind = Literal["compiled", "capture"]
MODULE_SCOPE = "<module>"


@dataclass(frozen=True)
class ExtractOptions:
    """What ``[tool.graphlint]`` adds to the built-in entry points (qualified names). Here, not
    beside the walk, so that a run served from the cache never imports the walk (libcst)."""

    compile_entrypoints: tuple[str, ...] = ()
    capture_entrypoints: tuple[str, ...] = ()
    nesting_safe_entrypoints: tuple[str, ...] = ()  # entry points that skip compiling when nested
    replaced_entrypoints: tuple[str, ...] = ()  # compile entry points the framework makes a plain call
    not_selected_keys: tuple[str, ...] = ()  # dict keys (dotted globs) whose entries are never picked
    eager_backends: tuple[str, ...] = ()  # compile backends that run the traced graph eagerly
    capture_false_calls: tuple[str, ...] = ()  # calls (dotted globs) that are false while a capture runs
    capture_true_calls: tuple[str, ...] = ()  # … and true
    capture_false_attributes: tuple[str, ...] = ()  # attributes (dotted globs) False while a capture runs
    capture_none_attributes: tuple[str, ...] = ()  # … None
    capture_modes: tuple[str, ...] = ()  # the modes a capture runs in
    capture_mode_calls: tuple[tuple[str, tuple[str, ...]], ...] = ()  # call glob → the modes it is true in
    capture_call_results: tuple[tuple[str, tuple[str, ...]], ...] = ()  # call glob → the values it returns
    empty_of_empty_calls: tuple[str, ...] = ()  # calls (dotted globs) empty where their first argument is
    capture_false_tests: tuple[tuple[str, tuple[str, ...]], ...] = ()  # function glob → comparisons false in capture
    capture_device_attributes: tuple[str, ...] = ()  # attributes (dotted globs) on the device while a capture runs
    capture_mode_none_attributes: tuple[tuple[str, tuple[str, ...]], ...] = ()  # attribute glob → modes it is None in
    capture_mode_true_attributes: tuple[tuple[str, tuple[str, ...]], ...] = ()  # … true in
    platform_raising_calls: tuple[str, ...] = ()  # calls (dotted globs) that raise on the platform checked


@dataclass
class FunctionFacts:
    qualname: str
    boundary: bool = False  # @torch.compiler.disable and friends: dynamo does not trace in
    line: int = 0  # of the ``def`` (0: module level)


@dataclass
class DefFacts:
    """A function, lambda or class: what the assignment graph needs to call it."""

    kind: Literal["function", "class"]
    # (name, kind): "o" positional-only, "p" positional or keyword, "k" keyword-only, "*", "**"
    params: list[tuple[str, str]] = field(default_factory=list)
    method: Literal["instance", "class", "static", "property"] | None = None  # defined in a class body
    bases: list[Expr] = field(default_factory=list)
    line: int = 0


@dataclass
class CallSite:
    """One call, numbered by its position among the file's calls in source order."""

    scope: str  # the function (or lambda, or ``<module>``) it is made in
    callee: Expr | None
    args: list[Expr | None] = field(default_factory=list)
    star: list[Expr] = field(default_factory=list)  # f(*xs)
    # The call's only ``*xs`` comes after all its plain positional arguments: ``xs``'s elements
    # fill the positions from ``len(args)`` on, in order (``f(a, *args)`` forwarding ``*args``).
    star_last: bool = False
    keywords: list[tuple[str, Expr | None]] = field(default_factory=list)
    double_star: list[Expr] = field(default_factory=list)  # f(**kw)
    line: int = 0
    text: str = ""  # the callee as written, for reports (``self.runnable``)
    named: bool = False  # a plain name or an attribute of ``self``: worth reporting when unresolved
    # Arguments (positions, keyword names) that are the target the call's result is assigned to:
    # ``self.model = Wrapper(self.model)`` hands the wrapper what ``self.model`` held before.
    rebinds: list[int | str] = field(default_factory=list)
    # Such a call in a method after the statement ``super().<this method>()``: that call's
    # ordinal. The method it overrides ran first, so its own rebinding of the target never
    # held what this call makes (``wrap_order.py``).
    after_super: int | None = None
    # Arguments known by their form (position as a string, or keyword) → [is None, truth], each
    # None where the form does not say (``call_conditions.py``)
    known: dict[str, list[bool | None]] = field(default_factory=dict)
    # Arguments not known by their form that are never None where each of these value
    # expressions is never None (a variable, ``self.x``, what a call returns: ``not_none.py``);
    # 1: where the argument's own value expression is (the common case, kept small in the cache)
    nonnull: dict[str, list[Expr] | int] = field(default_factory=dict)
    # Arguments (position as a string, or keyword) that are module state, so on the model's
    # device: 1 where the file says so (``self.x``, a registered buffer or ``nn.Parameter``),
    # [class, attribute] for a ``self.attribute`` a base class may keep (``module_state_arguments.py``)
    module_state: dict[str, list[str] | int] = field(default_factory=dict)


@dataclass
class Decoration:
    scope: str
    decorator: Expr | None
    value: Expr  # the function or class (or the inner decorator's result) it wraps
    line: int = 0  # the decorator's line: a configured entry point's decorator is known by it


@dataclass
class ImplicitCall:
    """A call no parentheses show: ``raise Error`` constructs ``Error``; ``for x in obj`` calls
    ``obj.__iter__()`` and then ``__next__()`` on what that returns (``x`` gets its returns)."""

    scope: str
    kind: Literal["raise", "iterate"]
    value: Expr


@dataclass
class FlowFacts:
    defs: dict[str, DefFacts] = field(default_factory=dict)
    assigns: list[tuple[Expr, Expr]] = field(default_factory=list)  # (["v", key] | ["a", expr, name], value)
    calls: list[CallSite | None] = field(default_factory=list)  # by ordinal
    decorations: list[Decoration] = field(default_factory=list)
    implicit: list[ImplicitCall] = field(default_factory=list)  # ``["it", index]``: what iterating gives
    star_imports: list[str] = field(default_factory=list)
    # function → returns made only where a parameter is an instance of some classes
    # (``if isinstance(layer, LinearBase): return LinearMethod()``): (parameter, the classes, the
    # variable that return writes)
    guarded: dict[str, list[tuple[str, Expr, str]]] = field(default_factory=dict)
    # function → parameters it returns as they came (``return cls``): a call gets its own
    # argument back, not what every caller handed in (a docstring or registry decorator)
    passes: dict[str, list[str]] = field(default_factory=dict)
    # function → (its ``*``/``**`` parameter, position or keyword) it returns as they came
    # (``return args[0]``, ``next(iter(kwargs.values()))``: None), ``returned_arguments.py``
    rest_passes: dict[str, list[tuple[str, int | str | None]]] = field(default_factory=dict)
    returned_calls: list[int] = field(default_factory=list)  # ordinals of calls returned as they are
    # function → (parameter, its default's value): flows only where a call may leave it out
    # (``parameter_defaults.py``)
    defaults: dict[str, list[tuple[str, Expr]]] = field(default_factory=dict)
    # function → parameter → [is None, truth] of its default, where its form says
    known_defaults: dict[str, dict[str, list[bool | None]]] = field(default_factory=dict)
    # call ordinal → [[test tree, what the test is], ...] of the ``if``s around it on its
    # function's parameters (``call_conditions.py``; read by the regions walk, not the solve)
    call_conditions: dict[int, list[list[Any]]] = field(default_factory=dict)
    # every store of an attribute or class variable: (the target, the value expressions that
    # make the stored value never None, or None where it may be None: ``not_none.py``)
    stores: list[tuple[Expr, list[Expr] | None]] = field(default_factory=list)
    # functions whose return annotation says they never return None (``-> bool``)
    never_none_returns: list[str] = field(default_factory=list)
    # parameters whose annotation names every class it allows (``x: torch.Tensor | None``; no
    # ``list[...]``, ``Callable[...]``, ...): the solve keeps only what such a class's instances
    # can be (``declared_types.py``)
    typed_parameters: list[str] = field(default_factory=list)
    # (``self_tests.py``; read by the regions walk, not the solve) call ordinal → the tests on
    # ``self`` attributes around it, [[atom, what the test is], ...]; "Class.x" → each store of
    # ``self.x`` (or class-body binding): [function, line, in a loop, its form, its tests]; the
    # attribute names ``setattr`` and friends store ("Class.*": any of that class's ``self``)
    self_call_tests: dict[int, list[list[Any]]] = field(default_factory=dict)
    self_stores: dict[str, list[list[Any]]] = field(default_factory=dict)
    dynamic_stores: list[str] = field(default_factory=list)
    error: str | None = None  # why the calls of this file could not be numbered
    digest: str = ""  # ``solver_digest`` of these facts, taken when they are extracted ("": not taken)

    @classmethod
    def from_json(cls, data: dict[str, Any]) -> "FlowFacts":
        return cls(
            defs={k: DefFacts(v["kind"], [tuple(p) for p in v["params"]], v["method"], v["bases"], v["line"]) for k, v in data["defs"].items()},
            assigns=[tuple(a) for a in data["assigns"]],
            calls=[None if c is None else CallSite(**{**c, "keywords": [tuple(k) for k in c["keywords"]]}) for c in data["calls"]],
            decorations=[Decoration(**d) for d in data["decorations"]],
            implicit=[ImplicitCall(**i) for i in data["implicit"]],
            star_imports=data["star_imports"],
            guarded={k: [tuple(g) for g in v] for k, v in data["guarded"].items()},
            passes=data["passes"],
            rest_passes={k: [tuple(p) for p in v] for k, v in data["rest_passes"].items()},
            returned_calls=data["returned_calls"],
            defaults={k: [tuple(d) for d in v] for k, v in data["defaults"].items()},
            known_defaults=data["known_defaults"],
            call_conditions={int(k): v for k, v in data["call_conditions"].items()},
            stores=[tuple(s) for s in data["stores"]],
            never_none_returns=data["never_none_returns"],
            typed_parameters=data["typed_parameters"],
            self_call_tests={int(k): v for k, v in data["self_call_tests"].items()},
            self_stores=data["self_stores"],
            dynamic_stores=data["dynamic_stores"],
            error=data["error"],
            digest=data["digest"],
        )

    def solver_digest(self) -> str:
        """A hash of what the value-flow solve reads of these facts: lines and the callees' texts
        are left out, so code that moves, or changes without changing what flows where, gives
        the same digest (and the solved graph cached under it is used again)."""
        return hashlib.sha256(json.dumps(list(self.solver_parts().values()), separators=(",", ":")).encode()).hexdigest()

    def solver_parts(self) -> dict[str, Any]:
        """What the value-flow solve reads of these facts, by field, as JSON values."""
        calls = [
            None if c is None else [c.scope, c.callee, c.args, c.star, c.star_last, c.keywords, c.double_star, c.rebinds, c.after_super]
            for c in self.calls
        ]
        return {
            "defs": [[name, d.kind, d.params, d.method, d.bases] for name, d in self.defs.items()],
            "assigns": self.assigns,
            "calls": calls,
            "decorations": [[d.scope, d.decorator, d.value] for d in self.decorations],
            "implicit": [[i.scope, i.kind, i.value] for i in self.implicit],
            "star_imports": self.star_imports, "guarded": self.guarded, "passes": self.passes,
            "rest_passes": self.rest_passes, "returned_calls": self.returned_calls, "defaults": self.defaults,
            "typed_parameters": self.typed_parameters, "error": self.error,
        }


@dataclass
class EntryFacts:
    """A place where a region starts: a compile call or decorator, or a capture block."""

    line: int
    kind: RegionKind
    traced: bool  # dynamo traces it (compile); False for eager capture (torch.npu.graph)
    scope: str  # the function the entry site is in
    # What it hands to dynamo or to capture, as value expressions: ``["arg", ordinal]`` the first
    # argument of that call, ``["receiver", ordinal]`` what ``model.compile()`` is called on,
    # ``["def", qualname]`` a decorated function or class. Empty for blocks: their calls count.
    targets: list[Expr] = field(default_factory=list)
    dynamic: bool | None = None  # torch.compile(dynamic=...)
    fullgraph: bool | None = None  # torch.compile(fullgraph=...): a graph break is an error
    # How it was recognised: a decorator, a call (torch.compile(f), model.compile()), a block
    # (``with torch.npu.graph(g):``, ``capture_begin()``), [tool.graphlint] configuration, or a
    # root the configuration or a preset names (``compile-roots``, ``capture-exports``: ``roots.py``).
    via: Literal["decorator", "call", "block", "config", "root"] = "call"
    # Its API is one the framework replaces with a plain call (``replaced-entrypoints``: MindSpeed
    # patches ``torch.compile``): it starts no region, and says so in the coverage.
    replaced: bool = False


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
    uncaptured: bool = False  # in a branch no graph capture takes (``capture-false-calls``)
    # the capture modes it is reached in, where not all (``returning_calls.py``), and the last
    # call known to have returned before it (an index in ``FileFacts.after_calls``; -1: none)
    modes: list[str] | None = None
    after: int = -1
    block: int | None = None
    anywhere: bool = False  # reported wherever it is, region or not
    entry_scope_only: bool = False  # only where ``scope`` is itself an entry's target
    own_entry: int | None = None  # GL101: the entry this site creates does not count
    predicts: list[str] = field(default_factory=list)  # GB codes for this site, if narrower than the rule's
    # Void when the value flow shows the receiver of this call (the anchor) holds only host
    # tensors: ``.cpu()`` / ``.tolist()`` of one copies and waits for nothing.
    host_receiver: bool = False
    # [class, attribute]: void when a base class of ``class`` keeps ``self.attribute`` as module
    # state (``.to(x.device)`` of a buffer a base registered, in another file)
    inherited_state: list[str] | None = None
    # [class, attribute]: void when the linked project shows ``self.attribute`` was made on the
    # target device while the framework's loader built the model (``device_construction.py``)
    built_state: list[str] | None = None
    # A parameter of ``scope`` that the ``t.to(d)`` moves where nothing rebound it: void when
    # every call of ``scope`` hands it module state (``module_state_parameters.py``)
    receiver_parameter: str | None = None
    # Ways to show that the ``t.to(d)`` moves a tensor already on ``d``, each a list of [call
    # ordinal, argument keys]: void where, for one way, what every one of its calls runs returns on
    # the device of those arguments (``device_returns.py``)
    device_calls: list[list[list[Any]]] | None = None


NO_CALL = -1  # ``Candidate.after`` / ``FileFacts.call_after`` of a point no call is known to precede
WHOLE_RETURN = -1  # in ``FileFacts.none_returns``: the whole value a function returns, not an element


@dataclass
class FileFacts:
    imports: dict[str, str] = field(default_factory=dict)  # local name → dotted ("." prefixes: relative)
    # what the module's top-level import statements import, whenever it is (``top_imports.py``)
    top_imports: list[str] = field(default_factory=list)
    functions: dict[str, FunctionFacts] = field(default_factory=dict)
    flow: FlowFacts = field(default_factory=FlowFacts)
    eager_calls: list[int] = field(default_factory=list)  # ordinals of calls under ``not is_compiling()``
    # ordinals of calls in a branch no graph capture takes (``capture-false-calls``)
    uncaptured_calls: list[int] = field(default_factory=list)
    block_calls: dict[int, int] = field(default_factory=dict)  # call ordinal → capture block (entry index)
    # call ordinal → [call ordinal, element] of returns any one of which, None in every capture,
    # leaves the call uncaptured; function → what is None in every return a capture runs (-1:
    # the whole value) (``returned_none.py``)
    uncaptured_unless: dict[int, list[list[int]]] = field(default_factory=dict)
    none_returns: dict[str, list[int]] = field(default_factory=dict)
    # (``returned_elements.py``) call ordinal → [parameter, element, dotted member, whether the
    # call needs ``element == member``]: any one that the edge into the function decides the
    # other way leaves the call uncaptured; function → element index → the values it may be in
    # every tuple it returns in a capture ("None" for None); call ordinal → argument (position
    # or keyword) → the call whose whole value it is
    uncaptured_unless_elements: dict[int, list[list[Any]]] = field(default_factory=dict)
    element_returns: dict[str, dict[str, list[str]]] = field(default_factory=dict)
    returned_arguments: dict[int, dict[str, int]] = field(default_factory=dict)
    # (``returning_calls.py``) call ordinal → the capture modes it is made in, where some but not
    # all; [index of the call before (-1: none), call ordinal]: chains of calls known to have
    # returned; call ordinal → the last one of them before it; function → each way it returns,
    # [its modes (None: all), the last call before it]
    call_modes: dict[int, list[str]] = field(default_factory=dict)
    after_calls: list[list[int]] = field(default_factory=list)
    call_after: dict[int, int] = field(default_factory=dict)
    return_points: dict[str, list[list[Any]]] = field(default_factory=dict)
    # function → the module's names unbound on the platform checked that it reads where a block
    # then raises, not captured (``unbound_names.py``)
    unbound_reads: dict[str, list[str]] = field(default_factory=dict)
    # Ordinals of calls whose result is a tensor on the host on purpose (``device="cpu"``, ``.cpu()``)
    host_calls: list[int] = field(default_factory=list)
    # function → the parameter every return of it is made on the device of ("": none; ``returned_devices.py``)
    device_returns: dict[str, str] = field(default_factory=dict)
    entries: list[EntryFacts] = field(default_factory=list)
    candidates: list[Candidate] = field(default_factory=list)
    # class → the ``self`` attributes it keeps as module state: parameters, registered buffers,
    # submodules (what ``model.to()`` moves)
    module_state: dict[str, list[str]] = field(default_factory=dict)
    # "Class.attr" → each ``self.attr = ...`` in the class's methods: [function, what it stores,
    # the attribute a "state" store reads]; the attribute names stored on other objects
    # (``construction_stores.py``)
    attribute_stores: dict[str, list[list[str]]] = field(default_factory=dict)
    foreign_stores: list[str] = field(default_factory=list)
    suppressions: dict[int, list[str]] = field(default_factory=dict)  # line → codes ([] = all)
    error: str | None = None  # why the file could not be read or parsed (GL000)
    error_line: int = 1
    error_column: int = 1
    internal: bool = False  # the error is graphlint's own bug, not the file's

    def to_text(self) -> str:
        """These facts as JSON text: a cache entry, and what a worker process hands back (one
        C-encoded ``json.dumps``; ``dataclasses.asdict`` first copied every value, and pickling
        that copy cost as much again)."""
        return json.dumps(self, default=_fields_of, separators=(",", ":"))

    @classmethod
    def from_text(cls, text: str) -> "FileFacts":
        return cls.from_json(json.loads(text))

    @classmethod
    def from_json(cls, data: dict[str, Any]) -> "FileFacts":
        return cls(
            imports=data["imports"],
            top_imports=data["top_imports"],
            functions={k: FunctionFacts(**v) for k, v in data["functions"].items()},
            flow=FlowFacts.from_json(data["flow"]),
            eager_calls=data["eager_calls"],
            uncaptured_calls=data["uncaptured_calls"],
            block_calls={int(k): v for k, v in data["block_calls"].items()},
            uncaptured_unless={int(k): v for k, v in data["uncaptured_unless"].items()},
            none_returns=data["none_returns"],
            uncaptured_unless_elements={int(k): v for k, v in data["uncaptured_unless_elements"].items()},
            element_returns=data["element_returns"],
            returned_arguments={int(k): v for k, v in data["returned_arguments"].items()},
            call_modes={int(k): v for k, v in data["call_modes"].items()},
            after_calls=data["after_calls"],
            call_after={int(k): v for k, v in data["call_after"].items()},
            return_points=data["return_points"],
            unbound_reads=data["unbound_reads"],
            host_calls=data["host_calls"],
            device_returns=data["device_returns"],
            entries=[EntryFacts(**e) for e in data["entries"]],
            candidates=[Candidate(**{**c, "anchor": tuple(c["anchor"])}) for c in data["candidates"]],
            module_state=data["module_state"],
            attribute_stores=data["attribute_stores"],
            foreign_stores=data["foreign_stores"],
            suppressions={int(k): v for k, v in data["suppressions"].items()},
            error=data["error"],
            error_line=data["error_line"],
            error_column=data["error_column"],
            internal=data["internal"],
        )


_field_names: dict[type, tuple[str, ...]] = {}


def _fields_of(value: object) -> dict[str, Any]:
    """A facts dataclass as the JSON object of its fields, in their order (as ``asdict`` gives
    them); ``json.dumps`` asks for it at each dataclass it meets."""
    value_type = type(value)
    names = _field_names.get(value_type)
    if names is None:
        if value_type not in _SERIALIZED:
            raise TypeError(f"{value_type.__name__} is not a facts type")
        names = _field_names[value_type] = tuple(f.name for f in fields(value_type))  # type: ignore[arg-type]
    return {name: getattr(value, name) for name in names}


_SERIALIZED = frozenset({FileFacts, FunctionFacts, FlowFacts, DefFacts, CallSite, Decoration, ImplicitCall, EntryFacts, Candidate})
