"""Where a function's code runs eager or captured: ``is_compiling()`` branches and capture blocks.

A mixin of ``extract.py``'s extractor. The walk is a plan of nodes and state changes; these
handlers schedule the changes (and mark the moves a branch makes once: ``_moves_once``): the
eager branch of ``if is_compiling():`` (and of
``not is_tracing(x) and ...``, ``is_compiling() or ...``; the checks are data in
``dynamo.toml``), what follows ``if is_compiling(): return``, the statements inside
``with torch.npu.graph(g):`` or between ``capture_begin()`` and ``capture_end()``, and the branch
of an ``if`` that a framework's graph capture never takes (``capture-false-calls``, the modes a
capture runs in: ``capture_values.py``), and what follows ``if ...: return`` in the modes that
take the ``return``.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import libcst as cst

from graphlint.checks import apis, dynamo
from graphlint.checks.capture_values import Fact, Modes, false_tests, none_modes, true_modes, truth
from graphlint.checks.none_iteration import raising_modes
from graphlint.checks.facts import NO_CALL, ExtractOptions
from graphlint.checks.module_branches import Branch, untaken_branches
from graphlint.checks.returned_none import Assumption
from graphlint.checks.site_values import SOURCE_TEXT
from graphlint.checks.syntax import preorder

WalkItem = cst.CSTNode | Callable[[], None]


class CompileBranches:
    """The branch half of the extractor (it provides ``qualify``, ``eager``, ``block``,
    ``eager_nodes`` and ``_add_entry``)."""

    eager: bool
    capture_modes: Modes  # the modes a capture may run in here
    all_capture_modes: Modes  # … at a function's start
    captured_unless: frozenset[Assumption]  # what leaves the code here uncaptured (returned_none.py)
    block: int | None
    eager_nodes: set[int]
    moved_once: set[int]
    qualify: Callable[[cst.BaseExpression], str | None]
    options: ExtractOptions
    function_scope: Any
    scopes: list[Any]
    scope: Any
    device_text: Callable[[cst.BaseExpression], str]  # site_values.py
    _add_entry: Callable[..., int]
    _failing_block: Callable[[cst.CSTNode, list[WalkItem]], list[WalkItem]]  # error_messages.py
    false_unless: Callable[[cst.BaseExpression], frozenset[Assumption]]  # returned_none.py
    true_unless: Callable[[cst.BaseExpression], frozenset[Assumption]]
    _set_unless: Callable[[frozenset[Assumption]], Callable[[], None]]
    _empty_truth: Callable[[cst.BaseExpression, Modes, cst.If], Modes | None]  # empty_values.py
    _builtin: Callable[[cst.BaseExpression], str | None]
    uncaptured_blocks: set[int]
    skipped_module_blocks: set[int]
    untaken_module_branches: set[Branch]
    ordinals: dict[int, tuple[str, int]]  # id(node) → (anchor kind, ordinal)
    in_try: bool  # raising_blocks.py
    _set_in_try: Callable[[bool], Callable[[], None]]
    _block_raising: Callable[[cst.BaseSuite], Modes]
    after: int  # returning_calls.py
    function_bodies: set[int]
    _set_after: Callable[[int], Callable[[], None]]
    _returned_calls: Callable[[cst.CSTNode], list[cst.Call]]
    _calls_returned: Callable[[list[cst.Call]], Callable[[], None]]
    _note_return_point: Callable[[], None]

    def _set_eager(self, eager: bool) -> Callable[[], None]:
        def apply() -> None:
            self.eager = eager

        return apply

    def _set_block(self, block: int | None) -> Callable[[], None]:
        def apply() -> None:
            self.block = block

        return apply

    @property
    def uncaptured(self) -> bool:
        """In a branch no graph capture takes (``capture-false-calls``, no mode left)."""
        return not self.capture_modes

    def _set_capture_modes(self, modes: Modes) -> Callable[[], None]:
        def apply() -> None:
            self.capture_modes = modes

        return apply

    def _function_start(self) -> list[Callable[[], None]]:
        """A function's body starts traced (not eager), in every capture mode, in no capture
        block, assuming nothing of what calls return."""
        return [
            self._set_eager(False), self._set_capture_modes(self.all_capture_modes), self._set_block(None),
            self._set_unless(frozenset()), self._set_in_try(False), self._set_after(NO_CALL),
        ]

    def _restore(self) -> Callable[[], None]:
        eager, modes, block, unless = self.eager, self.capture_modes, self.block, self.captured_unless
        in_try, after = self.in_try, self.after

        def apply() -> None:
            self.eager, self.capture_modes, self.block, self.captured_unless = eager, modes, block, unless
            self.in_try, self.after = in_try, after

        return apply

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

    def _on_if(self, node: cst.CSTNode) -> list[WalkItem] | None:
        assert isinstance(node, cst.If)
        value = self._value_when_compiling(node.test)
        if value is None:
            self.moved_once.update(_moves_once(node))
            return self._on_capture_if(node)
        restore = self._restore()
        tail = [self._set_eager(self.eager or value), node.orelse] if node.orelse else []
        return [node.test, self._set_eager(self.eager or not value), node.body, *tail, restore]

    def _on_capture_if(self, node: cst.If) -> list[WalkItem] | None:
        """``if forward_batch.contains_mm_inputs():``, the ``else`` of ``if get_is_capture_mode():``
        or of ``if torch.cuda.is_current_stream_capturing():``: a branch the capture never takes is
        walked as uncaptured. A test decided per mode walks its body in the modes it is true in
        and its ``else`` (an ``elif``: the next test) in the others. A test on what a helper
        returns (``if pixel_values is not None:``) walks its branches under the assumptions
        that decide it (``returned_none.py``)."""
        modes = self.capture_modes
        taken = self._true_modes(node.test, modes)
        if taken is None:
            taken = self._empty_truth(node.test, modes, node)
        if taken is None:
            return self._on_returned_if(node)
        if self.scope.kind == "module":  # what the module binds on the platform (module_branches.py)
            self.untaken_module_branches.update(untaken_branches(self.ordinals[id(node)][1], node, taken, modes))
        restore = self._restore()
        tail = [self._set_capture_modes(modes - taken), node.orelse] if node.orelse else []
        return [node.test, self._set_capture_modes(taken), node.body, *tail, restore]

    def _on_returned_if(self, node: cst.If) -> list[WalkItem] | None:
        false_unless, true_unless = self.false_unless(node.test), self.true_unless(node.test)
        if not (false_unless or true_unless):
            return None
        unless = self.captured_unless
        restore = self._restore()
        tail = [self._set_unless(unless | true_unless), node.orelse] if node.orelse else []
        return [node.test, self._set_unless(unless | false_unless), node.body, *tail, restore]

    def _narrow_after(self, node: cst.If) -> Callable[[], None]:
        """After ``if test: ... return``: the rest of the block runs only in the modes that fall
        through some branch of the ``if`` / ``elif`` / ``else`` chain (none: not captured);
        after ``if x is None: return`` (no ``else``), under the assumption that ``x``, what a
        helper returns, is not None (``returned_none.py``)."""

        def apply() -> None:
            if node.orelse is None:
                self.captured_unless |= self.true_unless(node.test)
            fall: Modes = frozenset()
            modes = self.capture_modes
            branch: cst.If | cst.Else | None = node
            while isinstance(branch, cst.If):
                taken = self._true_modes(branch.test, modes)
                body, modes = (modes, modes) if taken is None else (taken, modes - taken)
                fall |= frozenset() if _leaves(branch.body) else body
                branch = branch.orelse
            if branch is None or not _leaves(branch.body):
                fall |= modes
            self._set_capture_modes(fall)()

        return apply

    def _true_modes(self, expr: cst.BaseExpression, modes: Modes) -> Modes | None:
        """The modes of ``modes`` in which ``expr`` is true under capture (``capture_values.py``),
        its names read through the bindings a capture runs."""
        scope = self.function_scope
        stated = false_tests(self.options, scope.qualname) if self.options.capture_false_tests and scope.kind == "function" else frozenset()
        return true_modes(expr, self.qualify, self.options, modes, self._captured_name, stated)

    def _none_modes(self, expr: cst.BaseExpression, modes: Modes) -> Modes | None:
        """The modes of ``modes`` in which ``expr`` is None under capture."""
        return none_modes(expr, self.qualify, self.options, modes, self._captured_name)

    def _captured_name(self, name: str, modes: Modes, fact: Fact = truth) -> Modes | None:
        """The modes in which a name has the property ``fact`` reads (is true, is None, ...)
        under capture: the innermost
        function that binds it decides, else the module's top level
        (``capture_values.CaptureLocals``); a lambda's names, and a class body's (its own
        bindings are not recorded), are unknown."""
        if self.scope.kind == "class":
            return None
        scopes = [scope for scope in self.scopes if scope.kind != "class"]
        for scope in reversed(scopes[1:]):
            bindings = scope.capture_locals
            if bindings is None:
                return None
            if name in bindings.values:
                return bindings.value(name, modes, fact)
            if scopes[0].capture_locals.value(name, modes, fact) is None or bindings.binds(name):
                return None  # a module's name known here only when no function between binds it
        return scopes[0].capture_locals.value(name, modes, fact)

    def _skip_none_loop(self, loop: cst.For) -> Callable[[], None]:
        """``for x in forward_batch.mm_inputs:`` (or ``in enumerate(...)``, ``zip(...)``) raises
        where the iterable is None: neither the loop nor the rest of the block runs in those
        modes."""

        def apply() -> None:  # mode by mode: the iterable may be known None in some only
            none = frozenset().union(*(
                raising_modes(loop.iter, self._builtin, lambda e, one=frozenset({mode}): self._none_modes(e, one))
                for mode in self.capture_modes
            ))
            if none:
                self._set_capture_modes(self.capture_modes - none)()

        return apply

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

    def _on_with(self, node: cst.CSTNode) -> list[WalkItem] | None:
        assert isinstance(node, cst.With)
        for item in node.items:
            call = item.item
            if isinstance(call, cst.Call) and self._is_capture_context(call.func):
                index = self._add_entry(call, "capture", traced=False, targets=[], via="block")
                restore = self._restore()
                return [*node.items, self._set_block(index), node.body, restore]
        device = next((d for d in map(self._context_device, (item.item for item in node.items)) if d), None)
        if device is None:
            return None
        scope = self.function_scope
        previous = scope.default_device

        def enter() -> None:
            scope.default_device = device

        def leave() -> None:
            scope.default_device = previous

        return [*node.items, enter, node.body, leave]

    def _context_device(self, expr: cst.BaseExpression) -> str | None:
        """The device a ``with`` item makes the default for tensor factories: a ``torch.device``
        is a context manager that does (``with forward_batch.out_cache_loc.device:``, sglang's
        ``_batch_image_inputs``; ``with torch.device("npu"):``), not ``torch.cuda.device(i)``,
        which only picks the current GPU."""
        if isinstance(expr, cst.Attribute) and expr.attr.value == "device":
            return self.device_text(expr)
        if isinstance(expr, cst.Call) and self.qualify(expr.func) == "torch.device" and expr.args:
            return self.device_text(expr)
        return None

    def _is_capture_context(self, func: cst.BaseExpression) -> bool:
        """``torch.npu.graph``, or a local name some branch bound to it (sglang's NPU graph
        backend: ``graph_ctx = partial(saver.cuda_graph, ...)`` or ``graph_ctx = torch.npu.graph``,
        then ``with graph_ctx(graph, pool=...):``)."""
        if self.qualify(func) in apis.CAPTURE_CONTEXTS:
            return True
        return isinstance(func, cst.Name) and func.value in self.function_scope.capture_contexts

    def _on_block(self, node: cst.CSTNode) -> list[WalkItem] | None:
        """Statement-level regions: between ``g.capture_begin()`` and ``g.capture_end()`` code is
        captured; after ``if is_compiling(): return ...`` the rest of the block is eager."""
        assert isinstance(node, (cst.IndentedBlock, cst.Module))
        raising = self._block_raising(node) if isinstance(node, cst.IndentedBlock) else frozenset()
        if self.uncaptured or raising == self.capture_modes:
            self.uncaptured_blocks.add(id(node))
        if self.uncaptured and self.scope.kind == "module":  # what it binds is never bound (unbound_names.py)
            self.skipped_module_blocks.add(id(node))
        plan: list[WalkItem] = [self._set_capture_modes(self.capture_modes - raising)] if raising else []
        end_capture = None
        made_eager, narrowed, returning = False, bool(raising), False
        for statement in node.body:
            method = _statement_method_call(statement)
            if method == apis.CAPTURE_END_METHOD and end_capture is not None:
                plan.append(end_capture)
                end_capture = None
            if isinstance(statement, cst.For):  # iterating what is None raises
                narrowed = True
                plan.append(self._skip_none_loop(statement))
            plan.append(statement)
            if method == apis.CAPTURE_BEGIN_METHOD and end_capture is None:
                call = statement.body[0].value  # type: ignore[union-attr]
                end_capture = self._set_block(self.block)
                index = self._add_entry(call, "capture", traced=False, targets=[], via="block")
                plan.append(self._set_block(index))
            elif self._returns_when_compiling(statement) and not made_eager:
                made_eager = True
                plan.append(self._set_eager(True))
            elif isinstance(statement, cst.If) and _some_branch_leaves(statement):
                narrowed = True
                plan.append(self._narrow_after(statement))
            returned = self._returned_calls(statement)
            if returned:  # what follows runs only once they returned (returning_calls.py)
                plan.append(self._calls_returned(returned))
                returning = True
        if end_capture is not None:
            plan.append(end_capture)
        if id(node) in self.function_bodies and not _leaves(node):
            plan.append(self._note_return_point)  # the end of a function's body: it returns there
        if made_eager:
            plan.append(self._set_eager(self.eager))
        if narrowed:
            plan.append(self._set_capture_modes(self.capture_modes))
            plan.append(self._set_unless(self.captured_unless))
        if returning:
            plan.append(self._set_after(self.after))
        return self._failing_block(node, plan)

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


def _leaves(body: cst.BaseSuite) -> bool:
    """Whether a branch's block ends by ``return`` or ``raise``."""
    last = body.body[-1] if body.body else None
    if isinstance(last, cst.SimpleStatementLine):
        last = last.body[-1]
    return isinstance(last, (cst.Return, cst.Raise))


def _some_branch_leaves(node: cst.If) -> bool:
    branch: cst.If | cst.Else | None = node
    while isinstance(branch, cst.If):
        if _leaves(branch.body):
            return True
        branch = branch.orelse
    return branch is not None and _leaves(branch.body)


def _statement_method_call(statement: cst.CSTNode) -> str | None:
    """``g.capture_begin()`` as a statement of its own: the method name."""
    if isinstance(statement, cst.SimpleStatementLine) and len(statement.body) == 1:
        expr = statement.body[0]
        if isinstance(expr, cst.Expr) and isinstance(expr.value, cst.Call):
            func = expr.value.func
            if isinstance(func, cst.Attribute):
                return func.attr.value
    return None


def _moves_once(node: cst.If) -> set[int]:
    """The ``.to(d)`` calls of ``if t.device != d: t = t.to(d)``: the tensor is moved where it is
    kept, so the move runs once, in the first call, and never again (``!=`` or ``is not``, either
    side; the statement directly in the branch)."""
    test = node.test
    if not (isinstance(test, cst.Comparison) and len(test.comparisons) == 1):
        return set()
    comparison = test.comparisons[0]
    if not isinstance(comparison.operator, (cst.NotEqual, cst.IsNot)):
        return set()
    sides = [_code(test.left), _code(comparison.comparator)]
    moved = set()
    for statement in node.body.body if isinstance(node.body, cst.IndentedBlock) else ():
        assign = statement.body[0] if isinstance(statement, cst.SimpleStatementLine) and len(statement.body) == 1 else None
        if not (isinstance(assign, cst.Assign) and len(assign.targets) == 1):
            continue
        call, target = assign.value, _code(assign.targets[0].target)
        if not (isinstance(call, cst.Call) and isinstance(call.func, cst.Attribute) and call.func.attr.value == "to"):
            continue
        if len(call.args) != 1 or call.args[0].keyword is not None or _code(call.func.value) != target:
            continue
        if sorted(sides) == sorted([f"{target}.device", _code(call.args[0].value)]):
            moved.add(id(call))
    return moved


def _code(node: cst.CSTNode) -> str:
    return SOURCE_TEXT.code_for_node(node)
