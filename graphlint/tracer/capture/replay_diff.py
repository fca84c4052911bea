"""Why a replay differs: the value the captured graph baked in, found by diffing it with the
graph this call really ran, and mapped to the user's line through the FX ``stack_trace``.

Three places a value can hide: an integer input of the captured graph (a captured graph keeps
the integer it was captured with); a constant argument of a node that the later graph takes from
a node instead (dynamo specialised a Python value at capture and lifted it once it changed); or
a different graph altogether (a guard failed: a loop ran another number of times, a branch went
the other way), where the first node that differs is named.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

import torch

from graphlint.tracer.capture.replay_record import SIZE_OF, Replay
from graphlint.tracer.classify.recompile import Recompile
from graphlint.tracer.locate import user_line_of_stack_trace

_VALUE_READS = {"item", torch.ops.aten._local_scalar_dense.default}


@dataclass
class BakedValue:
    what: str  # "x * <value>" style description: the node or input that holds it
    at_capture: Any
    at_replay: Any
    where: tuple[str, int] | None


def baked_values(replay: Replay, guard: Recompile | None, user_files: set[str]) -> list[BakedValue]:
    """What the captured graph holds fixed that this call changed: an integer input or a node's
    constant argument; else the guard that failed before the graph this call ran (``guard``, from
    dynamo's recompile report); else where the two graphs part. Empty when nothing shows."""
    found = _integer_inputs(replay, user_files) + _constant_arguments(replay, user_files)
    if found:
        return found
    if guard is not None and replay.graph != replay.capture.graph:
        where = (guard.file, guard.line) if guard.file and guard.line else None
        return [BakedValue(f"the guard `{guard.guard}`", "true", "false", where)]
    return _first_difference(replay, user_files)


def _integer_inputs(replay: Replay, user_files: set[str]) -> list[BakedValue]:
    capture = replay.capture
    found = []
    for name, value in zip(capture.names, capture.values):
        now = replay.values.get(name)
        if isinstance(value, (int, float)) and isinstance(now, (int, float)) and value != now:
            label = capture.labels.get(name, name)
            where = first_use(capture.module, name, capture.labels, user_files)
            found.append(BakedValue(f"the graph input {label}", value, now, where))
    return found


def _constant_arguments(replay: Replay, user_files: set[str]) -> list[BakedValue]:
    """Constants of the captured graph that the running graph has another value for, over the
    common run of nodes with the same targets."""
    found = []
    for old, new in zip(_computing_nodes(replay.capture.module), _computing_nodes(replay.module)):
        if old.target != new.target:
            break
        for before, now in zip(_flat_args(old), _flat_args(new)):
            if isinstance(before, torch.fx.Node) or before == now:
                continue
            where = user_line_of_stack_trace(old.meta.get("stack_trace"), user_files)
            found.append(BakedValue(f"an argument of {_op_name(old)}", before, _value_of(now, replay.values), where))
    return found


def _first_difference(replay: Replay, user_files: set[str]) -> list[BakedValue]:
    """Where the captured graph and the running one part: the first node that differs."""
    captured = _computing_nodes(replay.capture.module)
    running = _computing_nodes(replay.module)
    for old, new in zip(captured, running):
        if old.target != new.target:
            where = user_line_of_stack_trace(new.meta.get("stack_trace"), user_files)
            return [BakedValue(f"the graph from {_op_name(new)} on", _op_name(old), _op_name(new), where)]
    if len(captured) == len(running):
        return []
    longer = running if len(running) > len(captured) else captured
    extra = longer[min(len(captured), len(running))]  # the first node only one graph has
    where = user_line_of_stack_trace(extra.meta.get("stack_trace"), user_files)
    return [BakedValue("the number of operations", len(captured), len(running), where)]


def _computing_nodes(gm: torch.fx.GraphModule) -> list[torch.fx.Node]:
    """The nodes that compute, less the value reads of inputs (``item()`` of a lifted Python
    value): they are how a value that was a constant at capture enters a later graph."""
    return [
        n for n in gm.graph.nodes
        if n.op in ("call_function", "call_method", "call_module")
        and not (n.target in _VALUE_READS and n.args and getattr(n.args[0], "op", None) == "placeholder")
    ]


def _flat_args(node: torch.fx.Node) -> list[Any]:
    return torch.utils._pytree.tree_leaves((node.args, node.kwargs))


def _value_of(value: Any, placeholders: dict[str, Any]) -> Any:
    """A later graph's argument as a value: a placeholder's run-time value (a 0-d tensor read as
    a number), the number a value read (``item``) gives, else a description."""
    if not isinstance(value, torch.fx.Node):
        return value
    if value.op == "placeholder":
        return _number(placeholders.get(value.name))
    if value.target in _VALUE_READS and value.args and isinstance(value.args[0], torch.fx.Node):
        return _value_of(value.args[0], placeholders)
    return f"a value computed at run time ({value.name})"


def _number(value: Any) -> Any:
    if isinstance(value, torch.Tensor) and value.numel() == 1:
        return value.item()
    return value


def first_use(
    gm: torch.fx.GraphModule, name: str, labels: dict[str, str], user_files: set[str]
) -> tuple[str, int] | None:
    """The user's line of the first node that reads the placeholder ``name`` (for the size of a
    tensor, of the first node that reads that tensor); ``labels`` are the graph's input names."""
    node = next((n for n in gm.graph.nodes if n.op == "placeholder" and n.name == name), None)
    if node is None:
        return None
    for user in node.users:
        where = user_line_of_stack_trace(user.meta.get("stack_trace"), user_files)
        if where:
            return where
    sized = SIZE_OF.match(labels.get(name, ""))
    tensor = next((n for n, label in labels.items() if sized and label == sized["tensor"]), None)
    return first_use(gm, tensor, labels, user_files) if tensor is not None else None




def _op_name(node: torch.fx.Node) -> str:
    target = node.target
    return target if isinstance(target, str) else getattr(target, "__name__", str(target))
