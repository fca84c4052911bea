"""Run the target as a capture-once, replay-many engine would see it, on the CPU, with real tensors.

The target is compiled once with dynamo's guards (a recording ``eager`` backend) and called once
per input. Every time one of its graphs runs, two models of graph capture are played beside it:

- **guard-free** (vLLM, sglang: capture per batch shape, replay without dynamo's guards): the
  first run of the n-th graph of a call at a given set of input shapes is the *capture*; a later
  run at the same shapes is a *replay* of the captured graph: its inputs are the call's own
  tensors, while everything the capture read that was not an input (parameters, buffers, tensors
  dynamo lifted from Python values) is read where it was at capture, and Python values the graph
  baked in stay as they were. The replay's outputs are compared with the graph that really ran.
- **guarded** (``torch.compile`` with ``mode="reduce-overhead"`` / npugraph_ex): every distinct
  (graph, input shapes, integer inputs) is a capture of its own; what changes is counted.

Module attribute assignments that replace a tensor are recorded with the user's line, so a
replay that reads a replaced tensor can name the line that replaced it.
"""

from __future__ import annotations

import re
import traceback
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from dataclasses import dataclass, field
from typing import Any

import torch

from graphlint.tracer.calls import call_each, fresh_inputs
from graphlint.tracer.classify.recompile import Recompile, recompile_of_log
from graphlint.tracer.dynamo_reports import DynamoReports, collect_dynamo_reports
from graphlint.tracer.locate import pick_user_frame
from graphlint.tracer.stages.base import TraceTarget

Where = tuple[str, int] | None

SIZE_OF = re.compile(r"^(?P<tensor>.+)\.size\((?P<dim>\d+)\)$")
_SOURCE_PARTS = (
    (re.compile(r"^[LG]\['(\w+)'\]"), r"\1"),
    (re.compile(r"\._(?:modules|parameters|buffers)\['(\w+)'\]"), r".\1"),
    (re.compile(r"\.size\(\)\[(\d+)\]"), r".size(\1)"),
)


def label_of(gm: torch.fx.GraphModule, name: str) -> str:
    """``readable_name`` of the placeholder ``name`` of ``gm``."""
    return readable_name(_placeholder(gm, name))


def _source_text(placeholder: torch.fx.Node) -> str | None:
    """Dynamo's source of a graph input as text (``L['self']._modules['proj']...``), or None."""
    source = getattr(placeholder.meta.get("grapharg"), "source", None)  # gone once compiled
    name = getattr(source, "name", None)
    text = name() if callable(name) else name
    return text if isinstance(text, str) else None


def readable_name(placeholder: torch.fx.Node) -> str:
    """What a graph input is in the user's terms, from dynamo's source for it:
    ``L['self']._modules['proj']._parameters['weight']`` reads ``self.proj.weight``, the size
    input ``s52`` reads ``tokens.size(0)``; the placeholder's own name when there is no source."""
    text = _source_text(placeholder)
    if text is None:
        return placeholder.name
    for pattern, replacement in _SOURCE_PARTS:
        text = pattern.sub(replacement, text)
    return text


# A tensor local of the compiled frame (``L['y']``, ``L['inputs'][0]``), not an attribute of one
# nor a global: data of this call, such as the tensor a graph break hands to the graph resumed
# after it. A guard-free engine captures the whole forward, so that tensor lives in the capture's
# own memory and is written again by every replay: it cannot go stale the way a weight can.
_CALL_LOCAL = re.compile(r"^L\['\w+'\](?:\[[^\]]*\])*$")


def is_call_local(placeholder: torch.fx.Node) -> bool:
    """A Python number dynamo passes as a tensor (``pass_arg_as_tensor``: a float argument) is
    not: a captured graph bakes the number in, which is what GL205 is about."""
    grapharg = placeholder.meta.get("grapharg")
    if getattr(grapharg, "pass_arg_as_tensor", False):
        return False
    text = _source_text(placeholder)
    return text is not None and _CALL_LOCAL.match(text) is not None



@dataclass
class Capture:
    """A graph as the guard-free engine captured it: the graph, its placeholders' names, and the
    values it read (inputs cloned before the run; everything else by reference, as memory is)."""

    graph: int
    module: torch.fx.GraphModule
    names: list[str]
    labels: dict[str, str]  # placeholder name → the input in the user's terms (``self.proj.weight``)
    values: list[Any]
    is_input: list[bool]
    call: int


@dataclass
class Replay:
    """One later run at the captured shapes: what the replay gave and what really ran."""

    capture: Capture
    call: int
    graph: int  # the graph dynamo ran for this call (another one when a guard failed)
    module: torch.fx.GraphModule
    values: dict[str, Any]  # this run's placeholder values, by name
    replayed: Any = None  # the captured graph's outputs on this run's inputs; None when it raised
    actual: Any = None  # the outputs of the graph that really ran
    error: str | None = None  # why the captured graph could not be replayed here
    stale: list[str] = field(default_factory=list)  # non-input placeholders whose storage changed


@dataclass
class ReplayLog:
    calls: int = 0
    graphs: list[torch.fx.GraphModule] = field(default_factory=list)  # compiled, in order
    labels: list[dict[str, str]] = field(default_factory=list)  # per graph: placeholder → readable
    call_locals: list[set[str]] = field(default_factory=list)  # per graph: placeholders ``is_call_local``
    guards: dict[int, Recompile] = field(default_factory=dict)  # graph → the guard that failed before it
    captures: dict[tuple[Any, ...], Capture] = field(default_factory=dict)  # guard-free
    replays: list[Replay] = field(default_factory=list)
    guarded: dict[tuple[Any, ...], int] = field(default_factory=dict)  # capture key → first call
    runs: list[tuple[int, int, list[Any]]] = field(default_factory=list)  # (call, graph, values)
    calls_recapturing: set[int] = field(default_factory=set)  # calls that needed a guarded capture
    replaced: dict[int, Where] = field(default_factory=dict)  # storage address → line replacing it
    error: BaseException | None = None  # what the target raised, if it did


def record_replays(target: TraceTarget) -> ReplayLog:
    """Compile and call ``target`` once per input on the CPU, playing both capture models."""
    log = ReplayLog()
    torch._dynamo.reset()
    inputs = fresh_inputs(target)
    try:
        with collect_dynamo_reports() as reports, _replacements_recorded(log, target.user_files):
            recorder = _Recorder(log, target.user_files, reports)
            compiled = torch.compile(target.fn, backend=recorder.backend)
            for call, (args, kwargs) in enumerate(zip(inputs, target.kwargs)):
                recorder.start_call(call, (args, kwargs))
                call_each(compiled, [args], [kwargs], train=False)
                log.calls += 1
    except Exception as exc:  # the target's own failure; the other stages report it
        log.error = exc
    finally:
        torch._dynamo.reset()
    return log


class _Recorder:
    def __init__(self, log: ReplayLog, user_files: set[str], reports: DynamoReports) -> None:
        self.log = log
        self.user_files = user_files
        self.reports = reports
        self.call = -1
        self.position = 0  # which graph of the current call runs next
        self.input_ids: set[int] = set()

    def start_call(self, call: int, inputs: Any) -> None:
        self.call, self.position = call, 0
        leaves = torch.utils._pytree.tree_leaves(inputs)
        self.input_ids = {id(t) for t in leaves if isinstance(t, torch.Tensor)}

    def backend(self, gm: torch.fx.GraphModule, example_inputs: list[Any]) -> Callable[..., Any]:
        index = len(self.log.graphs)
        self.log.graphs.append(gm)
        if self.reports.recompiles:  # compiled after a guard failed: the latest failure says which
            guard = recompile_of_log(self.reports.recompiles[-1], self.user_files)
            if guard is not None:
                self.log.guards[index] = guard
        placeholders = [n for n in gm.graph.nodes if n.op == "placeholder"]
        names = [n.name for n in placeholders]
        self.log.labels.append({n.name: readable_name(n) for n in placeholders})
        self.log.call_locals.append({n.name for n in placeholders if is_call_local(n)})

        def run(*args: Any) -> Any:
            return self.run_graph(index, gm, names, list(args))

        return run

    def run_graph(self, index: int, gm: torch.fx.GraphModule, names: list[str], args: list[Any]) -> Any:
        position, self.position = self.position, self.position + 1
        locals_ = self.log.call_locals[index]
        is_input = [
            isinstance(a, torch.Tensor) and (id(a) in self.input_ids or name in locals_) for a, name in zip(args, names)
        ]
        shapes = tuple(_shape(a) for a, inp in zip(args, is_input) if inp)
        self._count_guarded(index, args)
        self.log.runs.append((self.call, index, list(args)))
        key = (position, shapes)
        capture = self.log.captures.get(key)
        if capture is None:
            values = [_clone(a) if inp else a for a, inp in zip(args, is_input)]
            self.log.captures[key] = Capture(index, gm, names, self.log.labels[index], values, is_input, self.call)
            return gm(*args)
        replay = Replay(capture, self.call, index, gm, dict(zip(names, args)))
        replay_args = self._replay_args(capture, replay)
        actual = gm(*args)
        replay.actual = _clone(actual)
        if replay_args is not None:
            try:
                replay.replayed = capture.module(*replay_args)
            except Exception as exc:  # a replay a real engine would not survive either
                replay.error = f"{type(exc).__name__}: {exc}"
        self.log.replays.append(replay)
        return actual

    def _replay_args(self, capture: Capture, replay: Replay) -> list[Any] | None:
        """The captured graph's inputs on this run: this call's tensors for the captured inputs,
        the captured memory (and baked Python values) for everything else."""
        args = []
        for name, value, is_input in zip(capture.names, capture.values, capture.is_input):
            if is_input:
                if name not in replay.values:
                    replay.error = f"this call has no input {name!r} of the captured graph"
                    return None
                args.append(_clone(replay.values[name]))
                continue
            now = replay.values.get(name)
            if isinstance(value, torch.Tensor) and isinstance(now, torch.Tensor) and _address(now) != _address(value):
                replay.stale.append(name)
            args.append(_clone(value))
        return args

    def _count_guarded(self, index: int, args: list[Any]) -> None:
        """A guarded engine captures each graph anew per input shapes and integer inputs (a
        captured graph bakes integers in)."""
        key = (index, tuple(_shape(a) if isinstance(a, torch.Tensor) else a for a in args))
        if key not in self.log.guarded:
            self.log.guarded[key] = self.call
            self.log.calls_recapturing.add(self.call)


@contextmanager
def _replacements_recorded(log: ReplayLog, user_files: set[str]) -> Iterator[None]:
    """While active, assigning a module attribute that replaces a tensor with another tensor
    records the old tensor's storage address with the user's line that replaced it."""
    original = torch.nn.Module.__setattr__

    def recording_setattr(module: torch.nn.Module, name: str, value: Any) -> None:
        if isinstance(value, torch.Tensor):
            old = module._parameters.get(name, module._buffers.get(name, module.__dict__.get(name)))
            if isinstance(old, torch.Tensor) and _address(old) != _address(value):
                frames = [(f.filename, f.lineno or 0) for f in traceback.extract_stack()[:-1]]
                log.replaced.setdefault(_address(old), pick_user_frame(frames, user_files))
        original(module, name, value)

    torch.nn.Module.__setattr__ = recording_setattr  # type: ignore[method-assign]
    try:
        yield
    finally:
        torch.nn.Module.__setattr__ = original  # type: ignore[method-assign]


def _address(tensor: torch.Tensor) -> int:
    return tensor.untyped_storage().data_ptr()


def _shape(value: Any) -> Any:
    return (tuple(value.shape), str(value.dtype)) if isinstance(value, torch.Tensor) else None


def _clone(value: Any) -> Any:
    return torch.utils._pytree.tree_map(lambda v: v.detach().clone() if isinstance(v, torch.Tensor) else v, value)
