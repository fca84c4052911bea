"""One file's source → its ``FileFacts``: one libcst parse, one walk, every rule on the way.

The walk keeps its own scope stack and import table instead of libcst's metadata providers
(perf-notes.md). Besides definitions, calls and entry points, it runs each rule's
``visit_<NodeType>`` hooks on the nodes as it passes them; rules report candidates through the
walk's context (``SiteContext``), which knows the scope, loops, ``is_compiling()`` branches,
capture blocks and the names that hold dynamic ints or boolean masks.
"""

from __future__ import annotations

import ast
import io
import tokenize
import warnings
from collections.abc import Callable
from dataclasses import dataclass, field
from functools import cache
from typing import Literal

import libcst as cst

from graphlint.checks import apis, dynamo
from graphlint.checks.facts import (
    MODULE_SCOPE,
    Candidate,
    ExtractOptions,
    FileFacts,
    FlowFacts,
    FunctionFacts,
)
from graphlint.checks.assignments import flow_facts
from graphlint.checks.entry_points import EntryPoints, decorated_callee, flag_option
from graphlint.checks.suppressions import suppressions
from graphlint.checks.positions import ANCHOR_KINDS, locate
from graphlint.checks.scopes import Scope, ScopeStack
from graphlint.checks.rules import all_rules
from graphlint.checks.rules.base import Rule, SiteContext
from graphlint.checks.syntax import children, dotted_name, keyword, positional, preorder, string_value


LIBCST_CANNOT_PARSE = "valid Python that libcst cannot parse (not analysed):"


def extract_facts(
    source: bytes,
    options: ExtractOptions = ExtractOptions(),
    parse: Callable[[str, ast.Module], cst.Module] | None = None,
) -> FileFacts:
    """Facts of one file. Never raises on bad input: it becomes ``FileFacts.error``.

    ``parse`` turns the text (and its ``ast``) into the libcst module that is walked: libcst's
    parser by default; ``reparse.StatementParser`` reuses the statements of earlier texts of the
    same file (an editor's buffer) and raises ``ParserSyntaxError`` as libcst's does.

    CPython's own parser reads the file first. It costs a tenth of a libcst parse, its ``ast``
    gives the reported positions (``positions.py``), it says exactly where a syntax error is, and
    it refuses what no Python can run, among it deep nesting that libcst's native parser does
    not survive: 2,000 nested brackets overflow its stack (a segfault, not an exception) and a
    10,000-link chain (``a.b.b…``, ``1 + 1 + …``) takes it minutes.
    """
    try:
        encoding, _ = tokenize.detect_encoding(io.BytesIO(source).readline)
        text = source.decode(encoding)  # PEP 263: a declared encoding, or UTF-8 (a BOM is dropped)
    except UnicodeDecodeError as exc:
        line = source[: exc.start].count(b"\n") + 1
        return FileFacts(error=f"file is not {exc.encoding.upper()} ({exc.reason} at byte {exc.start})", error_line=line)
    except SyntaxError as exc:  # an unknown or contradictory encoding declaration
        return FileFacts(error=f"cannot read: {exc.msg}", error_line=exc.lineno or 1)
    try:
        with warnings.catch_warnings():  # "invalid escape sequence" & co. are not graphlint's to say
            warnings.simplefilter("ignore")
            tree = ast.parse(text)
    except SyntaxError as exc:
        return FileFacts(error=f"cannot parse: {exc.msg}", error_line=exc.lineno or 1, error_column=exc.offset or 1)
    except (RecursionError, MemoryError):
        return FileFacts(error="cannot parse: nested too deeply for Python's parser")
    except ValueError as exc:  # null bytes (Python < 3.12)
        return FileFacts(error=f"cannot parse: {exc}")
    try:
        module = parse(text, tree) if parse is not None else cst.parse_module(text)
    except cst.ParserSyntaxError as exc:  # valid Python that libcst does not read: `(x): int = 1`
        return FileFacts(
            error=f"{LIBCST_CANNOT_PARSE} {exc.message}",
            error_line=max(exc.raw_line, 1),
            error_column=exc.raw_column + 1,
        )
    return _Extractor(text, tree, options).run(module)


@dataclass
class _Scope(Scope):
    dynamic: dict[str, Literal["shape", "param"]] = field(default_factory=dict)
    masks: set[str] = field(default_factory=set)
    devices: dict[str, str] = field(default_factory=dict)  # tensor name → the device it was made on
    vectors: set[str] = field(default_factory=set)  # names of tensors known to be 1-D
    tensor_params: set[str] = field(default_factory=set)
    configs: dict[str, bool] = field(default_factory=dict)  # CompilerConfig var → capture mode
    backends: dict[str, str | None] = field(default_factory=dict)  # npu backend var → config var
    made: dict[str, str] = field(default_factory=dict)  # name → the callable that made its value
    values: set[str] = field(default_factory=set)  # names bound to a tensor's reduced value
    computed: set[str] = field(default_factory=set)  # names bound here to a call, subscript or arithmetic
    module_outputs: set[str] = field(default_factory=set)  # names bound to a submodule's output: self.embed(x)
    conditions: set[str] = field(default_factory=set)  # names bound to a tensor's truth: p < self.layerdrop
    displays: set[str] = field(default_factory=set)  # names bound to a list, tuple or set display or comprehension
    loops: int = 0


@dataclass
class _Report:
    rule: Rule
    node: cst.CSTNode
    message: str
    scope: str
    fix: bool
    eager: bool
    block: int | None
    anywhere: bool
    entry_scope_only: bool
    own_entry: int | None
    predicts: tuple[str, ...] = ()
    host_receiver: bool = False


_ARITHMETIC = (cst.Add, cst.Subtract, cst.Multiply, cst.FloorDivide, cst.Modulo, cst.Divide, cst.Power)
_VALUE_COMPARISONS = (cst.LessThan, cst.GreaterThan, cst.LessThanEqual, cst.GreaterThanEqual, cst.Equal, cst.NotEqual)
_WalkItem = cst.CSTNode | Callable[[], None]


class _Extractor(EntryPoints, ScopeStack[_Scope]):
    def __init__(self, text: str, tree: ast.Module, options: ExtractOptions) -> None:
        self.text = text
        self.tree = tree
        self.options = options
        self.facts = FileFacts()
        self.scopes = [_Scope("module", MODULE_SCOPE)]
        self.facts.functions[MODULE_SCOPE] = FunctionFacts(MODULE_SCOPE)
        self.eager = False
        # Expressions dynamo never evaluates: the right side of ``not is_tracing() and ...``.
        self.eager_nodes: set[int] = set()
        self.block: int | None = None
        self.in_error_message = False  # inside the message of a ``raise`` or an ``assert``
        self.stores: dict[int, cst.BaseExpression] = {}  # id(subscript target of ``=``) → value
        self.nesting_safe: set[int] = set()  # compile entries that may nest (config / presets)
        self.counts: dict[str, int] = {kind: 0 for kind in ANCHOR_KINDS.values()}
        self.ordinals: dict[int, tuple[str, int]] = {}
        self.entry_nodes: dict[int, int] = {}  # id(node) → index of the compile entry it makes
        self.entry_sites: list[cst.CSTNode] = []  # the node of each entry, for its line
        self.made_attributes: dict[tuple[str, str], str] = {}  # (class, attr) → what made self.attr
        self.reports: list[_Report] = []
        self.handlers: dict[type, Callable[[cst.CSTNode], list[_WalkItem] | None]] = {
            cst.Import: self._on_import,
            cst.ImportFrom: self._on_import_from,
            cst.ClassDef: self._on_class,
            cst.FunctionDef: self._on_function,
            cst.For: self._on_loop,
            cst.While: self._on_loop,
            cst.If: self._on_if,
            cst.IfExp: self._on_if_exp,
            cst.BooleanOperation: self._on_boolean,
            cst.With: self._on_with,
            cst.IndentedBlock: self._on_block,
            cst.Module: self._on_block,
            cst.Assign: self._on_assign,
            cst.AnnAssign: self._on_assign,
            cst.Call: self._on_call,
            cst.Raise: self._on_raise,
            cst.Assert: self._on_assert,
            cst.Lambda: self._on_lambda,
        }
        self.hooks = _rule_hooks()

    # ---- the walk ---------------------------------------------------------------------------
    def run(self, module: cst.Module) -> FileFacts:
        stack: list[_WalkItem] = [module]
        while stack:
            item = stack.pop()
            if not isinstance(item, cst.CSTNode):
                item()
                continue
            node_type = type(item)
            kind = ANCHOR_KINDS.get(node_type)
            if kind is not None:
                self.ordinals[id(item)] = (kind, self.counts[kind])
                self.counts[kind] += 1
            handler = self.handlers.get(node_type)
            plan = handler(item) if handler is not None else None
            for hook in self.hooks.get(node_type, ()):
                hook(item, self)
            stack.extend(reversed(plan if plan is not None else children(item)))
        self._finish(module)
        return self.facts

    def _finish(self, module: cst.Module) -> None:
        self.facts.flow = flow_facts(self.tree)
        if len(self.facts.flow.calls) != self.counts["Call"]:  # calls cannot be matched by ordinal
            self.facts.flow = FlowFacts(error="the calls of this file could not be numbered")
            self.facts.eager_calls, self.facts.block_calls = [], {}
        self.facts.flow.digest = self.facts.flow.solver_digest()
        anchors = [(*self.ordinals[id(r.node)], r.node) for r in self.reports]
        sites = [(*self.ordinals[id(node)], node) for node in self.entry_sites]
        spans = locate(self.text, module, self.counts, anchors + sites, tree=self.tree)
        for entry, (kind, ordinal, _) in zip(self.facts.entries, sites):
            entry.line = spans[kind, ordinal].line
        for report, (kind, ordinal, _) in zip(self.reports, anchors):
            span = spans[kind, ordinal]
            self.facts.candidates.append(
                Candidate(
                    code=report.rule.code,
                    scope=report.scope,
                    line=span.line,
                    column=span.column,
                    end_line=span.end_line,
                    end_column=span.end_column,
                    message=report.message,
                    anchor=(kind, ordinal),
                    fix=report.rule.fix_safety if report.fix else None,
                    eager=report.eager or id(report.node) in self.eager_nodes,
                    block=report.block,
                    anywhere=report.anywhere,
                    entry_scope_only=report.entry_scope_only,
                    own_entry=report.own_entry,
                    predicts=list(report.predicts),
                    host_receiver=report.host_receiver,
                )
            )
        self.facts.suppressions = suppressions(self.text)
        for qualname, line in _definition_lines(self.tree).items():
            definition = self.facts.functions.get(qualname)
            if definition is not None:
                definition.line = line

    # ---- SiteContext ------------------------------------------------------------------------
    @property
    def in_loop(self) -> bool:
        return self.function_scope.loops > 0

    @property
    def function_name(self) -> str | None:
        scope = self.function_scope
        return scope.qualname.rsplit(".", 1)[-1] if scope.kind == "function" else None

    def qualify(self, expr: cst.BaseExpression) -> str | None:
        name = dotted_name(expr)
        if name is None:
            return None
        head, dot, rest = name.partition(".")
        target = self.facts.imports.get(head)
        if target is not None:
            name = target + dot + rest
        for prefix, canonical in apis.CANONICAL_PREFIXES:
            if name.startswith(prefix):
                return canonical + name[len(prefix) :]
        return name

    def dynamic_int(self, expr: cst.BaseExpression) -> Literal["shape", "param"] | None:
        if isinstance(expr, cst.Name):
            return self.function_scope.dynamic.get(expr.value)
        if isinstance(expr, cst.Subscript):
            value = expr.value
            if isinstance(value, cst.Attribute) and value.attr.value in apis.SHAPE_ATTRIBUTES:
                return "shape"
            if _is_method_call(value, "size") and not value.args:  # type: ignore[union-attr]
                return "shape"
            return None
        if isinstance(expr, cst.Call):
            func = expr.func
            if isinstance(func, cst.Attribute) and func.attr.value in apis.SHAPE_METHODS:
                return "shape" if (expr.args or func.attr.value == "numel") else None
            name = self.qualify(func)
            args = positional(expr)
            if name == "len" and len(args) == 1 and isinstance(args[0].value, cst.Name):
                return "shape" if args[0].value.value in self.function_scope.tensor_params else None
            if name == "int" and len(args) == 1:
                return self.dynamic_int(args[0].value)
            return None
        if isinstance(expr, cst.BinaryOperation) and isinstance(expr.operator, _ARITHMETIC):
            return self.dynamic_int(expr.left) or self.dynamic_int(expr.right)
        if isinstance(expr, cst.UnaryOperation):
            return self.dynamic_int(expr.expression)
        return None

    def is_mask(self, expr: cst.BaseExpression) -> bool:
        if isinstance(expr, cst.Comparison):
            return True
        if isinstance(expr, cst.Name):
            return expr.value in self.function_scope.masks
        if isinstance(expr, cst.UnaryOperation) and isinstance(expr.operator, cst.BitInvert):
            return self.is_mask(expr.expression)
        if isinstance(expr, cst.BinaryOperation) and isinstance(
            expr.operator, (cst.BitAnd, cst.BitOr, cst.BitXor)
        ):
            return self.is_mask(expr.left) or self.is_mask(expr.right)
        if isinstance(expr, cst.Call):
            if _is_method_call(expr, "bool"):
                return True
            name = self.qualify(expr.func) or ""
            return name in ("torch.isnan", "torch.isinf", "torch.isfinite") or name.startswith(
                "torch.logical_"
            )
        return False

    def compile_entry_at(self, node: cst.CSTNode) -> int | None:
        return self.entry_nodes.get(id(node))

    def entry_nests_safely(self, entry: int) -> bool:
        return entry in self.nesting_safe

    def assigned_value(self, target: cst.BaseExpression) -> cst.BaseExpression | None:
        return self.stores.get(id(target))

    def known_device(self, expr: cst.BaseExpression) -> str | None:
        name = expr.value if isinstance(expr, cst.Name) else expr.attr.value if isinstance(expr, cst.Attribute) else None
        if name is not None and name.endswith(apis.HOST_NAME_SUFFIXES):
            return apis.HOST_DEVICE
        if isinstance(expr, cst.Name):
            return self.function_scope.devices.get(expr.value)
        if not isinstance(expr, cst.Call):
            return None
        func = expr.func
        if isinstance(func, cst.Attribute) and func.attr.value == "cpu" and not expr.args:
            return apis.HOST_DEVICE
        if isinstance(func, cst.Attribute) and func.attr.value == "to":
            device = keyword(expr, "device") or (positional(expr)[0] if positional(expr) else None)
            return self.device_text(device.value) if device is not None else None
        if self.qualify(func) in apis.TENSOR_FACTORIES:
            device = keyword(expr, "device")
            if device is not None:
                return self.device_text(device.value)
            pinned = keyword(expr, "pin_memory")
            if pinned is not None and isinstance(pinned.value, cst.Name) and pinned.value.value == "True":
                return apis.HOST_DEVICE
        return None

    def device_text(self, expr: cst.BaseExpression) -> str:
        text = string_value(expr)
        if isinstance(expr, cst.Call) and self.qualify(expr.func) == "torch.device" and expr.args:
            text = string_value(expr.args[0].value)
        if text is not None:
            return text.split(":")[0]
        return _CODE.code_for_node(expr)

    def is_vector(self, expr: cst.BaseExpression) -> bool:
        if isinstance(expr, cst.Name):
            return expr.value in self.function_scope.vectors
        if not isinstance(expr, cst.Call):
            return False
        func = expr.func
        if self.qualify(func) in apis.VECTOR_FACTORIES:
            return True
        if not isinstance(func, cst.Attribute):
            return False
        args = positional(expr)
        if func.attr.value in apis.FLATTENING_METHODS and not expr.args:
            return True
        return (
            func.attr.value in apis.RESHAPE_METHODS
            and len(expr.args) == 1
            and len(args) == 1
            and _CODE.code_for_node(args[0].value) == "-1"
        )

    def is_tensor_value(self, expr: cst.BaseExpression) -> bool:
        if isinstance(expr, cst.Call):
            func = expr.func
            if isinstance(func, cst.Attribute) and func.attr.value in dynamo.reductions():
                head = func.value
                while isinstance(head, (cst.Attribute, cst.Subscript, cst.Call)):
                    head = head.func if isinstance(head, cst.Call) else head.value
                if isinstance(head, cst.Name) and head.value in self.facts.imports:
                    return self.qualify(func) in dynamo.reduction_functions()  # torch.sum(x), not np.sum
                return not isinstance(head, (cst.SimpleString, cst.List, cst.Tuple, cst.Dict, cst.Set))
            return False
        if isinstance(expr, cst.Name):
            scope = self.function_scope
            return expr.value in scope.values or expr.value in scope.tensor_params
        if isinstance(expr, cst.Subscript):  # position_ids[0][0]
            return self.is_tensor_value(expr.value) if isinstance(expr.value, (cst.Name, cst.Subscript)) else False
        if isinstance(expr, cst.BinaryOperation) and isinstance(expr.operator, _ARITHMETIC):
            return self.is_tensor_value(expr.left) or self.is_tensor_value(expr.right)
        if isinstance(expr, cst.UnaryOperation) and not isinstance(expr.operator, cst.Not):
            return self.is_tensor_value(expr.expression)
        return False

    def is_tensor_condition(self, expr: cst.BaseExpression) -> bool:
        if isinstance(expr, cst.Comparison):
            if not all(isinstance(c.operator, _VALUE_COMPARISONS) for c in expr.comparisons):
                return False  # ``t is None``, ``k in d``: no tensor is read
            return any(self._is_tensor(side) for side in (expr.left, *(c.comparator for c in expr.comparisons)))
        if isinstance(expr, cst.Name):
            return expr.value in self.function_scope.conditions
        if isinstance(expr, cst.UnaryOperation) and isinstance(expr.operator, cst.Not):
            return self.is_tensor_condition(expr.expression)
        if isinstance(expr, cst.BooleanOperation):
            return self.is_tensor_condition(expr.left) or self.is_tensor_condition(expr.right)
        return False

    def is_python_container(self, expr: cst.BaseExpression) -> bool:
        if isinstance(expr, cst.Name):
            return expr.value in self.function_scope.displays
        return _is_display(expr)

    def _is_tensor(self, expr: cst.BaseExpression) -> bool:
        """A tensor's value (``is_tensor_value``) or a tensor a factory made (``torch.rand([])``,
        or a name bound to one)."""
        if self.is_tensor_value(expr):
            return True
        if isinstance(expr, cst.Call):
            return self.qualify(expr.func) in apis.TENSOR_FACTORIES
        return isinstance(expr, cst.Name) and self.made_by(expr) in apis.TENSOR_FACTORIES

    def on_module_device(self, expr: cst.BaseExpression) -> bool:
        if isinstance(expr, cst.Name):
            return expr.value in self.function_scope.module_outputs
        if isinstance(expr, cst.Call):
            return self._moves_with_model(expr.func)
        root = expr
        while isinstance(root, cst.Attribute) and not _is_self_attribute(root):
            root = root.value
        return self._moves_with_model(root)

    def _moves_with_model(self, expr: cst.BaseExpression) -> bool:
        """``self.x`` that ``__init__`` made with something other than a tensor factory: a
        submodule (its output is on the module's device), ``nn.Parameter(...)`` or a registered
        buffer. A plain tensor attribute (``self.cache = torch.zeros(n)``) is not moved by
        ``model.to()``, and a method of the class (``self.helper``) may make host tensors."""
        maker = self.made_by(expr) if _is_self_attribute(expr) else None
        return maker is not None and maker not in apis.TENSOR_FACTORIES

    def computed_here(self, expr: cst.BaseExpression) -> bool:
        return isinstance(expr, cst.Name) and expr.value in self.function_scope.computed

    def made_by(self, expr: cst.BaseExpression) -> str | None:
        if isinstance(expr, cst.Name):
            for scope in (self.function_scope, self.module_scope):
                if expr.value in scope.made:
                    return scope.made[expr.value]
            return None
        class_name = self.function_scope.class_name
        if _is_self_attribute(expr) and class_name is not None:
            return self.made_attributes.get((class_name, expr.attr.value))  # type: ignore[attr-defined]
        return None

    def report(
        self,
        rule: Rule,
        node: cst.CSTNode,
        message: str | None = None,
        *,
        fix: bool = False,
        anywhere: bool = False,
        entry_scope_only: bool = False,
        own_entry: int | None = None,
        predicts: tuple[str, ...] = (),
        host_receiver: bool = False,
    ) -> None:
        if type(node) not in ANCHOR_KINDS:
            raise TypeError(f"{rule.code} reports a {type(node).__name__}; report one of {list(ANCHOR_KINDS)}")
        self.reports.append(
            _Report(
                rule=rule,
                node=node,
                message=message or rule.message,
                scope=self.function_scope.qualname,
                fix=fix,
                eager=self.eager,
                block=self.block,
                anywhere=anywhere,
                entry_scope_only=entry_scope_only,
                own_entry=own_entry,
                predicts=predicts,
                host_receiver=host_receiver,
            )
        )

    # ---- state changes scheduled inside a walk plan -----------------------------------------
    def _set_eager(self, eager: bool) -> Callable[[], None]:
        def apply() -> None:
            self.eager = eager

        return apply

    def _set_block(self, block: int | None) -> Callable[[], None]:
        def apply() -> None:
            self.block = block

        return apply

    def _restore(self) -> Callable[[], None]:
        eager, block = self.eager, self.block

        def apply() -> None:
            self.eager, self.block = eager, block

        return apply

    # ---- handlers ---------------------------------------------------------------------------
    def _on_import(self, node: cst.CSTNode) -> list[_WalkItem]:
        assert isinstance(node, cst.Import)
        for alias in node.names:
            full = dotted_name(alias.name)
            if full is None:
                continue
            if alias.asname is not None and isinstance(alias.asname.name, cst.Name):
                self.facts.imports[alias.asname.name.value] = full
            else:
                head = full.split(".", 1)[0]
                self.facts.imports[head] = head
        return []

    def _on_import_from(self, node: cst.CSTNode) -> list[_WalkItem]:
        assert isinstance(node, cst.ImportFrom)
        if isinstance(node.names, cst.ImportStar):
            return []
        base = "." * len(node.relative)
        if node.module is not None:
            base += dotted_name(node.module) or ""
        for alias in node.names:
            name = dotted_name(alias.name)
            if name is None:
                continue
            local = alias.asname.name.value if alias.asname and isinstance(alias.asname.name, cst.Name) else name
            joiner = "" if base.endswith(".") or not base else "."
            self.facts.imports[local] = f"{base}{joiner}{name}"
        return []

    def _on_class(self, node: cst.CSTNode) -> list[_WalkItem]:
        assert isinstance(node, cst.ClassDef)
        qualname = self.nested_qualname(node.name.value)
        for decorator in node.decorators:
            self._decorator_entry(decorator, [["def", qualname]])
        scope = _Scope("class", qualname, class_name=qualname)
        return [*node.decorators, *node.bases, *node.keywords, self._push(scope), node.body, self.scopes.pop]

    def _on_function(self, node: cst.CSTNode) -> list[_WalkItem]:
        assert isinstance(node, cst.FunctionDef)
        outer = self.scope
        qualname = self.nested_qualname(node.name.value)
        # A second def of one name (property setters, TYPE_CHECKING branches) adds to the first.
        facts = self.facts.functions.setdefault(qualname, FunctionFacts(qualname))
        scope = _Scope("function", qualname, class_name=outer.class_name if outer.kind == "class" else None)
        if scope.class_name is None and outer.kind == "function":
            scope.class_name = outer.class_name  # closures inside methods still see ``self``
        params = node.params
        for param in (*params.posonly_params, *params.params, *params.kwonly_params):
            annotation = self.qualify(param.annotation.annotation) if param.annotation else None
            if annotation == "int":
                scope.dynamic[param.name.value] = "param"
            elif annotation in ("torch.Tensor", "Tensor") or _tensor_annotation(self.qualify, param.annotation):
                scope.tensor_params.add(param.name.value)
        for decorator in node.decorators:
            name = self.qualify(decorated_callee(decorator.decorator))
            if name in apis.REGION_BOUNDARY_DECORATORS or (name or "").rsplit(".", 1)[-1] in apis.REGION_BOUNDARY_BARE:
                facts.boundary = True
            self._decorator_entry(decorator, [["def", qualname]])
        returns = [node.returns] if node.returns else []
        restore = self._restore()
        enter = [self._push(scope), self._set_eager(False), self._set_block(None)]
        return [*node.decorators, *enter, node.params, *returns, node.body, self.scopes.pop, restore]

    def _on_lambda(self, node: cst.CSTNode) -> list[_WalkItem]:
        """A lambda is a function of its own: ``outer.<lambda1>``, numbered in source order."""
        assert isinstance(node, cst.Lambda)
        qualname = self.lambda_qualname()
        self.facts.functions.setdefault(qualname, FunctionFacts(qualname))
        scope = _Scope("function", qualname, class_name=self.function_scope.class_name)
        restore = self._restore()
        enter = [self._push(scope), self._set_eager(False), self._set_block(None)]
        return [node.params, *enter, node.body, self.scopes.pop, restore]

    def _push(self, scope: _Scope) -> Callable[[], None]:
        return lambda: self.scopes.append(scope)

    def _on_loop(self, node: cst.CSTNode) -> list[_WalkItem]:
        assert isinstance(node, (cst.For, cst.While))
        scope = self.function_scope
        if isinstance(node, cst.For):
            head: list[_WalkItem] = [node.target, node.iter]
        else:
            head = [node.test]

        def enter() -> None:
            scope.loops += 1

        def leave() -> None:
            scope.loops -= 1

        tail = [node.orelse] if node.orelse else []
        return [*head, enter, node.body, leave, *tail]

    def _value_when_compiling(self, test: cst.BaseExpression) -> bool | None:
        """What ``test`` is while dynamo traces, where a compile check decides it (the checks
        and what they mean are data: ``dynamo.toml``): ``is_compiling()`` True,
        ``not is_tracing(x) and mask.all()`` False, ``torch.jit.is_tracing()`` False; None when
        the value depends on something else."""
        if isinstance(test, cst.UnaryOperation) and isinstance(test.operator, cst.Not):
            inner = self._value_when_compiling(test.expression)
            return None if inner is None else not inner
        if isinstance(test, cst.Call):
            return dynamo.true_when_compiling(self.qualify(test.func))
        if isinstance(test, cst.BooleanOperation):
            decisive = isinstance(test.operator, cst.Or)  # the value that ends the chain
            left = self._value_when_compiling(test.left)
            right = self._value_when_compiling(test.right)
            if decisive in (left, right):
                return decisive
            return right if left is not None else None
        return None

    def _on_if(self, node: cst.CSTNode) -> list[_WalkItem] | None:
        assert isinstance(node, cst.If)
        value = self._value_when_compiling(node.test)
        if value is None:
            return None
        restore = self._restore()
        tail = [self._set_eager(self.eager or value), node.orelse] if node.orelse else []
        return [node.test, self._set_eager(self.eager or not value), node.body, *tail, restore]

    def _on_if_exp(self, node: cst.CSTNode) -> None:
        assert isinstance(node, cst.IfExp)
        value = self._value_when_compiling(node.test)
        if value is not None:
            self._mark_eager(node.orelse if value else node.body)

    def _on_boolean(self, node: cst.CSTNode) -> None:
        """``not is_tracing(x) and mask.all()``: while compiling the left side ends the chain."""
        assert isinstance(node, cst.BooleanOperation)
        if self._value_when_compiling(node.left) is isinstance(node.operator, cst.Or):
            self._mark_eager(node.right)

    def _mark_eager(self, expr: cst.BaseExpression) -> None:
        self.eager_nodes.update(id(inner) for inner in preorder(expr))

    def _on_with(self, node: cst.CSTNode) -> list[_WalkItem] | None:
        assert isinstance(node, cst.With)
        for item in node.items:
            call = item.item
            if isinstance(call, cst.Call) and self.qualify(call.func) in apis.CAPTURE_CONTEXTS:
                index = self._add_entry(call, "capture", traced=False, targets=[], via="block")
                restore = self._restore()
                return [*node.items, self._set_block(index), node.body, restore]
        return None

    def _on_block(self, node: cst.CSTNode) -> list[_WalkItem] | None:
        """Statement-level regions: between ``g.capture_begin()`` and ``g.capture_end()`` code is
        captured; after ``if is_compiling(): return ...`` the rest of the block is eager."""
        assert isinstance(node, (cst.IndentedBlock, cst.Module))
        plan: list[_WalkItem] = []
        end_capture = None
        made_eager = False
        for statement in node.body:
            method = _statement_method_call(statement)
            if method == apis.CAPTURE_END_METHOD and end_capture is not None:
                plan.append(end_capture)
                end_capture = None
            plan.append(statement)
            if method == apis.CAPTURE_BEGIN_METHOD and end_capture is None:
                call = statement.body[0].value  # type: ignore[union-attr]
                end_capture = self._set_block(self.block)
                index = self._add_entry(call, "capture", traced=False, targets=[], via="block")
                plan.append(self._set_block(index))
            elif self._returns_when_compiling(statement) and not made_eager:
                made_eager = True
                plan.append(self._set_eager(True))
        if end_capture is not None:
            plan.append(end_capture)
        if made_eager:
            plan.append(self._set_eager(self.eager))
        return plan

    def _returns_when_compiling(self, statement: cst.CSTNode) -> bool:
        """``if is_compiling(): ... return`` (no else): what follows runs only in eager mode."""
        if not isinstance(statement, cst.If) or statement.orelse is not None:
            return False
        if self._value_when_compiling(statement.test) is not True:
            return False
        body = statement.body.body
        last = body[-1] if body else None
        if isinstance(last, cst.SimpleStatementLine):
            return isinstance(last.body[-1], (cst.Return, cst.Raise))
        return False

    def _on_assign(self, node: cst.CSTNode) -> None:
        assert isinstance(node, (cst.Assign, cst.AnnAssign))
        value = node.value
        if value is None:
            return None
        targets = [t.target for t in node.targets] if isinstance(node, cst.Assign) else [node.target]
        scope = self.function_scope
        for target in targets:
            if isinstance(target, cst.Subscript):
                self.stores[id(target)] = value
            if isinstance(target, cst.Name):
                if self.scope.kind != "class":  # class attributes are not names in scope
                    self._bind_name(scope, target.value, value)
            elif isinstance(target, (cst.Tuple, cst.List)) and self._is_shape_tuple(value):
                for element in target.elements:
                    if isinstance(element.value, cst.Name):
                        scope.dynamic[element.value.value] = "shape"
            elif isinstance(target, cst.Attribute) and isinstance(target.value, cst.Name):
                owner = target.value.value
                if owner == "self" and scope.class_name is not None:
                    if isinstance(value, cst.Call) and (maker := self.qualify(value.func)):
                        self.made_attributes[scope.class_name, target.attr.value] = maker
                elif owner in self._config_scope(owner).configs and target.attr.value == "mode":
                    self._config_scope(owner).configs[owner] = string_value(value) in apis.CAPTURE_MODES
        return None

    def _bind_name(self, scope: _Scope, name: str, value: cst.BaseExpression) -> None:
        # What the name now holds, forgetting what it held before.
        for known, fact in ((scope.dynamic, self.dynamic_int(value)), (scope.devices, self.known_device(value))):
            if fact is not None:
                known[name] = fact  # type: ignore[index]
            else:
                known.pop(name, None)
        for names, holds in ((scope.masks, self.is_mask(value)), (scope.vectors, self.is_vector(value))):
            if holds:
                names.add(name)
            else:
                names.discard(name)
        if self.is_tensor_value(value):
            scope.values.add(name)
        else:
            scope.values.discard(name)
        for names, holds in ((scope.conditions, self.is_tensor_condition(value)), (scope.displays, _is_display(value))):
            if holds:
                names.add(name)
            else:
                names.discard(name)
        if isinstance(value, cst.Call) and self._moves_with_model(value.func):
            scope.module_outputs.add(name)
        else:
            scope.module_outputs.discard(name)
        if isinstance(value, (cst.Call, cst.Subscript, cst.BinaryOperation, cst.UnaryOperation)):
            scope.computed.add(name)
        else:  # an alias of a parameter, an attribute or a constant
            scope.computed.discard(name)
        maker = self.qualify(value.func) if isinstance(value, cst.Call) else None
        if maker:
            scope.made[name] = maker
        else:
            scope.made.pop(name, None)
        if isinstance(value, cst.Call):
            callee = self.qualify(value.func)
            if callee in apis.COMPILER_CONFIG_CLASSES:
                scope.configs[name] = False
                return
            if callee in apis.NPU_BACKEND_FACTORIES:
                config = keyword(value, "compiler_config")
                config_name = config.value.value if config and isinstance(config.value, cst.Name) else None
                scope.backends[name] = config_name

    def _is_shape_tuple(self, value: cst.BaseExpression) -> bool:
        if isinstance(value, cst.Attribute) and value.attr.value in apis.SHAPE_ATTRIBUTES:
            return True
        if isinstance(value, cst.Subscript):
            return self._is_shape_tuple(value.value)
        return _is_method_call(value, "size") and not value.args  # type: ignore[union-attr]

    def _config_scope(self, name: str) -> _Scope:
        scope = self.function_scope
        return scope if name in scope.configs else self.module_scope

    def _on_call(self, node: cst.CSTNode) -> None:
        assert isinstance(node, cst.Call)
        ordinal = self.ordinals[id(node)][1]
        callee = self.qualify(node.func)
        targets = self._compile_targets(node, ordinal)
        handed = any(arg.keyword is None for arg in node.args)
        if targets is not None:
            options = node.func if isinstance(node.func, cst.Call) else node
            self._add_entry(
                node, self._compile_kind(options), traced=True, targets=targets, dynamic=flag_option(options, "dynamic"),
                fullgraph=flag_option(options, "fullgraph"), via="call", replaced=self._replaced_compile(node),
            )
        # A call with keywords only hands over nothing: ``support_torch_compile(dynamic=...)``
        # makes the decorator that is the entry point.
        elif handed and callee in apis.MAKE_GRAPHED_CALLABLES:
            self._add_entry(node, "capture", traced=False, targets=[["arg", ordinal]], via="call")
        elif handed and callee in self.options.capture_entrypoints:
            self._add_entry(node, "capture", traced=False, targets=[["arg", ordinal]], via="config")
        elif handed and callee in self.options.compile_entrypoints:
            entry = self._add_entry(
                node, "compiled", traced=True, targets=[["arg", ordinal]], via="config",
                replaced=callee in self.options.replaced_entrypoints,
            )
            if callee in self.options.nesting_safe_entrypoints:
                self.nesting_safe.add(entry)
        if self.known_device(node) == apis.HOST_DEVICE:
            self.facts.host_calls.append(ordinal)
        self._note_registered_buffer(node)
        if self.eager:
            self.facts.eager_calls.append(ordinal)
        if self.block is not None:
            self.facts.block_calls[ordinal] = self.block
        return None

    def _note_registered_buffer(self, node: cst.Call) -> None:
        """``self.register_buffer("inv_freq", t)``: ``self.inv_freq`` moves with the model."""
        func, args = node.func, positional(node)
        class_name = self.function_scope.class_name
        if (
            isinstance(func, cst.Attribute) and func.attr.value == "register_buffer" and _is_self_attribute(func)
            and class_name is not None and args and (name := string_value(args[0].value))
        ):
            self.made_attributes[class_name, name] = REGISTERED_BUFFER

    def _set_error_message(self, inside: bool) -> Callable[[], None]:
        def apply() -> None:
            self.in_error_message = inside

        return apply

    def _on_raise(self, node: cst.CSTNode) -> list[_WalkItem]:
        """What a ``raise`` builds is its message: dynamo does not trace it on the passing path."""
        assert isinstance(node, cst.Raise)
        parts = [part for part in (node.exc, node.cause.item if node.cause else None) if part is not None]
        return [self._set_error_message(True), *parts, self._set_error_message(self.in_error_message)]

    def _on_assert(self, node: cst.CSTNode) -> list[_WalkItem]:
        """``assert test, message``: the test is traced, the message only when it fails."""
        assert isinstance(node, cst.Assert)
        message = [self._set_error_message(True), node.msg, self._set_error_message(self.in_error_message)]
        return [node.test, *(message if node.msg is not None else [])]

_CODE = cst.Module(body=[])  # renders an expression's source text
REGISTERED_BUFFER = "torch.nn.Module.register_buffer"  # what "made" self.name after register_buffer("name", t)


@cache
def _rule_hooks() -> dict[type, list[Callable[[cst.CSTNode, SiteContext], None]]]:
    """Every rule's ``visit_<NodeType>`` methods, by node type."""
    hooks: dict[type, list[Callable[[cst.CSTNode, SiteContext], None]]] = {}
    for rule in all_rules():
        for name in dir(rule):
            if name.startswith("visit_"):
                node_type = getattr(cst, name[len("visit_") :])
                hooks.setdefault(node_type, []).append(getattr(rule, name))
    return hooks


def _is_self_attribute(expr: cst.BaseExpression) -> bool:
    return isinstance(expr, cst.Attribute) and isinstance(expr.value, cst.Name) and expr.value.value == "self"


def _tensor_annotation(qualify: Callable[[cst.BaseExpression], str | None], annotation: cst.Annotation | None) -> bool:
    """``torch.LongTensor | None``, ``Optional[torch.Tensor]``: a tensor (or nothing)."""
    if annotation is None:
        return False
    for node in preorder(annotation.annotation):
        if isinstance(node, (cst.Name, cst.Attribute)):
            name = qualify(node) or ""
            if name.startswith("torch.") and name.endswith("Tensor"):
                return True
    return False
def _is_compiling_function(name: str | None) -> bool:
    return name is not None and name.rsplit(".", 1)[-1] in apis.IS_COMPILING_NAMES


def _is_method_call(expr: cst.BaseExpression, method: str) -> bool:
    return (
        isinstance(expr, cst.Call)
        and isinstance(expr.func, cst.Attribute)
        and expr.func.attr.value == method
    )


def _statement_method_call(statement: cst.CSTNode) -> str | None:
    """``g.capture_begin()`` as a statement of its own: the method name."""
    if isinstance(statement, cst.SimpleStatementLine) and len(statement.body) == 1:
        expr = statement.body[0]
        if isinstance(expr, cst.Expr) and isinstance(expr.value, cst.Call):
            func = expr.value.func
            if isinstance(func, cst.Attribute):
                return func.attr.value
    return None


def _definition_lines(tree: ast.Module) -> dict[str, int]:
    """The line of every ``def`` and ``class``, by the qualname the walk gives it (the first of
    two definitions of one name)."""
    lines: dict[str, int] = {}
    stack: list[tuple[ast.AST, str]] = [(tree, "")]
    while stack:
        node, prefix = stack.pop()
        for child in ast.iter_child_nodes(node):
            if isinstance(child, (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef)):
                qualname = f"{prefix}{child.name}"
                lines.setdefault(qualname, child.lineno)
                stack.append((child, qualname + "."))
            elif isinstance(child, ast.stmt):
                stack.append((child, prefix))
    return lines


def _is_display(expr: cst.BaseExpression) -> bool:
    return isinstance(expr, (cst.List, cst.Tuple, cst.Set, cst.ListComp, cst.SetComp))
