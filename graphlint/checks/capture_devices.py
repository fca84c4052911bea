"""Capture metadata a framework stores on the device (``capture-device-attributes``).

sglang's Ascend attention backend makes a fresh ``ForwardMetadata`` before every capture
(``_init_cuda_graph_metadata``) and fills ``actual_seq_lengths_q`` and ``seq_lens`` with device
tensors, fields that are None, or host tensors, on its eager path. The DSA indexer reads them
through ``get_attn_backend().forward_metadata``: ``if ... actual_seq_lengths_q is None:`` builds
one on the host, never in a capture, and ``actual_seq_lengths_kv.to(k.device)`` moves nothing
there. Such an attribute is never None in a capture (``capture_values.none_modes``), and
``x.to(d)`` of it, of a slice or device-preserving method of it, or of a name every binding of
which a capture runs there holds one (``Binding.device_in``, read through ``CaptureLocals``)
copies nothing in a capture (``SiteContext.on_capture_device``); a compiled region, whose
batches the framework's capture init never saw, still reports it.
"""

from __future__ import annotations

from collections.abc import Callable

import libcst as cst

from graphlint.checks import apis
from graphlint.checks.capture_values import Binding, Local, Modes, matches
from graphlint.checks.facts import ExtractOptions
from graphlint.checks.syntax import attribute_name


def on_device(binding: Binding) -> Modes | None:
    return binding.device_in


def device_modes(
    expr: cst.BaseExpression,
    qualify: Callable[[cst.BaseExpression], str | None],
    options: ExtractOptions,
    modes: Modes,
    local: Local | None = None,
) -> Modes | None:
    """The modes of ``modes`` in which ``expr`` holds a tensor on the capture's device: an
    attribute of ``capture-device-attributes``, an element or slice of one, what a
    device-preserving method makes of one (``.int()``), a name bound to one (``local``); None
    where unknown."""
    if isinstance(expr, cst.Name):
        return local(expr.value, modes, on_device) if local is not None else None
    if isinstance(expr, cst.Subscript):
        return device_modes(expr.value, qualify, options, modes, local)
    func = expr.func if isinstance(expr, cst.Call) else None
    if isinstance(func, cst.Attribute) and func.attr.value in apis.DEVICE_PRESERVING_METHODS:
        return device_modes(func.value, qualify, options, modes, local)
    if isinstance(expr, cst.Attribute) and options.capture_device_attributes:
        name = attribute_name(expr, qualify)
        return modes if name is not None and matches(name, options.capture_device_attributes) else None
    return None
