"""NPU mode (stage mode ``real``): placeholder until the device calls are written."""

from __future__ import annotations

from graphlint.tracer.torchair.locate import installed_torch_npu


def npu_available() -> bool:
    """torch_npu installed with CANN, importable, and an NPU visible."""
    source = installed_torch_npu()
    if source is None or not source.has_cann:
        return False
    try:
        import torch_npu  # noqa: F401  registers torch.npu
    except Exception:  # a broken CANN install fails in many ways on import
        return False
    import torch

    return bool(torch.npu.is_available())
