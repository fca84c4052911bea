"""``torch.tensor`` / ``torch.as_tensor`` with ``device=`` split into host data and a copy, for
the audit's run on ``meta``.

Why: under FakeTensorMode (which dynamo traces with), ``torch.tensor(data, device="meta")``
returns a plain meta tensor instead of a fake one (torch 2.13), and the next op that mixes it
with fake tensors fails ("Please convert all Tensors to FakeTensors first"); transformers' KV
cache does exactly that (``torch.tensor([], device=key_states.device)``). Written as
``torch.tensor(data).to(device)`` it traces, and says what a device run does: the data is built
on the host and copied to the device (GL201, as the static rule reports the same call).
"""

from __future__ import annotations

from collections.abc import Iterator
from contextlib import contextmanager
from typing import Any

import torch


@contextmanager
def tensor_factories_copying_to_device() -> Iterator[None]:
    original_tensor, original_as_tensor = torch.tensor, torch.as_tensor

    def tensor(data: Any, *, dtype: Any = None, device: Any = None, requires_grad: bool = False, **kw: Any) -> Any:
        if device is None:
            return original_tensor(data, dtype=dtype, requires_grad=requires_grad, **kw)
        return original_tensor(data, dtype=dtype).to(device).requires_grad_(requires_grad)

    def as_tensor(data: Any, dtype: Any = None, device: Any = None) -> Any:
        host = original_as_tensor(data, dtype=dtype)
        return host if device is None else host.to(device)

    torch.tensor, torch.as_tensor = tensor, as_tensor
    try:
        yield
    finally:
        torch.tensor, torch.as_tensor = original_tensor, original_as_tensor
