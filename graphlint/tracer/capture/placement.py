"""Put a target on another device for one run: its inputs, and the parameters and buffers of
every module it reaches, copied there and swapped back afterwards. The audit uses ``meta``; the
CUDA mode uses ``cuda``."""

from __future__ import annotations

import functools
import inspect
import sys
from collections.abc import Callable, Iterator
from contextlib import ExitStack, contextmanager
from typing import Any

import torch
from torch.nn.utils.stateless import _reparametrize_module
from torch.utils._pytree import tree_map_only

from graphlint.tracer.locate import is_library_file


def moved_to(value: Any, device: torch.device | str) -> Any:
    """``value`` (any pytree: tuple, list, dict of tensors…) with every tensor copied to ``device``."""
    return tree_map_only(torch.Tensor, lambda t: _moved_tensor(t, device), value)


def _moved_tensor(tensor: torch.Tensor, device: torch.device | str) -> torch.Tensor:
    moved = tensor.detach().to(device)
    if isinstance(tensor, torch.nn.Parameter):
        return torch.nn.Parameter(moved, requires_grad=tensor.requires_grad)
    return moved


def modules_reached_by(fn: Callable[..., Any]) -> list[torch.nn.Module]:
    """The modules ``fn`` runs: itself, the instance of a bound method, what a ``partial`` wraps,
    modules in its closure or among the globals its code names, and the attributes of instances
    of the user's own classes found there (``pipeline.model``)."""
    found: dict[int, torch.nn.Module] = {}
    pending: list[Any] = [fn]
    seen: set[int] = set()
    while pending:
        obj = pending.pop()
        if id(obj) in seen:
            continue
        seen.add(id(obj))
        if isinstance(obj, torch.nn.Module):
            found[id(obj)] = obj
            continue
        if isinstance(obj, functools.partial):
            pending.extend([obj.func, *obj.args, *obj.keywords.values()])
            continue
        pending.extend(_referenced_objects(obj))
    return list(found.values())


def _referenced_objects(fn: Any) -> list[Any]:
    if _is_user_instance(fn):
        return list(vars(fn).values())
    self_obj = getattr(fn, "__self__", None)
    code = getattr(fn, "__code__", None)
    referenced = [self_obj] if self_obj is not None else []
    if code is None or is_library_file(code.co_filename):  # the user's modules live in user code
        return referenced
    for cell in fn.__closure__ or ():
        try:
            referenced.append(cell.cell_contents)
        except ValueError:  # a closure variable not assigned yet
            continue
    fn_globals = getattr(fn, "__globals__", {})
    referenced.extend(fn_globals[name] for name in code.co_names if name in fn_globals)
    return referenced


def _is_user_instance(obj: Any) -> bool:
    """An instance of a class defined in the user's code (not a function, module or library type)."""
    if isinstance(obj, type) or inspect.isroutine(obj) or not hasattr(obj, "__dict__"):
        return False
    defining_file = getattr(sys.modules.get(type(obj).__module__), "__file__", None)
    return defining_file is not None and not is_library_file(defining_file)


@contextmanager
def modules_moved_to(modules: list[torch.nn.Module], device: torch.device | str) -> Iterator[None]:
    """Swap the parameters and buffers of ``modules`` for copies on ``device``, restoring the
    originals after: the user's model is never moved for good."""
    with ExitStack() as stack:
        for module in modules:
            state = {**dict(module.named_parameters()), **dict(module.named_buffers())}
            moved = {name: _moved_tensor(t, device) for name, t in state.items()}
            stack.enter_context(_reparametrize_module(module, moved, tie_weights=True))
        yield
