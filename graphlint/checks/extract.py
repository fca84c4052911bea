"""One file's source → its ``FileFacts``: one libcst parse, one walk, every rule on the way.

The walk keeps its own scope stack and import table instead of libcst's metadata providers
(perf-notes.md). Besides definitions, calls and entry points, it runs each rule's
``visit_<NodeType>`` hooks on the nodes as it passes them; rules report candidates through the
walk's context (``SiteContext``), which knows the scope, loops, ``is_compiling()`` branches,
capture blocks and the names that hold dynamic ints or boolean masks.

The extractor is one class made of small parts: ``entry_points.py`` (where regions start),
``compile_branches.py`` (eager branches and capture blocks), ``local_bindings.py`` (what an
assignment binds), ``site_values.py`` (the questions rules ask about an expression),
``walk_scope.py`` (what a scope keeps of its names) and ``import_names.py`` (the import table),
among others; this module has the walk itself, definitions, calls and the reports.
"""

from __future__ import annotations

import ast
import io
import re
import tokenize
import warnings
from collections.abc import Callable
from functools import cache
from typing import Any

import libcst as cst

from graphlint.checks import apis
from graphlint.checks.facts import MODULE_SCOPE, NO_CALL, ExtractOptions, FileFacts, FlowFacts, FunctionFacts
from graphlint.checks.assignments import flow_facts
from graphlint.checks.ast_children import child_nodes
from graphlint.checks.candidate_reports import CandidateReports, Report
from graphlint.checks.capture_values import CaptureLocals, capture_modes, modes_may_differ
from graphlint.checks.compile_branches import CompileBranches, WalkItem
from graphlint.checks.empty_values import EmptyValues
from graphlint.checks.entry_points import EntryPoints, decorated_callee
from graphlint.checks.error_messages import ErrorMessages
from graphlint.checks.import_names import ImportNames
from graphlint.checks.kept_answers import KeptAnswers
from graphlint.checks.local_bindings import LocalBindings, module_state_names
from graphlint.checks.module_branches import ast_branches
from graphlint.checks.module_state_arguments import ModuleStateArguments
from graphlint.checks.suppressions import suppressions
from graphlint.checks.top_imports import top_level_imports
from graphlint.checks.positions import ANCHOR_KINDS, locate
from graphlint.checks.returned_devices import ReturnedDevices
from graphlint.checks.returned_elements import ReturnedElements
from graphlint.checks.returned_none import ReturnedNone
from graphlint.checks.returning_calls import ReturningCalls
from graphlint.checks.scalar_operands import ScalarOperands
from graphlint.checks.presets import glob_pattern
from graphlint.checks.raising_blocks import RaisingBlocks
from graphlint.checks.reparse import StatementParser
from graphlint.checks.scopes import ScopeStack
from graphlint.checks.site_values import SiteValues
from graphlint.checks.walk_scope import WalkScope
from graphlint.checks.syntax import children, is_node_type, preorder
from graphlint.checks.unbound_names import ModuleNames
from graphlint.checks.unvalidated_parse import parse_unvalidated
from graphlint.checks.walk_dispatch import STEP, PlainFields, asks_of, rule_hooks


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
        module = parse(text, tree) if parse is not None else parse_unvalidated(text)
    except cst.ParserSyntaxError as exc:  # valid Python that libcst does not read: `(x): int = 1`
        return FileFacts(
            error=f"{LIBCST_CANNOT_PARSE} {exc.message}",
            error_line=max(exc.raw_line, 1),
            error_column=exc.raw_column + 1,
        )
    kept = parse.answers if isinstance(parse, StatementParser) else KeptAnswers()
    return _Extractor(text, tree, options, kept).run(module)


class _Extractor(
    EntryPoints, SiteValues, CompileBranches, LocalBindings, ReturnedNone, ReturnedElements, EmptyValues, CandidateReports,
    ErrorMessages, RaisingBlocks, ReturningCalls, ScalarOperands, ImportNames, ModuleStateArguments, ReturnedDevices,
    ScopeStack[WalkScope],
):
    def __init__(self, text: str, tree: ast.Module, options: ExtractOptions, kept: KeptAnswers) -> None:
        self.text = text
        self.tree = tree
        self.options = options
        self.facts = FileFacts()
        self.scopes = [WalkScope("module", MODULE_SCOPE)]
        self.facts.functions[MODULE_SCOPE] = FunctionFacts(MODULE_SCOPE)
        self.eager = self.in_try = False
        # raising_blocks.py; answers about a node's subtree alone, kept between texts (kept_answers.py)
        self.leaving_nodes, self.none_operands, self.sure_calls = kept.leaving_nodes, kept.none_operands, kept.sure_calls
        self.function_names, self.scanned_imports = kept.function_names, {}
        self.kept = kept
        self.alike_modes, self.modes_differ = None, modes_may_differ(options, text)
        self.all_capture_modes = self.capture_modes = capture_modes(options)  # none: ``uncaptured``
        # returned_none.py, empty_values.py
        self.captured_unless, self.unread_returns, self.uncaptured_blocks = frozenset(), set(), set()
        self.element_values, self.unknown_elements = {}, set()  # returned_elements.py
        self.after, self.returns_anywhere, self.function_bodies = NO_CALL, set(), set()  # returning_calls.py
        # Expressions dynamo never evaluates: the right side of ``not is_tracing() and ...``.
        self.eager_nodes: set[int] = set()
        self.moved_once: set[int] = set()  # id(t.to(d)) in ``if t.device != d: t = t.to(d)``
        self.module_state_arguments = {}  # call ordinal → its arguments that are module state
        self.argument_devices = {}  # call ordinal → its arguments' devices
        # id(x.item()) of host work, and id() of the host factories such a read-back alone uses
        self.host_side_nodes: set[int] = set()
        self.parent_maps = {}  # scalar_operands.py: id(function) → id(node) → its parent
        self.block: int | None = None
        self.stores: dict[int, cst.BaseExpression] = {}  # id(subscript target of ``=``) → value
        self.nesting_safe: set[int] = set()  # compile entries that may nest (config / presets)
        self.counts: dict[str, int] = {kind: 0 for kind in ANCHOR_KINDS.values()}
        self.ordinals: dict[int, tuple[str, int]] = {}
        self.entry_nodes: dict[int, int] = {}  # id(node) → index of the compile entry it makes
        self.entry_sites: list[cst.CSTNode] = []  # the node of each entry, for its line
        self.made_attributes: dict[tuple[str, str], str] = {}  # (class, attr) → what made self.attr
        self.module_state_names = module_state_names(tree, text)
        self.reports: list[Report] = []
        self.qualified = {}

    # ---- the walk ---------------------------------------------------------------------------
    def run(self, module: cst.Module) -> FileFacts:
        self.module_scope.capture_locals = CaptureLocals(module)  # its top level's names (capture_values.py)
        self.module_names, self.skipped_module_blocks = ModuleNames(module, self.kept.statement_bindings), set()
        self.untaken_module_branches = set()
        # What each node type asks of the walk (its anchor kind, handler, rules' hooks), looked
        # up once per node; most nodes (names, attributes, strings) ask nothing. Local to the
        # walk: kept on the extractor, its bound methods would make a reference cycle that
        # holds both trees until the garbage collector finds it (``collect.py``).
        handlers: dict[type, Callable[[cst.CSTNode], list[WalkItem] | None]] = {
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
            cst.Try: self._on_try,
            cst.TryStar: self._on_try,
            cst.Assert: self._on_assert,
            cst.Lambda: self._on_lambda,
            cst.Return: self._on_return_statement,
            cst.Yield: self._on_yield_expression,
        }
        hooks = rule_hooks()
        # node type → a step of a handler's plan (STEP), what a node asks (anchor kind,
        # handler, hooks), or, for a node nothing asks about (most: names, attributes,
        # arguments), its child fields last first, which the walk pushes itself (``children``)
        dispatch: dict[type, Any] = {}
        stack: list[WalkItem] = [module]
        while stack:
            item = stack.pop()
            node_type = type(item)
            asks = dispatch.get(node_type)
            if asks is None:
                asks = dispatch[node_type] = asks_of(node_type, handlers, hooks)
            if type(asks) is PlainFields:
                for name in asks:
                    value = getattr(item, name)
                    value_type = type(value)
                    if value_type is tuple or value_type is list:
                        stack.extend(reversed(value))
                    elif value is not None and is_node_type(value_type):
                        stack.append(value)
                continue
            if asks is STEP:
                item()  # type: ignore[operator]
                continue
            kind, handler, node_hooks = asks  # type: ignore[misc]
            if kind is not None:
                self.ordinals[id(item)] = (kind, self.counts[kind])
                self.counts[kind] += 1
            plan = handler(item) if handler is not None else None
            for hook in node_hooks:
                hook(item, self)
            stack.extend(reversed(plan if plan is not None else children(item)))  # type: ignore[arg-type]
        self._finish(module)
        return self.facts

    def _never_selected_key(self, key: str) -> bool:
        """Whether ``key`` (a dict key as written, ``PlatformEnum.CPU``) names, after this file's
        imports, one of the ``not-selected-keys``."""
        head, dot, rest = key.partition(".")
        target = self.facts.imports.get(head)
        qualified = target + dot + rest if target is not None else key
        return any(pattern.match(qualified) for pattern in _key_patterns(self.options.not_selected_keys))

    def _finish(self, module: cst.Module) -> None:
        untaken = ast_branches(self.tree, self.untaken_module_branches, self.counts["If"])
        self.facts.flow = flow_facts(self.tree, self._never_selected_key if self.options.not_selected_keys else None, untaken)
        if len(self.facts.flow.calls) != self.counts["Call"]:  # calls cannot be matched by ordinal
            self.facts.flow = FlowFacts(error="the calls of this file could not be numbered")
            self.facts.eager_calls, self.facts.uncaptured_calls, self.facts.block_calls = [], [], {}
            self.facts.uncaptured_unless, self.facts.call_modes, self.facts.call_after = {}, {}, {}
            self.facts.uncaptured_unless_elements, self.facts.returned_arguments = {}, {}
            self.facts.return_points = {}
        self.facts.flow.digest = self.facts.flow.solver_digest()
        self._finish_module_state_arguments()
        anchors = [(*self.ordinals[id(r.node)], r.node) for r in self.reports]
        sites = [(*self.ordinals[id(node)], node) for node in self.entry_sites]
        spans = locate(self.text, module, self.counts, anchors + sites, tree=self.tree)
        for entry, (kind, ordinal, _) in zip(self.facts.entries, sites):
            entry.line = spans[kind, ordinal].line
        self.facts.candidates.extend(self.candidates(anchors, spans))
        for (class_name, attribute), maker in self.made_attributes.items():
            if maker not in apis.TENSOR_FACTORIES:  # what model.to() moves: see SiteValues._moves_with_model
                self.facts.module_state.setdefault(class_name, []).append(attribute)
        self.facts.suppressions = suppressions(self.text)
        self.facts.top_imports = top_level_imports(module)
        self._finish_returns()
        self._finish_elements()
        self._finish_return_points()
        for qualname, line in _definition_lines(self.tree).items():
            definition = self.facts.functions.get(qualname)
            if definition is not None:
                definition.line = line

    # ---- handlers ---------------------------------------------------------------------------
    def _on_class(self, node: cst.CSTNode) -> list[WalkItem]:
        assert isinstance(node, cst.ClassDef)
        qualname = self.nested_qualname(node.name.value)
        for decorator in node.decorators:
            self._decorator_entry(decorator, [["def", qualname]])
        scope = WalkScope("class", qualname, class_name=qualname)
        return [*node.decorators, *node.bases, *node.keywords, self._push(scope), node.body, self.scopes.pop]

    def _on_function(self, node: cst.CSTNode) -> list[WalkItem]:
        assert isinstance(node, cst.FunctionDef)
        outer = self.scope
        qualname = self.nested_qualname(node.name.value)
        # A second def of one name (property setters, TYPE_CHECKING branches) adds to the first.
        facts = self.facts.functions.setdefault(qualname, FunctionFacts(qualname))
        scope = WalkScope("function", qualname, class_name=outer.class_name if outer.kind == "class" else None)
        scope.capture_locals = CaptureLocals(node, self.kept.binding_counts)
        scope.definition = node
        self._start_returns(node, qualname)
        self._start_elements(node, qualname)
        self._start_return_points(node, qualname)
        self.function_bodies.add(id(node.body))
        if scope.class_name is None and outer.kind == "function":
            scope.class_name = outer.class_name  # closures inside methods still see ``self``
        params = node.params
        for param in (*params.posonly_params, *params.params, *params.kwonly_params):
            annotation = self.qualify(param.annotation.annotation) if param.annotation else None
            if annotation == "int":
                scope.dynamic[param.name.value] = "param"
            elif annotation in ("torch.Tensor", "Tensor") or _tensor_annotation(self.qualify, param.annotation):
                scope.tensor_params.add(param.name.value)
            elif annotation in apis.MODULE_CLASSES:
                scope.module_params.add(param.name.value)
        for decorator in node.decorators:
            name = self.qualify(decorated_callee(decorator.decorator))
            if name in apis.REGION_BOUNDARY_DECORATORS or (name or "").rsplit(".", 1)[-1] in apis.REGION_BOUNDARY_BARE:
                facts.boundary = True
            self._decorator_entry(decorator, [["def", qualname]])
        returns = [node.returns] if node.returns else []
        restore = self._restore()
        enter = [self._push(scope), *self._function_start()]
        return [*node.decorators, *enter, node.params, *returns, node.body, self.scopes.pop, restore]

    def _on_lambda(self, node: cst.CSTNode) -> list[WalkItem]:
        """A lambda is a function of its own: ``outer.<lambda1>``, numbered in source order."""
        assert isinstance(node, cst.Lambda)
        qualname = self.lambda_qualname()
        self.facts.functions.setdefault(qualname, FunctionFacts(qualname))
        scope = WalkScope("function", qualname, class_name=self.function_scope.class_name)
        restore = self._restore()
        enter = [self._push(scope), *self._function_start()]
        return [node.params, *enter, node.body, self.scopes.pop, restore]

    def _push(self, scope: WalkScope) -> Callable[[], None]:
        return lambda: self.scopes.append(scope)

    def _on_loop(self, node: cst.CSTNode) -> list[WalkItem]:
        assert isinstance(node, (cst.For, cst.While))
        scope = self.function_scope
        if isinstance(node, cst.For):
            head: list[WalkItem] = [node.target, node.iter]
        else:
            head = [node.test]

        def enter() -> None:
            scope.loops += 1

        def leave() -> None:
            scope.loops -= 1

        tail = [node.orelse] if node.orelse else []
        body = self._loop_body(node) if isinstance(node, cst.For) else [node.body]
        return [*head, enter, *body, leave, *tail]

    def _on_call(self, node: cst.CSTNode) -> None:
        assert isinstance(node, cst.Call)
        ordinal = self.ordinals[id(node)][1]
        callee = self.qualify(node.func)
        self._note_call_entry(node, ordinal, callee)  # entry_points.py
        if self.known_device(node) == apis.HOST_DEVICE:
            self.facts.host_calls.append(ordinal)
        self._note_registered_buffer(node)
        self._note_arguments(ordinal, node)  # module_state_arguments.py
        self._note_host_readback(node)
        if self.eager:
            self.facts.eager_calls.append(ordinal)
        if self.uncaptured:
            self.facts.uncaptured_calls.append(ordinal)
        self._note_uncaptured_unless(ordinal)
        self._note_returned_arguments(node, ordinal)
        self._note_call_point(ordinal)
        if self.block is not None:
            self.facts.block_calls[ordinal] = self.block
        return None

    def _on_return_statement(self, node: cst.CSTNode) -> None:
        self._note_return_point()  # returning_calls.py
        self._on_return(node)  # returned_none.py
        self._on_element_return(node)  # type: ignore[arg-type]  # returned_elements.py
        self._note_return_device(node)  # type: ignore[arg-type]  # returned_devices.py

    def _on_yield_expression(self, node: cst.CSTNode) -> None:
        self._note_generator()
        self._on_yield(node)
        self._unknown_elements(self.function_scope.qualname)

    def _note_host_readback(self, node: cst.Call) -> None:
        """``torch.quantile(torch.tensor(times), q=0.5).item()``: a read-back of host work (no
        sync), and the host factories in it, which no device op uses (visited after it)."""
        func = node.func
        if isinstance(func, cst.Attribute) and func.attr.value in apis.READBACK_METHODS:
            inputs = self.host_work(func.value)
            if inputs is not None:
                self.host_side_nodes.update((id(node), *(id(factory) for factory in inputs)))

    def host_side(self, node: cst.CSTNode) -> bool:
        return id(node) in self.host_side_nodes


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


def _definition_lines(tree: ast.Module) -> dict[str, int]:
    """The line of every ``def`` and ``class``, by the qualname the walk gives it (the first of
    two definitions of one name)."""
    lines: dict[str, int] = {}
    stack: list[tuple[ast.AST, str]] = [(tree, "")]
    while stack:
        node, prefix = stack.pop()
        for child in child_nodes(node):
            if isinstance(child, (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef)):
                qualname = f"{prefix}{child.name}"
                lines.setdefault(qualname, child.lineno)
                stack.append((child, qualname + "."))
            elif isinstance(child, ast.stmt):
                stack.append((child, prefix))
    return lines


@cache
def _key_patterns(globs: tuple[str, ...]) -> tuple[re.Pattern[str], ...]:
    return tuple(glob_pattern(glob) for glob in globs)
