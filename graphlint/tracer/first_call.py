"""Each stage sees the target as a user's first call would.

A model's first call may change it: transformers installs its output-capturing hooks once (under
a lock, which breaks a dynamo graph), Reformer's first call sets ``config.num_buckets``. A user
compiles a fresh model, so the stages after eager each get a copy of the target taken before
any stage ran (``pristine_copy``, then ``copy_of`` per stage); the eager stage says when its
first call changed the model (``state_changes``), and whether the later stages were spared it.

A target whose callable is a module or a method of one is deep-copied; a plain function (which
may close over a model) cannot be copied that way, and keeps running on the one target.
"""

from __future__ import annotations

import copy
import dataclasses
from typing import Any

import torch

from graphlint.tracer.capture.placement import modules_reached_by
from graphlint.tracer.stages.base import TraceTarget

_HOOKS = (
    "_forward_hooks", "_forward_pre_hooks", "_backward_hooks", "_backward_pre_hooks", "_state_dict_hooks",
    "_load_state_dict_pre_hooks",
)
_PLAIN = (int, float, str, bool, type(None))
_MODULE_INTERNALS = frozenset(vars(torch.nn.Module()))  # torch's own bookkeeping of every module


def pristine_copy(target: TraceTarget) -> TraceTarget | None:
    """A deep copy of ``target`` before anything ran, or None when its callable is not a module
    nor a module's method (or will not deep-copy)."""
    owner = getattr(target.fn, "__self__", target.fn)
    if not isinstance(owner, torch.nn.Module):
        return None
    try:
        return copy_of(target)
    except Exception:  # noqa: BLE001 - a model that refuses deepcopy is run as it is
        return None


def copy_of(target: TraceTarget) -> TraceTarget:
    fn, inputs, kwargs = copy.deepcopy((target.fn, target.inputs, target.kwargs))
    return dataclasses.replace(target, fn=fn, inputs=inputs, kwargs=kwargs)


def module_state(target: TraceTarget) -> dict[str, Any]:
    """What a call may change, per module of the target: hooks (counts), plain attributes (by
    value; other objects by identity), and the config's fields."""
    state: dict[str, Any] = {}
    configs: set[int] = set()
    for root in modules_reached_by(target.fn):
        for name, module in root.named_modules():
            prefix = f"{type(root).__name__}{'.' + name if name else ''}"
            for hooks in _HOOKS:
                count = len(getattr(module, hooks, {}) or {})
                if count:
                    state[f"{prefix} {hooks.strip('_').replace('_', ' ')}"] = count
            for attr, value in vars(module).items():
                if attr in _MODULE_INTERNALS or isinstance(value, (torch.Tensor, torch.nn.Module)):
                    continue
                state[f"{prefix}.{attr}"] = value if isinstance(value, _PLAIN) else (type(value).__name__, id(value))
            config = getattr(module, "config", None)
            if config is not None and id(config) not in configs and hasattr(config, "to_dict"):
                configs.add(id(config))
                for key, value in config.to_dict().items():
                    state[f"{prefix}.config.{key}"] = repr(value)
            elif config is not None and id(config) not in configs and hasattr(config, "__dict__"):
                configs.add(id(config))
                for key, value in vars(config).items():
                    state[f"{prefix}.config.{key}"] = repr(value)
    return state


def state_changes(before: dict[str, Any], after: dict[str, Any]) -> list[str]:
    """``name: before → after`` for each piece of state a call changed."""
    changes = []
    for key in sorted(set(before) | set(after)):
        old, new = before.get(key), after.get(key)
        if old != new:
            changes.append(f"{key}: {_shown(old)} → {_shown(new)}")
    return changes


def _shown(value: Any) -> str:
    if isinstance(value, tuple) and len(value) == 2 and isinstance(value[1], int):
        return f"a {value[0]}"
    return "none" if value is None else str(value)
