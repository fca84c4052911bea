"""What a rank runs with, for comparing ranks: the versions of what it actually imported (a node
with another torch or CANN is the first suspect when HCCL fails, MindSpeed-LLM#1187) and the
environment variables that change how collectives or compilation behave."""

from __future__ import annotations

import os
import platform
import socket
import sys
from typing import Any

from graphlint.tracer.env import cann_version, package_version

ENV_PREFIXES = (
    "HCCL_", "ASCEND_", "NCCL_", "TORCH_NCCL_", "GLOO_", "TORCH_DISTRIBUTED_",
    "TORCH_COMPILE_", "TORCHDYNAMO_", "TORCHINDUCTOR_",
)
ENV_NAMES = ("MASTER_ADDR", "MASTER_PORT", "WORLD_SIZE", "LOCAL_WORLD_SIZE", "RANK_TABLE_FILE")
# Different on every rank or node by design; compared, they would always differ.
PER_RANK_ENV = frozenset({"RANK", "LOCAL_RANK", "GROUP_RANK", "ROLE_RANK", "HCCL_IF_IP", "ASCEND_DEVICE_ID"})


def imported_version(module_name: str, distribution: str) -> str | None:
    """The version of the module this process imported (its ``__version__``), else of the
    installed distribution. A module's own version is what the rank really runs."""
    module = sys.modules.get(module_name)
    version = getattr(module, "__version__", None) if module is not None else None
    return str(version) if version is not None else package_version(distribution)


def rank_environment() -> dict[str, str]:
    return {
        name: value for name, value in sorted(os.environ.items())
        if (name.startswith(ENV_PREFIXES) or name in ENV_NAMES) and name not in PER_RANK_ENV
    }


def rank_facts() -> dict[str, Any]:
    return {
        "host": socket.gethostname(),
        "pid": os.getpid(),
        "versions": {
            "python": platform.python_version(),
            "torch": imported_version("torch", "torch"),
            "torch_npu": imported_version("torch_npu", "torch_npu"),
            "cann": cann_version(),
            "transformers": imported_version("transformers", "transformers"),
        },
        "env": rank_environment(),
    }
