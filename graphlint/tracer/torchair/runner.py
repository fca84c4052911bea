"""Run torchair's backend on a target and report what its FX → GE translation did.

The target is compiled with ``torchair.get_npu_backend`` the way a user compiles it for an NPU
(``max-autotune``, GE graph mode) with two settings changed: ``pattern_fusion_pass`` is off (its
patterns call ``torch.ops.npu.*`` kernels, which exist only with torch_npu) and
``debug.run_eagerly`` is on: torchair then builds and optimises the GE graph, and instead of
compiling and running it natively returns the FX graph to run eagerly. That is the clean stop
after translation; the outputs are still computed, so they can be compared with eager.

A graph whose translation raises is recorded with the FX node being converted and handed back to
dynamo to run eagerly, so the other graphs of the target are translated too.

Fidelity: the trace runs on CPU, and some aten ops exist only because dispatch chose a CPU
kernel (``F.scaled_dot_product_attention`` → ``_scaled_dot_product_flash_attention_for_cpu``);
on an NPU torch_npu picks its own kernels. Such ops are decomposed into the aten ops they stand
for before translation, and any that remain are judged inconclusive, never a torchair failure.
"""

from __future__ import annotations

import importlib
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

# aten ops that only a CPU trace produces (oneDNN kernels and the ``*_for_cpu`` choices of
# device-dependent composites); on an NPU torch_npu dispatches these composites to its own kernels.
_CPU_ONLY_OP = re.compile(r"(^|\.)(_?mkldnn|_?onednn)|_for_cpu(_|\.|$)")


def is_cpu_only_op(op_name: str) -> bool:
    """``aten._scaled_dot_product_flash_attention_for_cpu.default`` → True."""
    return bool(_CPU_ONLY_OP.search(op_name))


@dataclass
class TranslationFailure:
    """One graph whose translation raised, with the FX node torchair was converting."""

    graph: str
    error: BaseException
    op: str | None  # "aten.index_put.default"
    node: str | None  # FX node name
    file: str | None
    line: int | None
    has_converter: bool | None  # None when the failure was not in a converter


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


def offline_compiler_config(torchair: types.ModuleType) -> Any:
    config = torchair.CompilerConfig()
    config.experimental_config.pattern_fusion_pass = False
    config.debug.run_eagerly = True
    return config


def translate(
    torchair: types.ModuleType,
    target: TraceTarget,
    *,
    train: bool = False,
    config: Any = None,
) -> TranslationResult:
    """Compile ``target`` with torchair's backend, calling it once per input; never raises for
    what the target or torchair do (a failure outside translation is ``result.error``)."""
    result = TranslationResult()
    watcher = _TranslationWatcher(target.user_files, result)
    decompositions = _cpu_only_decompositions(result.cpu_decomposed)
    backend = torchair.get_npu_backend(
        compiler_config=config or offline_compiler_config(torchair), custom_decompositions=decompositions
    )

    def recording_backend(gm: torch.fx.GraphModule, example_inputs: list[Any]) -> Callable[..., Any]:
        watcher.start_graph()
        try:
            return backend(gm, example_inputs)
        except Exception as exc:  # noqa: BLE001 - any failure of translation is a finding
            result.failures.append(watcher.failure(exc))
            return gm.forward

    torch._dynamo.reset()
    compiled = torch.compile(target.fn, backend=recording_backend)
    with watcher.installed():
        try:
            result.outputs = call_each_input(compiled, target, train)
        except Exception as exc:  # noqa: BLE001 - the target failed while running
            if watcher.converting_failed:  # a graph compiled lazily (backward) failed translation
                result.failures.append(watcher.failure(exc))
            else:
                result.error = exc
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
    each FX node produced, which node was being converted when translation raised, and every
    GE graph once torchair finished optimising it."""

    def __init__(self, user_files: set[str], result: TranslationResult) -> None:
        self._user_files = user_files
        self._result = result
        # torchair's own modules, imported (by ``offline_torchair`` or torch_npu) before this runs
        self._compiler = importlib.import_module("torchair.npu_fx_compiler")
        self._fx2ge = importlib.import_module("torchair._ge_concrete_graph.fx2ge_converter")
        self._ops_of_node: dict[str, torch.fx.Node] = {}  # GE op name → FX node
        self._failing_node: torch.fx.Node | None = None
        self._graph_count = 0
        self._named_current = False  # the current dynamo graph's first GE graph has its name

    @property
    def converting_failed(self) -> bool:
        return self._failing_node is not None

    def start_graph(self) -> None:
        self._failing_node = None
        self._ops_of_node.clear()
        self._graph_count += 1
        self._named_current = False

    @contextmanager
    def installed(self) -> Iterator[None]:
        converter_cls, graph_cls = self._compiler._NpuGraphConverter, self._fx2ge.GeConcreteGraph
        run_node, optimize = converter_cls.run_node, graph_cls.optimize_graph_without_runtime
        converter_cls.run_node = self._wrap_run_node(run_node)
        graph_cls.optimize_graph_without_runtime = self._wrap_optimize(optimize)
        try:
            yield
        finally:
            converter_cls.run_node = run_node
            graph_cls.optimize_graph_without_runtime = optimize

    def failure(self, exc: BaseException) -> TranslationFailure:
        """The failure of the translation that raised ``exc``; forgets the failing node."""
        node, self._failing_node = self._failing_node, None
        graph = f"graph_{self._graph_count - 1}"
        if node is None or node.op != "call_function":
            where = user_line_of_exception(exc, self._user_files)
            return TranslationFailure(graph, exc, None, None, *(where or (None, None)), has_converter=None)
        where = user_line_of_stack_trace(node.meta.get("stack_trace"), self._user_files)
        converter = getattr(node.target, "_ge_converter", None) or self._fx2ge._CONVERTERS.get(node.target)
        return TranslationFailure(
            graph, exc, str(node.target), node.name, *(where or (None, None)), has_converter=converter is not None
        )

    def _wrap_run_node(self, original: Callable[..., Any]) -> Callable[..., Any]:
        watcher = self

        def run_node(interpreter: Any, node: torch.fx.Node) -> Any:
            ge_graph = watcher._fx2ge.get_default_ge_graph()
            before = len(ge_graph.op)
            try:
                return original(interpreter, node)
            except Exception:
                if watcher._failing_node is None:
                    watcher._failing_node = node
                raise
            finally:
                for op in ge_graph.op[before:]:
                    watcher._ops_of_node[op.name] = node

        return run_node

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
