"""Blocks a capture cannot get through: they surely raise before they can leave another way.

sglang's LFM2 short convolution, on its prefill path, makes ``query_start_loc`` on the host and
then reads ``forward_batch.extend_prefix_lens[:1] > 0``. No graph runner's capture batch has
``extend_prefix_lens`` (``capture-none-attributes``), so in a capture the subscript raises: the
capture fails in that block, whatever ran before it there, and no captured graph holds its code.
A block is walked as uncaptured in the capture modes (``capture_values.py``) in which one of its
statements, met before any that could leave the block (``return``, ``break``, ``continue``,
``yield``) or that starts a loop, ``with``, ``try`` or ``match``, surely raises:

- a ``raise``;
- an operation that None does not support, on a value None in those modes (``x[i]``, ``x.attr``,
  ``x(...)``, ``x > 0`` against a number), where the statement surely evaluates it (not the right
  side of ``and`` / ``or``, a branch of ``a if t else b``, a lambda or a comprehension);
- a call of one of ``platform-raising-calls`` (qualified names of calls that raise on the
  platform checked, whatever their arguments: sglang's JIT MoE alignment kernel on the NPU),
  surely evaluated as above, in every mode; its name is qualified through the file's imports and
  through those of the block's own statements before it (``if use_jit: from kernels import
  align; align(x)``: the walk has not met that import yet when it scans the block);
- an ``if`` whose branches all raise in the modes that take them.

Not in the body of a ``try`` of the same function, which may catch it. A caller's ``try`` may as
well; captured code is assumed not to, as for the other ways a capture leaves a block
(``compile_branches.py``: what follows ``if ...: raise``, or a loop over None).

A mixin of the extractor (it provides ``_true_modes``, ``_none_modes`` and ``capture_modes``).
"""

from __future__ import annotations

from collections.abc import Callable, Iterator, Sequence
from typing import Any

import libcst as cst

from graphlint.checks.capture_values import Binding, CaptureLocals, Modes, matches
from graphlint.checks.none_iteration import ITERATING_BUILTINS, raising_modes
from graphlint.checks.facts import ExtractOptions
from graphlint.checks.import_names import imported_names
from graphlint.checks.syntax import NodeTypes, children, dotted_name
from graphlint.checks.unbound_names import ModuleNames, function_names

_ORDERING = (cst.LessThan, cst.LessThanEqual, cst.GreaterThan, cst.GreaterThanEqual)
# The scans test every node of a subtree: by type, remembered (``syntax.NodeTypes``).
_LEAVING = NodeTypes(cst.Return, cst.Break, cst.Continue, cst.Yield)
_LEAVING_OR_OWN_SCOPE = NodeTypes(*_LEAVING.types, cst.FunctionDef, cst.ClassDef, cst.Lambda)
# Sub-expressions a statement may not evaluate (or evaluates over an iterable of its own).
_COMPREHENSIONS = NodeTypes(cst.ListComp, cst.SetComp, cst.DictComp, cst.GeneratorExp)
_LAMBDA = NodeTypes(cst.Lambda)
_BOOLEAN = NodeTypes(cst.BooleanOperation)
_IF_EXP = NodeTypes(cst.IfExp)
_OPERAND_HOLDERS = NodeTypes(*_COMPREHENSIONS.types, cst.Subscript, cst.Attribute, cst.Call, cst.Comparison)


class _ModesDiffer(Exception):
    """Two modes of a scan answered a fact differently: their paths through the block part."""


class RaisingBlocks:
    in_try: bool  # in the body of a ``try`` of the function walked
    capture_modes: Modes
    options: ExtractOptions
    # Per node of the file (each computed once, though nested blocks are scanned again): whether
    # it holds a way to leave its block, and the operands it surely uses as None cannot be used.
    leaving_nodes: dict[int, bool]
    none_operands: dict[int, tuple[cst.BaseExpression, ...]]
    sure_calls: dict[int, tuple[cst.Call, ...]]  # per expression (id()), the calls it surely makes
    # The names the imports of the block being scanned bind before the statement scanned
    # (``platform-raising-calls``): name → what it names.
    scanned_imports: dict[str, str]
    alike_modes: Modes | None  # the modes a scan asks together (``_scan``)
    modes_differ: bool  # whether a fact of the file may differ between modes (``capture_values.modes_may_differ``)
    _true_modes: Callable[[cst.BaseExpression, Modes], Modes | None]  # compile_branches.py
    _none_modes: Callable[[cst.BaseExpression, Modes], Modes | None]
    _builtin: Callable[[cst.BaseExpression], str | None]
    qualify: Callable[[cst.BaseExpression], str | None]  # site_values.py
    # unbound_names.py: the module's names, the module-level blocks entered in no capture mode,
    # and per function (id()) the names it binds
    module_names: ModuleNames
    skipped_module_blocks: set[int]
    function_names: dict[int, frozenset[str]]
    scopes: list[Any]
    scope: Any
    function_scope: Any
    facts: Any

    def _set_in_try(self, inside: bool) -> Callable[[], None]:
        def apply() -> None:
            self.in_try = inside

        return apply

    def _on_try(self, node: cst.CSTNode) -> list[Any]:
        """A ``try`` body's raise may be caught: its blocks are never taken as raising."""
        assert isinstance(node, (cst.Try, cst.TryStar))
        tail = [part for part in (node.orelse, node.finalbody) if part is not None]
        return [self._set_in_try(True), node.body, self._set_in_try(self.in_try), *node.handlers, *tail]

    def _block_raising(self, block: cst.BaseSuite) -> Modes:
        """The capture modes (of those that reach ``block``) in which it surely raises: asked one
        mode at a time, as a fact may be known in some modes only (``mode_attributes.py``), and
        with the names the block binds before a use read through those bindings (undone after:
        the walk records them as it passes them). Most blocks hold no test the modes answer
        differently: they are scanned once for all of them (``_scan``)."""
        if self.in_try or not self.capture_modes:
            return frozenset()
        modes = self.capture_modes
        if len(modes) > 1:
            alike = self._scan(block, modes)
            if alike is not None:
                return alike
        return frozenset().union(*(self._scan(block, frozenset({mode})) or frozenset() for mode in modes))

    def _scan(self, block: cst.BaseSuite, modes: Modes) -> Modes | None:
        """The modes of ``modes`` in which ``block`` surely raises. Scanned in several modes at
        once, each fact it asks is asked mode by mode (``_per_mode``), and the scan goes on only
        while every mode answers alike: it then takes the path each one-mode scan would take, and
        records the same bindings (in all the modes), so its answer is theirs put together. None
        where two modes answered differently (the scan is left and undone)."""
        undo = self._scan_locals.tentative() if self._scan_locals is not None else None
        self.scanned_imports = {}
        self.alike_modes = modes if len(modes) > 1 else None
        try:
            return self._raising_modes(block, modes)
        except _ModesDiffer:
            return None
        finally:
            self.alike_modes = None
            if undo is not None:
                undo()

    def _per_mode(
        self, fact: Callable[[cst.BaseExpression, Modes], Modes | None], expr: cst.BaseExpression, modes: Modes
    ) -> Modes | None:
        """``fact`` of ``expr`` in ``modes``, the same in each of them in a scan of several at
        once (else ``_ModesDiffer``). A fact known in several modes together is known, the same,
        in each (the answers of ``capture_values.py`` are the modes where something holds, None
        where one of them does not know: what the walk trusts too); one unknown together is
        asked mode by mode, as it may be known in some (``mode_attributes.py``)."""
        if self.alike_modes is None or not modes or not self.modes_differ:
            return fact(expr, modes)
        together = fact(expr, modes)
        if together is not None:
            if together and together != modes:
                raise _ModesDiffer
            return together
        answers = {None if one is None else bool(one) for one in (fact(expr, frozenset({mode})) for mode in modes)}
        if len(answers) > 1:
            raise _ModesDiffer
        answer = answers.pop()
        return None if answer is None else modes if answer else frozenset()

    def _scan_true(self, expr: cst.BaseExpression, modes: Modes) -> Modes | None:
        return self._per_mode(self._true_modes, expr, modes)

    def _scan_none(self, expr: cst.BaseExpression, modes: Modes) -> Modes | None:
        return self._per_mode(self._none_modes, expr, modes)

    @property
    def _scan_locals(self) -> CaptureLocals | None:
        """Where the names of the block scanned are recorded: its function's (or module's)."""
        scope = self.function_scope
        return scope.capture_locals if self.scope.kind != "class" else None

    def _record_bindings(self, smalls: Sequence[cst.BaseSmallStatement], modes: Modes) -> None:
        """The plain ``name = value`` of a line the scan passed in ``modes``, recorded as the walk
        records them (``local_bindings.py``)."""
        bindings = self._scan_locals
        if bindings is None or not modes:
            return
        for small in smalls:
            if isinstance(small, cst.Assign):
                targets = [target.target for target in small.targets]
            elif isinstance(small, cst.AnnAssign) and small.value is not None:
                targets = [small.target]
            else:
                continue
            value = small.value
            assert value is not None
            for target in targets:
                if isinstance(target, cst.Name):
                    binding = Binding(modes, self._scan_true(value, modes), self._scan_none(value, modes))
                    bindings.record(target.value, binding)

    def _raising_modes(self, suite: cst.BaseSuite, modes: Modes) -> Modes:
        outer_imports = dict(self.scanned_imports)  # what a nested block imports stays in it
        try:
            return self._suite_raising(suite, modes)
        finally:
            self.scanned_imports = outer_imports

    def _suite_raising(self, suite: cst.BaseSuite, modes: Modes) -> Modes:
        if isinstance(suite, cst.SimpleStatementSuite):  # ``if x: y = z[0]``
            return self._line_raising(suite.body, modes)
        raising: Modes = frozenset()
        for statement in suite.body:
            if raising == modes:
                break
            if isinstance(statement, cst.SimpleStatementLine):
                raising |= self._line_raising(statement.body, modes - raising)
                self._scan_imports(statement.body)
                if self._leaves(statement):
                    break
                self._record_bindings(statement.body, modes - raising)
            elif isinstance(statement, cst.If) and not self._leaves(statement):
                raising |= self._if_raising(statement, modes - raising)
            else:  # its test, or what it iterates, is evaluated before it can leave
                if isinstance(statement, (cst.If, cst.While)):
                    raising |= self._expression_raising(statement.test, modes - raising)
                elif isinstance(statement, cst.For):
                    raising |= self._iteration_raising(statement.iter, modes - raising)
                break
        return raising

    def _line_raising(self, smalls: Sequence[cst.BaseSmallStatement], modes: Modes) -> Modes:
        raising: Modes = frozenset()
        for small in smalls:
            if isinstance(small, cst.Return):  # what it returns is evaluated before it leaves
                return raising | self._expression_raising(small.value, modes - raising)
            if self._leaves(small):
                break
            if isinstance(small, cst.Raise):
                return modes
            raising |= self._expression_raising(_evaluated(small), modes - raising)
        return raising

    def _if_raising(self, node: cst.If, modes: Modes) -> Modes:
        raising = self._expression_raising(node.test, modes)
        rest = modes - raising
        taken = self._scan_true(node.test, rest)
        body_modes, else_modes = (rest, rest) if taken is None else (taken, rest - taken)
        in_body = self._raising_modes(node.body, body_modes)
        orelse = node.orelse
        if isinstance(orelse, cst.If):
            in_else = self._if_raising(orelse, else_modes)
        elif isinstance(orelse, cst.Else):
            in_else = self._raising_modes(orelse.body, else_modes)
        else:
            in_else = frozenset()
        return raising | (in_body & in_else if taken is None else in_body | in_else)

    def _expression_raising(self, expr: cst.BaseExpression | None, modes: Modes) -> Modes:
        if expr is None or not modes:
            return frozenset()
        if isinstance(expr, cst.BooleanOperation):
            return self._boolean_raising(expr, modes)
        operands = self.none_operands.get(id(expr))
        if operands is None:
            operands = self.none_operands[id(expr)] = tuple(_none_operands(expr))
        if any(self._unbound_global(operand) for operand in operands):
            return modes  # a NameError on the platform checked, in every mode
        options = self.options
        if options.platform_raising_calls:
            calls = self.sure_calls.get(id(expr))
            if calls is None:  # the same expression is scanned once per mode and per enclosing block
                calls = self.sure_calls[id(expr)] = tuple(n for n in _surely_evaluated(expr) if isinstance(n, cst.Call))
            if any(self._raising_call(call) for call in calls):
                return modes
        if not (options.capture_none_attributes or options.capture_mode_none_attributes):
            return frozenset()  # nothing is None in a capture (names only through those)
        raising: Modes = frozenset()
        for operand in operands:
            if isinstance(operand, cst.Call):  # ``all(x)``: iterates ``x``
                raising |= raising_modes(operand, self._builtin, lambda e: self._scan_none(e, modes))
            else:
                raising |= self._scan_none(operand, modes) or frozenset()
        return raising

    def _iteration_raising(self, iterable: cst.BaseExpression, modes: Modes) -> Modes:
        """``for x in enumerate(forward_batch.extend_seq_lens_cpu):`` raises where what it
        iterates is None, or evaluating it raises."""
        raising = self._expression_raising(iterable, modes)
        rest = modes - raising
        if not rest:
            return raising
        return raising | raising_modes(iterable, self._builtin, lambda e: self._scan_none(e, rest))

    def _boolean_raising(self, expr: cst.BooleanOperation, modes: Modes) -> Modes:
        """``decode() or all(batch.encoder_cached)``: the left side is evaluated, the right one
        in the modes the left does not decide (false for ``or``, true for ``and``), where known."""
        raising = self._expression_raising(expr.left, modes)
        rest = modes - raising
        left_true = self._scan_true(expr.left, rest)
        if left_true is None:
            return raising
        right = rest - left_true if isinstance(expr.operator, cst.Or) else left_true
        return raising | self._expression_raising(expr.right, right)

    def _raising_call(self, node: cst.Call) -> bool:
        """Whether ``node`` calls one of ``platform-raising-calls``."""
        name = dotted_name(node.func)
        if name is None:
            return False
        head, dot, rest = name.partition(".")
        imported = self.scanned_imports.get(head)
        qualified = imported + dot + rest if imported is not None else self.qualify(node.func)
        return qualified is not None and matches(qualified, self.options.platform_raising_calls)

    def _scan_imports(self, smalls: Sequence[cst.BaseSmallStatement]) -> None:
        """Note what the imports of a scanned line bind. A relative one is kept as written
        (``.kernels.align``): the walk resolves it only once the project is linked, so no
        qualified name matches it."""
        for small in smalls:
            if isinstance(small, (cst.Import, cst.ImportFrom)):
                self.scanned_imports.update(imported_names(small))

    def _unbound_global(self, operand: cst.BaseExpression) -> bool:
        """Whether ``operand`` reads a name of the module that no binding of it there runs on the
        platform checked (``unbound_names.py``), from a function that does not bind it itself."""
        if not isinstance(operand, cst.Name):
            return False
        name = operand.value
        if not self.module_names.unbound(name, self.skipped_module_blocks):
            return False
        functions = [scope for scope in self.scopes if scope.kind == "function"]
        if not functions or self.scopes[-1].kind != "function":  # read at import, or in a class body
            return False
        for scope in functions:
            function = scope.capture_locals.function if scope.capture_locals is not None else None
            if not isinstance(function, cst.FunctionDef):  # a lambda's parameters are not listed
                return False
            names = self.function_names.get(id(function))
            if names is None:
                names = self.function_names[id(function)] = function_names(function)
            if name in names:
                return False
        read = self.facts.unbound_reads.setdefault(functions[-1].qualname, [])
        if name not in read:
            read.append(name)
        return True

    def _leaves(self, node: cst.CSTNode) -> bool:
        """Whether ``node`` holds a ``return``, ``break``, ``continue`` or ``yield`` (outside
        the functions, classes and lambdas defined in it): each node's answer is kept, the
        children's found first (no recursion: a file may nest deeper than Python recurses)."""
        known = self.leaving_nodes.get(id(node))
        if known is not None:
            return known
        pending: list[tuple[cst.CSTNode, bool]] = [(node, False)]
        while pending:
            current, expanded = pending.pop()
            key = id(current)
            if key in self.leaving_nodes:
                continue
            if _LEAVING_OR_OWN_SCOPE[type(current)]:
                self.leaving_nodes[key] = _LEAVING[type(current)]
            elif expanded:
                self.leaving_nodes[key] = any(self.leaving_nodes[id(child)] for child in children(current))
            else:
                pending.append((current, True))
                pending.extend((child, False) for child in children(current))
        return self.leaving_nodes[id(node)]


def _evaluated(small: cst.BaseSmallStatement) -> cst.BaseExpression | None:
    """What a simple statement surely evaluates (its value; an ``assert``'s test)."""
    if isinstance(small, cst.Assert):
        return small.test
    value = getattr(small, "value", None)
    return value if isinstance(value, cst.BaseExpression) else None


def _surely_evaluated(expr: cst.BaseExpression) -> Iterator[cst.CSTNode]:
    """The nodes of ``expr`` it surely evaluates (the left side of ``and`` / ``or``, the test
    of ``a if t else b``; not a lambda; of a comprehension, itself and its first iterable)."""
    pending: list[cst.CSTNode] = [expr]
    while pending:
        node = pending.pop()
        node_type = type(node)
        if _COMPREHENSIONS[node_type]:  # only its first iterable is evaluated at once
            yield node
            pending.append(node.for_in.iter)  # type: ignore[attr-defined]
            continue
        if _LAMBDA[node_type]:
            continue
        if _BOOLEAN[node_type]:
            pending.append(node.left)  # type: ignore[attr-defined]
            continue
        if _IF_EXP[node_type]:
            pending.append(node.test)  # type: ignore[attr-defined]
            continue
        yield node
        pending.extend(children(node))


def _none_operands(expr: cst.BaseExpression) -> Iterator[cst.BaseExpression]:
    """The sub-expressions ``expr`` surely evaluates and then uses as None cannot be used: the
    subscripted, the object of an attribute (not a dunder one, which None has), the called, the
    side of an ordering comparison with a number."""
    for node in _surely_evaluated(expr):
        node_type = type(node)
        if not _OPERAND_HOLDERS[node_type]:
            continue
        if _COMPREHENSIONS[node_type]:  # its first iterable is iterated at once
            yield node.for_in.iter
        elif isinstance(node, cst.Subscript):
            yield node.value
        elif isinstance(node, cst.Attribute) and not node.attr.value.startswith("__"):
            yield node.value
        elif isinstance(node, cst.Call):
            yield node.func
            if isinstance(node.func, cst.Name) and node.func.value in ITERATING_BUILTINS:
                yield node  # what it iterates must not be None (``RaisingBlocks._expression_raising``)
        elif isinstance(node, cst.Comparison) and len(node.comparisons) == 1:
            comparison = node.comparisons[0]
            if isinstance(comparison.operator, _ORDERING):
                if isinstance(comparison.comparator, (cst.Integer, cst.Float)):
                    yield node.left
                elif isinstance(node.left, (cst.Integer, cst.Float)):
                    yield comparison.comparator
