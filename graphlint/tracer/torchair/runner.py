"""Run torchair's backend on a target and report what its FX → GE translation did.

The target is compiled with ``torchair.get_npu_backend`` the way a user compiles it for an NPU
(``max-autotune``, GE graph mode) with two settings changed: ``pattern_fusion_pass`` is off (its
patterns call ``torch.ops.npu.*`` kernels, which exist only with torch_npu) and
``debug.run_eagerly`` is on: torchair then builds and optimises the GE graph, and instead of
compiling and running it natively returns the FX graph to run eagerly. That is the clean stop
after translation; the outputs are still computed, so they can be compared with eager.

Translation goes on past a failing node, as torchair's ``fx_summary`` does: the node is recorded
(its op, the exception, its user line) and stands in the GE graph as torchair's own mock node
(``_create_mock_node_for_op``, what its ``record_ascend_ir`` debug mode builds for an op it cannot
convert), so every unsupported op of a graph is found, not only the first. A graph that had such
a node, or whose translation raised outright, is handed back to dynamo to run eagerly (offline,
torchair's eager run of its FX graph is kept instead, so that its backward graph is translated
too), and the other graphs of the target are translated as well. Graphs are named by their dynamo graph and their
AOT phase (``graph_0_forward``, ``graph_0_backward``), as the aot stage names them.

A failure raised by or through one of graphlint's stand-ins for torch_npu's native parts is not
torchair's verdict: it carries the stand-in's name (``stand_in.stand_in_behind``).

Fidelity: the trace runs on CPU, and some aten ops exist only because dispatch chose a CPU
kernel (``F.scaled_dot_product_attention`` → ``_scaled_dot_product_flash_attention_for_cpu``);
on an NPU torch_npu picks its own kernels. Such ops are decomposed into the aten ops they stand
for before translation, and any that remain are judged inconclusive, never a torchair failure.
"""

from __future__ import annotations

import importlib
import os
import re
import types
from collections import Counter
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from dataclasses import dataclass, field
from typing import Any

import torch

from graphlint.tracer.calls import call_each_input
from graphlint.tracer.locate import user_line_of_exception, user_line_of_stack_trace
from graphlint.tracer.stages.base import TraceTarget
from graphlint.tracer.torchair.stand_in import LOG, stand_in_behind

# aten ops that only a CPU trace produces (oneDNN kernels and the ``*_for_cpu`` choices of
# device-dependent composites); on an NPU torch_npu dispatches these composites to its own kernels.
_CPU_ONLY_OP = re.compile(r"(^|\.)(_?mkldnn|_?onednn)|_for_cpu(_|\.|$)")


def is_cpu_only_op(op_name: str) -> bool:
    """``aten._scaled_dot_product_flash_attention_for_cpu.default`` → True."""
    return bool(_CPU_ONLY_OP.search(op_name))


@dataclass
class TranslationFailure:
    """One node whose translation raised (or a graph, when no node was being converted)."""

    graph: str  # "graph_0_forward"
    error: BaseException
    op: str | None  # "aten.index_put.default"
    node: str | None  # FX node name
    file: str | None
    line: int | None
    has_converter: bool | None  # None when the failure was not in a converter
    stand_in: str | None = None  # the graphlint stand-in the failure was raised by or went through


@dataclass
class GeGraphRecord:
    """One GE graph: its ops as the converters built them (torchair's "original" dump; an
    in-place update of an input is an ``Assign`` here), and the op types after torchair's own
    GE passes (which, e.g., turn such an ``Assign`` into an output that aliases the input)."""

    name: str
    ops: list[dict[str, Any]]  # {"name", "type", "fx_node", "file", "line"}
    text: str  # the GraphDef protobuf in text form, as torchair's pbtxt dump holds it
    optimized_types: dict[str, int] = field(default_factory=dict)
    optimized_text: str = ""

    def to_json(self) -> dict[str, Any]:
        return {"name": self.name, "ops": self.ops, "optimized_types": self.optimized_types}


@dataclass
class TranslationResult:
    graphs: list[GeGraphRecord] = field(default_factory=list)
    failures: list[TranslationFailure] = field(default_factory=list)
    cpu_decomposed: set[str] = field(default_factory=set)  # CPU-only ops decomposed before translation
    outputs: list[Any] | None = None  # one per input, from the eager run of torchair's FX graph
    error: BaseException | None = None  # the run itself failed outside translation
    stand_ins_refused: list[str] = field(default_factory=list)  # stand-ins that could not answer
    stand_ins_assumed: list[str] = field(default_factory=list)  # answers that depend on the CANN


# What the offline run changes in torchair's default ``CompilerConfig`` (see the module's doc);
# ``--dump`` writes it to ``torchair/config.json`` so that a repro runs with the same.
OFFLINE_SETTINGS: dict[str, Any] = {"experimental_config.pattern_fusion_pass": False, "debug.run_eagerly": True}


def compiler_config(torchair: types.ModuleType, settings: dict[str, Any]) -> Any:
    """torchair's default ``CompilerConfig`` with ``settings`` (dotted attribute paths) applied."""
    config = torchair.CompilerConfig()
    for path, value in settings.items():
        *parents, name = path.split(".")
        holder = config
        for parent in parents:
            holder = getattr(holder, parent)
        setattr(holder, name, value)
    return config


def offline_compiler_config(torchair: types.ModuleType) -> Any:
    return compiler_config(torchair, OFFLINE_SETTINGS)


def translate(
    torchair: types.ModuleType,
    target: TraceTarget,
    *,
    train: bool = False,
    config: Any = None,
) -> TranslationResult:
    """Compile ``target`` with torchair's backend, calling it once per input; never raises for
    what the target or torchair do (a failure outside translation is ``result.error``)."""
    translator = Translator(torchair, target.user_files, config)
    torch._dynamo.reset()
    return translator.run(torch.compile(target.fn, backend=translator.backend), target, train)


class Translator:
    """torchair's backend as graphlint calls it: ``backend`` translates one dynamo graph under
    the watcher (a failure is recorded, never raised); ``run`` calls a target compiled with it
    (by ``translate``, or by the one compile that feeds several stages, see ``one_compile.py``)."""

    def __init__(self, torchair: types.ModuleType, user_files: set[str], config: Any = None) -> None:
        self.result = TranslationResult()
        self.watcher = _TranslationWatcher(user_files, self.result)
        self.config = config or offline_compiler_config(torchair)
        decompositions = _cpu_only_decompositions(self.result.cpu_decomposed)
        self._backend = torchair.get_npu_backend(compiler_config=self.config, custom_decompositions=decompositions)
        # Run eagerly, torchair hands back the FX graph whatever its GE graph holds: keeping it
        # lets the backward graph (compiled when the forward's outputs are back-propagated) be
        # translated too. On an NPU, a graph with a failed node is run by dynamo instead.
        self._keeps_failed_graphs = bool(self.config.debug.run_eagerly)

    def backend(self, gm: torch.fx.GraphModule, example_inputs: list[Any]) -> Callable[..., Any]:
        result, watcher = self.result, self.watcher
        watcher.start_graph()
        failed_before = len(result.failures)
        with watcher.installed():
            try:
                compiled = self._backend(gm, example_inputs)
            except Exception as exc:  # noqa: BLE001 - any failure of translation is a finding
                result.failures.append(watcher.failure(exc))
                return gm.forward
        return gm.forward if len(result.failures) > failed_before and not self._keeps_failed_graphs else compiled

    def run(self, compiled: Callable[..., Any], target: TraceTarget, train: bool) -> TranslationResult:
        result, watcher = self.result, self.watcher
        with watcher.installed():
            try:
                result.outputs = call_each_input(compiled, target, train)
            except Exception as exc:  # noqa: BLE001 - the target failed while running
                if watcher.converting_failed:  # a graph compiled lazily (backward) failed translation
                    result.failures.append(watcher.failure(exc))
                else:
                    result.error = exc
        result.stand_ins_refused = LOG.refused_since(0)
        result.stand_ins_assumed = list(LOG.assumed)
        return result


def _cpu_only_decompositions(used: set[str]) -> dict[Any, Callable[..., Any]]:
    """torch's own decompositions of the CPU-only ops, each noting in ``used`` when it ran."""
    from torch._decomp import decomposition_table

    def noting(op: Any, decompose: Callable[..., Any]) -> Callable[..., Any]:
        def run(*args: Any, **kwargs: Any) -> Any:
            used.add(str(op))
            return decompose(*args, **kwargs)

        return run

    return {op: noting(op, fn) for op, fn in decomposition_table.items() if is_cpu_only_op(str(op))}


class _TranslationWatcher:
    """Instruments the imported torchair (a private copy, dropped after the run): which GE ops
    each FX node produced, which nodes failed to convert (each replaced by a mock node so the
    graph goes on), which node was being converted when translation raised outright, the AOT
    phase of each graph, and every GE graph once torchair finished optimising it."""

    def __init__(self, user_files: set[str], result: TranslationResult) -> None:
        self._user_files = user_files
        self._result = result
        # torchair's own modules, imported (by ``offline_torchair`` or torch_npu) before this runs
        self._compiler = importlib.import_module("torchair.npu_fx_compiler")
        self._fx2ge = importlib.import_module("torchair._ge_concrete_graph.fx2ge_converter")
        self._torchair_dir = os.path.dirname(os.path.dirname(os.path.abspath(self._compiler.__file__))) + os.sep
        self._ops_of_node: dict[str, torch.fx.Node] = {}  # GE op name → FX node
        self._current_node: torch.fx.Node | None = None
        self._failing_node: torch.fx.Node | None = None
        self._graph_count = 0
        self._named_current = False  # the current dynamo graph's first GE graph has its name
        self._graph = "graph_0_forward"  # the graph being translated
        self._installed = False

    @property
    def converting_failed(self) -> bool:
        return self._failing_node is not None

    def start_graph(self) -> None:
        self._failing_node = None
        self._ops_of_node.clear()
        self._graph_count += 1
        self._named_current = False
        self._graph = f"graph_{self._graph_count - 1}_forward"

    @contextmanager
    def installed(self) -> Iterator[None]:
        """The wrappers in place (once: a backend called while the target runs is inside)."""
        if self._installed:
            yield
            return
        self._installed = True
        converter_cls, graph_cls = self._compiler._NpuGraphConverter, self._fx2ge.GeConcreteGraph
        run_node, optimize = converter_cls.run_node, graph_cls.optimize_graph_without_runtime
        # torchair 2.6 (torch_npu 2.6.0.post5) has no wrap_compiler_phase: there phases go unnamed
        parse_node, wrap_phase = graph_cls.parse_node, getattr(self._compiler, "wrap_compiler_phase", None)
        converter_cls.run_node = self._wrap_run_node(run_node)
        graph_cls.optimize_graph_without_runtime = self._wrap_optimize(optimize)
        graph_cls.parse_node = self._wrap_parse_node(parse_node)
        if wrap_phase is not None:
            self._compiler.wrap_compiler_phase = self._wrap_phase(wrap_phase)
        try:
            yield
        finally:
            self._installed = False
            converter_cls.run_node = run_node
            graph_cls.optimize_graph_without_runtime = optimize
            graph_cls.parse_node = parse_node
            if wrap_phase is not None:
                self._compiler.wrap_compiler_phase = wrap_phase

    def failure(self, exc: BaseException) -> TranslationFailure:
        """The failure of the translation that raised ``exc``; forgets the failing node."""
        node, self._failing_node = self._failing_node, None
        return self._failure_at(node, exc)

    def _failure_at(self, node: torch.fx.Node | None, exc: BaseException) -> TranslationFailure:
        stand_in = stand_in_behind(exc)
        if node is None or node.op != "call_function":
            where = self._user_line(user_line_of_exception(exc, self._user_files))
            return TranslationFailure(
                self._graph, exc, None, None, *(where or (None, None)), has_converter=None, stand_in=stand_in
            )
        where = user_line_of_stack_trace(node.meta.get("stack_trace"), self._user_files)
        converter = getattr(node.target, "_ge_converter", None) or self._fx2ge._CONVERTERS.get(node.target)
        return TranslationFailure(
            self._graph, exc, str(node.target), node.name, *(where or (None, None)),
            has_converter=converter is not None, stand_in=stand_in,
        )

    def _user_line(self, where: tuple[str, int] | None) -> tuple[str, int] | None:
        """Never a line of torchair's own sources (unpacked outside site-packages, they would
        otherwise pass for the user's code)."""
        return None if where is None or where[0].startswith(self._torchair_dir) else where

    def _wrap_phase(self, original: Callable[..., Any]) -> Callable[..., Any]:
        watcher = self

        def wrap_compiler_phase(compiler: Callable[..., Any], phase: str) -> Callable[..., Any]:
            name = f"graph_{watcher._graph_count - 1}_{'backward' if phase == 'backward' else 'forward'}"

            def in_phase(*args: Any, **kwargs: Any) -> Any:
                watcher._graph = name
                return compiler(*args, **kwargs)

            return original(in_phase, phase)

        return wrap_compiler_phase

    def _wrap_run_node(self, original: Callable[..., Any]) -> Callable[..., Any]:
        watcher = self

        def run_node(interpreter: Any, node: torch.fx.Node) -> Any:
            ge_graph = watcher._fx2ge.get_default_ge_graph()
            before = len(ge_graph.op)
            watcher._current_node = node
            try:
                return original(interpreter, node)
            except Exception:
                if watcher._failing_node is None:
                    watcher._failing_node = node
                raise
            finally:
                watcher._current_node = None
                for op in ge_graph.op[before:]:
                    watcher._ops_of_node[op.name] = node

        return run_node

    def _wrap_parse_node(self, original: Callable[..., Any]) -> Callable[..., Any]:
        """A node whose conversion raises is recorded and becomes torchair's mock node, so the
        rest of the graph is converted too; when even the mock cannot be built, the error
        propagates and the graph stops there."""
        watcher = self

        def parse_node(concrete: Any, target: Any, args: Any, kwargs: Any, meta_outputs: Any) -> Any:
            ge_graph = watcher._fx2ge.get_default_ge_graph()
            before = len(ge_graph.op)
            try:
                return original(concrete, target, args, kwargs, meta_outputs)
            except Exception as exc:  # noqa: BLE001 - a node torchair cannot convert is a finding
                del ge_graph.op[before:]  # what the converter built before it raised
                try:
                    outputs = concrete._create_mock_node_for_op(target, args, kwargs)
                    if meta_outputs is not None:
                        watcher._fx2ge.set_ge_outputs(outputs, meta_outputs)
                except Exception:  # noqa: BLE001 - no mock for this node: the graph stops at it
                    raise exc from None
                watcher._result.failures.append(watcher._failure_at(watcher._current_node, exc))
                return outputs

        return parse_node

    def _wrap_optimize(self, original: Callable[..., Any]) -> Callable[..., Any]:
        watcher = self

        def optimize_graph_without_runtime(concrete: Any, *args: Any, **kwargs: Any) -> Any:
            record = watcher._record(concrete.graph)  # as translated, before torchair's GE passes
            value = original(concrete, *args, **kwargs)
            record.optimized_text = str(concrete.graph)
            record.optimized_types = dict(Counter(op.type for op in concrete.graph.op))
            watcher._result.graphs.append(record)
            return value

        return optimize_graph_without_runtime

    def _record(self, ge_graph: Any) -> GeGraphRecord:
        ops = []
        for op in ge_graph.op:
            node = self._ops_of_node.get(op.name)
            where = user_line_of_stack_trace(node.meta.get("stack_trace"), self._user_files) if node else None
            file, line = where or (None, None)
            ops.append(
                {"name": op.name, "type": op.type, "fx_node": node.name if node else None, "file": file, "line": line}
            )
        return GeGraphRecord(name=self._graph_name(ge_graph.name), ops=ops, text=str(ge_graph))

    def _graph_name(self, torchair_name: str) -> str:
        """The GE graph of dynamo graph N is ``graph_N``, as the dynamo and aot dumps name it
        (torchair counts from 1, dynamo from 0). A GE graph compiled later for an earlier dynamo
        graph (a backward, lazily) keeps torchair's count: ``ge_graph_M``."""
        if self._named_current or not self._graph_count:
            return f"ge_{torchair_name}"
        self._named_current = True
        return f"graph_{self._graph_count - 1}"
