"""The stages of the ladder, in the order they run. One module per stage, named after it,
each defining ``STAGE``: its ``Stage`` subclass."""

from __future__ import annotations

import importlib
from typing import TYPE_CHECKING

if TYPE_CHECKING:  # `graphlint check` registers `trace` (its --stages) without the stage machinery
    from graphlint.tracer.stages.base import Stage

STAGE_ORDER: tuple[str, ...] = ("eager", "dynamo", "aot", "torchair", "capture")


def load_stage(name: str) -> Stage:
    if name not in STAGE_ORDER:
        raise ValueError(f"unknown stage {name!r}; stages are: {', '.join(STAGE_ORDER)}")
    module = importlib.import_module(f"graphlint.tracer.stages.{name}")
    return module.STAGE()
