"""The worker's garbage collector (``graphlint/tracer/collector.py``): what the target loaded is
frozen, young collections are rarer, and cyclic garbage made by the stages is still collected."""

from __future__ import annotations

import json
from pathlib import Path

from graphlint.tracer.collector import YOUNG_THRESHOLD
from tests.tracer.conftest import run_cli

TARGET = '''
import gc
import json
import weakref

import torch
from torch import nn

LOADED = object()  # alive since the target was loaded


class Cycle:
    pass


class Records(nn.Module):
    def forward(self, x):
        cycle = Cycle()
        cycle.me = cycle
        dead = weakref.ref(cycle)
        del cycle
        collected = gc.collect()
        with open(OUT, "w") as out:
            json.dump({
                "threshold": gc.get_threshold()[0],
                "frozen": gc.get_freeze_count(),
                "cycle_collected": dead() is None and collected > 0,
            }, out)
        return x + 1


OUT = OUT_PATH
model = Records()
example_inputs = (torch.ones(2),)
'''


def test_the_worker_freezes_what_the_target_loaded_and_still_collects_cycles(tmp_path: Path) -> None:
    out = tmp_path / "gc.json"
    target = tmp_path / "records_gc.py"
    target.write_text(TARGET.replace("OUT_PATH", repr(str(out))), encoding="utf-8")
    status, stdout, stderr = run_cli("trace", str(target), "--stages", "eager", "--format", "json")
    assert status == 0, stderr
    seen = json.loads(out.read_text(encoding="utf-8"))
    assert seen["threshold"] == YOUNG_THRESHOLD
    assert seen["frozen"] > 100_000  # torch, the target's module and its model
    assert seen["cycle_collected"]
