"""``--dump DIR``: each recorded graph's readable code, and depyf's decompiled bytecode.

Beside each graph's readable code, ``<graph>.runnable.py`` holds it as a standalone module
``Repro`` with ``load_args(reader)`` describing its inputs (shape, dtype, strides; torch's own
after-AOT repro helpers write both), and ``target.json`` says what the target is and what it was
called with: what `graphlint repro --from DIR` needs, without rerunning the stages.

depyf cannot decompile every bytecode of newer Pythons and torch releases; a failure is written
down in the dump (and returned) instead of stopping the trace.
"""

from __future__ import annotations

import inspect
import json
from collections.abc import Collection
from pathlib import Path
from typing import Any

from graphlint.tracer.recording import RecordedGraph
from graphlint.tracer.stages.base import StageContext


def dump_graphs(ctx: StageContext, folder: str, graphs: list[RecordedGraph]) -> list[str]:
    """Writes ``folder/<graph name>.py`` per graph; returns the paths written."""
    written = []
    for graph in graphs:
        text = graph.module.print_readable(print_output=False, include_stride=True, include_device=True)
        path = ctx.dump(f"{folder}/{graph.name}.py", text)
        if path is not None:
            written.append(str(path))
            try:
                ctx.dump(f"{folder}/{graph.name}.runnable.py", runnable_graph_code(graph.module, graph.example_inputs, ctx.target.user_files))
            except Exception as exc:  # noqa: BLE001 - a graph torch's writer cannot express
                ctx.dump(f"{folder}/{graph.name}.runnable.FAILED.txt", f"{type(exc).__name__}: {exc}\n")
    return written


# What graph code may name besides its ops: devices, tensor constants, infinities (masks).
GRAPH_CODE_IMPORTS = ("import torch", "from math import inf, nan", "from torch import device, tensor")


def runnable_graph_code(module: Any, example_inputs: list[Any], user_files: Collection[str] = ()) -> str:
    """``module`` as source of a class ``Repro`` and a ``load_args(reader)`` that builds inputs of
    the recorded metadata (random values; torch's ``InputReader`` reads it). Custom ops defined
    in ``user_files`` (or in code compiled from a string) are written out as source."""
    import copy

    import torch
    from torch._dynamo.debug_utils import InputWriter

    module = copy.deepcopy(module)
    module.graph.set_codegen(torch.fx.graph.CodeGen())  # plain arguments, not AOT's boxed list
    for node in module.graph.nodes:
        if node.op == "placeholder":
            node.type = None  # dynamo annotates with names of its own (_torch_Tensor_)
    module.recompile()
    writer = InputWriter(None)
    names = [node.name for node in module.graph.nodes if node.op == "placeholder"]
    for name, value in zip(names, example_inputs):
        if isinstance(value, torch.Tensor):
            writer.tensor(name, value)
        elif isinstance(value, (int, torch.SymInt)):
            writer.symint(name, value)
        else:
            writer.unsupported(name, value)
    registering = _custom_op_lines(module, user_files)
    inputs = writer.lines()
    # torch writes a symbolic size as its symbol (``(s52, 8)``): bound to the value it had
    inputs[1:1] = [f"    {symbol} = {value}" for symbol, value in _symbol_values(example_inputs).items()]
    if len(inputs) > 1 and not inputs[1].startswith(" "):  # a graph of constants only: no input, no body
        inputs.insert(1, "    pass")
    return "\n".join([*GRAPH_CODE_IMPORTS, *registering, _module_code(module), *inputs, ""])


def _symbol_values(example_inputs: list[Any]) -> dict[str, int]:
    """The value each size symbol of the inputs had when the graph was traced (its hint)."""
    import torch

    values: dict[str, int] = {}
    for value in example_inputs:
        numbers = [value] if isinstance(value, torch.SymInt) else []
        if isinstance(value, torch.Tensor):
            numbers = [*value.shape, *value.stride(), value.storage_offset()]
        for number in numbers:
            if not isinstance(number, torch.SymInt):
                continue
            node = number.node
            env = node.shape_env  # backed_var_to_val: var_to_val, under the name newer torch wants
            known = getattr(env, "backed_var_to_val", None) or getattr(env, "var_to_val", {})
            for symbol in sorted(node.expr.free_symbols, key=str):
                if symbol in known:
                    values[str(symbol)] = int(known[symbol])
    return values


def _module_code(module: Any) -> str:
    """torch's ``NNModuleToString`` of the graph, but for meta tensor constants (graphs traced on
    the capture audit's stand-in device): torch writes a small one as its repr,
    ``tensor(..., device='meta', size=())``, which is no code; a meta tensor has no values, so
    an empty one of its shape and dtype stands for it."""
    import re

    from torch._dynamo.debug_utils import NNModuleToString

    code = NNModuleToString.convert(module)
    for name, buffer in module._buffers.items():
        if buffer is not None and buffer.is_meta:
            empty = f"torch.empty({list(buffer.shape)}, dtype={buffer.dtype}, device='meta')"
            code = re.sub(rf"^(\s*self\.register_buffer\('{re.escape(name)}', ).*\)$", lambda m: f"{m[1]}{empty})", code, flags=re.M)
    return code


def _custom_op_lines(module: Any, user_files: Collection[str]) -> list[str]:
    """What makes the graph's custom ops exist: an import of the installed module that defines
    one (``torch.ops.transformers.grouped_mm_fallback`` exists once ``transformers.integrations.moe``
    is imported), or the source of one defined in the project (a repro needs no file of it),
    cut from its file with its registrations."""
    import importlib

    import torch

    definitions = getattr(importlib.import_module("torch._library.custom_ops"), "OPDEFS", {})
    imported: dict[str, set[str]] = {}
    written: dict[str, str] = {}  # op → the source that defines it
    for node in module.graph.nodes:
        target = node.target
        if node.op != "call_function" or not isinstance(target, (torch._ops.OpOverload, torch._ops.OpOverloadPacket)):
            continue
        packet = target.overloadpacket if isinstance(target, torch._ops.OpOverload) else target
        qualified = packet._qualified_op_name
        function = getattr(definitions.get(qualified), "_init_fn", None)
        file = getattr(getattr(function, "__code__", None), "co_filename", None)
        if function is None or file is None:
            continue  # an op of torch itself, or registered some other way (torch.library.Library)
        from graphlint.tracer.repro.source import custom_op_source, installed  # libcst: only for custom ops

        if installed(file) and str(Path(file).resolve()) not in user_files and function.__module__ != "__main__":
            imported.setdefault(function.__module__, set()).add(qualified.replace("::", "."))
        elif qualified not in written:
            try:
                source = custom_op_source(file, function.__name__, qualified, set(user_files)).code()
            except Exception as exc:  # noqa: BLE001 - a file gone or that libcst cannot parse: say so where the source would be
                source = f"# the source of {qualified} could not be written ({type(exc).__name__}: {exc}); this graph needs it"
            written[qualified] = source.strip("\n") + "\n"
    lines = [f"import {name}  # registers {', '.join(sorted(ops))}" for name, ops in sorted(imported.items())]
    return lines + list(written.values())


def dump_target(ctx: StageContext) -> None:
    """``target.json``: the callable (its class or function, and the file defining it) and the
    metadata of every call's arguments."""
    if ctx.options.dump_dir is None:
        return
    fn = ctx.target.fn
    defined = fn if inspect.isfunction(fn) or inspect.ismethod(fn) else type(fn)
    try:
        file = inspect.getsourcefile(defined)
    except (TypeError, OSError):  # a builtin, or a class without a source file
        file = None
    description = {
        "name": ctx.target.name,
        "user_files": sorted(ctx.target.user_files),
        "callable": {
            "kind": "function" if defined is fn else "instance",
            "qualname": getattr(defined, "__qualname__", None),
            "file": file,
            "training": getattr(fn, "training", None),
        },
        "calls": [
            {"args": [_value_metadata(a) for a in args], "kwargs": {k: _value_metadata(v) for k, v in kw.items()}}
            for args, kw in zip(ctx.target.inputs, ctx.target.kwargs)
        ],
    }
    ctx.dump("target.json", json.dumps(description))


def _value_metadata(value: Any) -> dict[str, Any]:
    import torch

    if isinstance(value, torch.Tensor):
        return {"tensor": {"shape": list(value.shape), "stride": list(value.stride()), "dtype": str(value.dtype),
                           "requires_grad": value.requires_grad}}
    if value is None or isinstance(value, (bool, int, float, str)):
        return {"value": value}
    return {"unsupported": type(value).__qualname__}


def dump_decompiled(ctx: StageContext, fn: Any) -> dict[str, str]:
    """depyf's source for the bytecode dynamo made from ``fn``'s code (each cache entry).
    Returns {entry name: "ok" | "failed: why"}."""
    if ctx.options.dump_dir is None:
        return {}
    import torch

    code = getattr(getattr(fn, "forward", fn), "__code__", None)
    if code is None:
        return {}
    try:
        import depyf
    except ImportError as exc:
        ctx.dump("decompiled/NOTE.txt", f"depyf is not installed ({exc}); pip install depyf\n")
        return {"depyf": f"failed: {exc}"}
    outcome: dict[str, str] = {}
    try:  # a private torch API: it may move between releases
        entries = torch._dynamo.eval_frame._debug_get_cache_entry_list(code)
    except (AttributeError, TypeError) as exc:
        ctx.dump("decompiled/NOTE.txt", f"cannot list dynamo's code for {code.co_name}: {exc}\n")
        return {"depyf": f"failed: {exc}"}
    for i, entry in enumerate(entries):
        name = f"{code.co_name}_entry_{i}"
        try:
            source = depyf.decompile(entry.code)
        except Exception as exc:  # depyf raises many kinds on bytecode it does not know
            ctx.dump(f"decompiled/{name}.FAILED.txt", f"depyf could not decompile this entry: {type(exc).__name__}: {exc}\n")
            outcome[name] = f"failed: {type(exc).__name__}: {exc}"
            continue
        ctx.dump(f"decompiled/{name}.py", source)
        outcome[name] = "ok"
    return outcome
