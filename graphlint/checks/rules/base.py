"""What a rule is: a class with a code, a slug, its documentation and its own test snippets.

A rule looks at syntax while the file is walked (``visit_<NodeType>(node, ctx)`` methods, one
walk for all rules) and reports *candidates*; whether a candidate becomes a finding depends on
the region its code runs in, which is only known once the whole project is linked. The engine
decides that, and handles suppressions and selection; rules never do.

The class docstring is the rule's documentation (``graphlint explain``, ``docs/rules.md``), with
ruff's headings: What it does / Why is this bad? / Example / Use instead / Fix safety / References.
``INVALID`` snippets pin the code and the line they must be flagged at (``# error`` marks it).
"""

from __future__ import annotations

import inspect
import textwrap
from collections.abc import Callable, Iterable
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any, ClassVar, Literal, Protocol

if TYPE_CHECKING:  # libcst only in annotations: a project rule runs on cached facts without it
    import libcst as cst

    from graphlint.checks.facts import RegionKind
    from graphlint.checks.link import Project
    from graphlint.checks.regions import RegionHit, Regions

Severity = Literal["error", "warning", "info"]


class SiteContext(Protocol):
    """What the walk knows at the node a rule is looking at."""

    def qualify(self, expr: cst.BaseExpression) -> str | None:
        """The fully qualified dotted name of ``expr`` after import aliases, or None."""

    def dynamic_int(self, expr: cst.BaseExpression) -> Literal["shape", "param"] | None:
        """Whether ``expr`` is an int dynamo treats as symbolic: from a tensor's shape, or an
        int parameter (symbolic only when the function is itself compiled)."""

    def is_mask(self, expr: cst.BaseExpression) -> bool:
        """Whether ``expr`` is a boolean tensor (a comparison, or a name assigned one)."""

    @property
    def in_loop(self) -> bool: ...

    @property
    def function_name(self) -> str | None: ...

    def compile_entry_at(self, node: cst.CSTNode) -> int | None:
        """The compile entry point (dynamo-traced) this decorator or call creates, if any."""

    def entry_nests_safely(self, entry: int) -> bool:
        """Whether that entry point skips compiling when it is reached inside another compile
        (``nesting-safe-entrypoints``: vLLM's ``support_torch_compile``)."""

    @property
    def in_error_message(self) -> bool:
        """Whether the node builds the message of a ``raise`` or of an ``assert``'s failure, or is in
        a block that always ends by raising (``error_messages.py``): dynamo traces none of them on
        the passing path."""

    def assigned_value(self, target: cst.BaseExpression) -> cst.BaseExpression | None:
        """The value of ``target = value`` when ``target`` is the left side of an assignment."""

    def known_device(self, expr: cst.BaseExpression) -> str | None:
        """The device a tensor expression is known to be on: ``"cpu"`` for one made on the host
        on purpose (``device="cpu"``, ``pin_memory=True``, ``.cpu()``, a name ending in
        ``_cpu``), else the source text of
        the device it was made on or moved to (``x.device``); None when unknown."""

    def compiles_eagerly(self, options: cst.Call) -> bool:
        """Whether compile options (``torch.compile(f, backend=...)``, ``@torch.compile(...)``)
        name a backend that runs the traced graph eagerly: ``"eager"``, ``"aot_eager"``, or
        one the presets or ``[tool.graphlint]`` name (``eager-backends``)."""

    def host_side(self, node: cst.CSTNode) -> bool:
        """Whether ``node`` is host-side work read back to Python: the ``.item()`` /
        ``.tolist()`` of a tensor computed on the host alone (from Python values, host tensors
        and constants: ``torch.quantile(torch.tensor(times), q=0.5).item()``), or a factory
        without ``device=`` that only such a read-back uses."""

    def host_work(self, expr: cst.BaseExpression) -> list[cst.Call] | None:
        """The factories ``expr`` is computed from when it is host work alone (factories
        without ``device=``, host tensors, ``torch.*`` functions and methods of them and of
        constants), else None."""

    def device_text(self, expr: cst.BaseExpression) -> str:
        """A device expression as ``known_device`` spells it (``"cpu"``, ``torch.device("npu:0")``
        → ``"npu"``, else its source text)."""

    def is_vector(self, expr: cst.BaseExpression) -> bool:
        """Whether ``expr`` is a tensor known to be 1-D (``torch.arange``, ``.flatten()``,
        ``.view(-1)``, or a name assigned one)."""

    def is_tensor_value(self, expr: cst.BaseExpression) -> bool:
        """Whether ``expr`` is a tensor, reduced or not, whose value Python would have to read:
        ``x.max()``, ``torch.sum(m)``, a name bound to one (``n = mask.sum()``), a parameter
        annotated as a tensor, arithmetic and indexing of these."""

    def is_tensor_condition(self, expr: cst.BaseExpression) -> bool:
        """Whether Python's truth of ``expr`` reads a tensor: a comparison with a tensor on one
        side (``p < self.layerdrop`` with ``p = torch.rand([])``, ``n.max() > 0``), ``not``,
        ``and``, ``or`` of one, or a name bound to one (layer-drop's ``skip_the_layer``)."""

    def is_python_container(self, expr: cst.BaseExpression) -> bool:
        """Whether ``expr`` is a list, tuple or set display or comprehension, or a name the
        current function last bound to one (``blocks = []`` then ``blocks.append(i)``)."""

    def moves_once(self, call: cst.Call) -> bool:
        """Whether ``call`` is the ``t.to(d)`` of ``if t.device != d: t = t.to(d)``: a tensor moved
        where it is kept, once, by the first call (in the warm-up a capture needs)."""

    def incoming_parameter(self, expr: cst.BaseExpression) -> str | None:
        """The parameter ``expr`` reads where it still holds what the call handed over (nothing
        in the function rebound it before: ``incoming_parameters.py``), else None."""

    def on_capture_device(self, expr: cst.BaseExpression) -> bool:
        """Whether ``expr`` holds a tensor on the capture's device in every capture that runs here
        (``capture-device-attributes``: an attribute the framework's capture metadata init stores,
        or a name every binding of which a capture runs here holds one)."""

    def device_calls(self, expr: cst.BaseExpression, device: str) -> list[list[list[Any]]] | None:
        """Ways the linked project may show that ``expr`` is on ``device`` (``report(...,
        device_calls=...)``), each a list of [call ordinal, argument keys] whose calls must all
        return on the device of those arguments: ``expr`` a call's whole result (the call, or a
        name whose only binding is one) with arguments on ``device``; or ``device`` read off a
        call's whole result (``y.device``, ``y = self.experts(h, ...)``, ``y *= s`` in place) and
        ``expr`` known on, or a call's result made on, the device of the same arguments."""

    def on_module_device(self, expr: cst.BaseExpression) -> bool:
        """Whether ``expr`` lives where the model's weights do: a parameter (``self.w =
        nn.Parameter(...)``) or a buffer (``self.register_buffer("inv_freq", t)``), a submodule's output (``self.embed_positions(x)``, or a name bound to
        one). Not a plain tensor attribute made by a factory, nor a method's result."""

    def inherited_attribute(self, expr: cst.BaseExpression) -> list[str] | None:
        """``[class, attribute]`` for ``self.attribute`` in a method of ``class`` when this file
        says nothing of how the class made it (a base class in another file may register it as
        a buffer: ``report(..., inherited_state=...)`` asks the linked project), else None."""

    def built_attribute(self, expr: cst.BaseExpression) -> list[str] | None:
        """``[class, attribute]`` for ``self.attribute`` in a method of ``class``: the linked
        project decides whether the framework's loader made it on the target device while it
        built the model (``report(..., built_state=...)``, ``device_construction.py``)."""

    def scalar_operand_only(self, factory: cst.Call) -> bool:
        """Whether ``factory`` makes a 0-d tensor of a number fixed in every call whose every use
        is an operand torch_npu passes to its kernel as a scalar (``h *= torch.tensor(2.0)``:
        ``npu_scalar_operands.toml``), directly or through a name bound once to it."""

    def empty_tensor(self, expr: cst.BaseExpression) -> Literal["always", "capture"] | None:
        """Whether ``expr`` makes a tensor with no elements: ``"always"`` (``torch.tensor([])``,
        ``torch.zeros(0, n)``) or in every capture mode (``torch.as_tensor(x)`` of an ``x``
        empty there: ``empty_values.py``); moving it copies nothing."""

    def moved_at_once(self, factory: cst.Call, moves: Callable[[cst.Call], bool]) -> bool:
        """Whether ``factory`` is the receiver of a call that ``moves`` (``.to(device)``)."""

    def computed_here(self, expr: cst.BaseExpression) -> bool:
        """Whether ``expr`` is a name the current function last bound to a value it computed (a
        call, subscript or arithmetic): not a parameter, a loop variable or an alias."""

    def made_by(self, expr: cst.BaseExpression) -> str | None:
        """The qualified name of what was called to make the value of a name or ``self.attr``
        (``lock = threading.Lock()`` → ``threading.Lock``), or None."""

    def report(
        self,
        rule: "Rule",
        node: cst.CSTNode,
        message: str | None = None,
        *,
        fix: bool = False,
        anywhere: bool = False,
        entry_scope_only: bool = False,
        own_entry: int | None = None,
        predicts: tuple[str, ...] = (),
        host_receiver: bool = False,
        inherited_state: list[str] | None = None,
        built_state: list[str] | None = None,
        untraced: bool = False,
        void_in_capture: bool = False,
        receiver_parameter: str | None = None,
        device_calls: list[list[list[Any]]] | None = None,
    ) -> None:
        """Record a candidate at ``node`` (a Call, Subscript, BinaryOperation, Decorator,
        FormattedStringExpression, WithItem or AssignTarget: see ``positions.ANCHOR_KINDS``). ``fix``: the rule's fix
        applies to this node; ``anywhere``: report it even outside every region;
        ``entry_scope_only``: only where the enclosing function is itself an entry's target
        (int parameters are dynamic only there); ``own_entry``: the entry point this site
        creates, whose own region does not count (nested compile); ``predicts``: the GB codes
        dynamo gives this very site, where they are narrower than the rule's own; ``host_receiver``:
        a call ``x.m()`` that is void when the value flow shows ``x`` holds only host tensors;
        ``inherited_state``: ``[class, attribute]``, void when a base class of ``class``
        keeps ``self.attribute`` as module state (a parameter, buffer or submodule);
        ``built_state``: ``[class, attribute]``, void when the framework's loader made
        ``self.attribute`` on the target device (``device_construction.py``); ``untraced``: only
        where dynamo does not trace the site (an eager capture), as in an eager-only branch;
        ``void_in_capture``: the site does no harm in any capture (what it copies is empty in every
        capture mode), only in a plain compiled region;
        ``receiver_parameter``: the parameter ``t`` of a ``t.to(d)``, void when every call of the
        function hands it module state (``module_state_parameters.py``); ``device_calls``: ways to
        show a ``t.to(d)`` moves a tensor already on ``d`` (``device_calls``), void when for one
        of them every function each of its calls runs returns on the device of what those
        arguments hand it (``device_returns.py``)."""


class Rule:
    code: ClassVar[str]
    slug: ClassVar[str]
    summary: ClassVar[str]  # one line for `graphlint rules`
    message: ClassVar[str]  # what the finding says by default
    default_severity: ClassVar[Severity] = "warning"
    # Regions the rule applies in; ``traced_only``: only where dynamo traces (not eager capture).
    regions: ClassVar[frozenset[str]] = frozenset({"compiled", "capture"})
    traced_only: ClassVar[bool] = True
    fix_title: ClassVar[str | None] = None
    fix_safety: ClassVar[Literal["safe", "unsafe"] | None] = None
    refs: ClassVar[tuple[str, ...]] = ()
    # The GBxxxx codes dynamo's graph-break registry gives the construct the rule flags (empty
    # when it is no graph break): the trace confirms a finding by code as well as by line.
    predicts: ClassVar[tuple[str, ...]] = ()
    VALID: ClassVar[list[str]] = []
    INVALID: ClassVar[list[str]] = []

    def severity(self, region: "RegionKind | None", fullgraph: bool = False) -> Severity:
        """``fullgraph``: the region's entry asks ``torch.compile(fullgraph=True)``."""
        return self.default_severity

    def apply_fix(self, node: cst.CSTNode) -> cst.CSTNode | cst.RemovalSentinel:
        """The replacement for a reported node (rules with a ``fix_title`` override this)."""
        raise NotImplementedError(f"{self.code} has no fix")

    @classmethod
    def documentation(cls) -> str:
        return textwrap.dedent(inspect.getdoc(cls) or "").strip()


def snippet(code: str) -> str:
    """Rule snippets are written indented inside the class; tests run them dedented."""
    return textwrap.dedent(code).lstrip("\n")


@dataclass(frozen=True)
class ProjectSite:
    """Where a ``ProjectRule`` reports, and what it says."""

    line: int
    column: int
    message: str
    region: "RegionHit | None" = None


class ProjectRule(Rule):
    """A rule that judges the linked project and its regions rather than syntax: it runs once
    per reported file, after the region walk (GL001: what a capture entry could not reach)."""

    def judge(self, project: "Project", regions: "Regions", file: int) -> Iterable[ProjectSite]:
        raise NotImplementedError
