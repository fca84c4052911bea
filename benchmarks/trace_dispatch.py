"""Whether the one compile feeding the dynamo, aot and torchair stages (``one_compile.py``, issue
19) gives each stage the result it gets compiling alone, and what it saves. Run on purpose.

    python benchmarks/trace_dispatch.py                                  # gpt2, llama, qwen3_moe, whisper
    python benchmarks/trace_dispatch.py --models llama --repeat 3
    python benchmarks/trace_dispatch.py --targets samples/trace/*.py [--train]

Each target runs twice, each time in a fresh interpreter, through graphlint's own stages (eager,
dynamo, aot, torchair, capture) as a worker runs them:

- ``separate``: each stage compiles the target itself (``StageContext.shares_compile`` off, as
  for a rank of a distributed job);
- ``one``: the dynamo, aot and torchair stages through one compile, as ``graphlint trace`` runs
  them; ``alone`` lists the stages the one compile could not serve (they compiled alone).

Printed: CPU seconds of each part (user + system of the process; the stage rows' own figures
move the work done inside the dynamo stage's compile to its stage, these do not), and per stage
whether the status, graph counts and findings (kind, code, file, line, count) are the same.
"""

from __future__ import annotations

import argparse
import io
import json
import os
import statistics
import subprocess
import sys
import time
from pathlib import Path
from typing import Any

REPO = Path(__file__).resolve().parents[1]
MODELS_FILE = REPO / "tests" / "tracer" / "targets" / "transformers_models.py"
MODELS = ("gpt2", "llama", "qwen3_moe", "whisper")
COMPILING = ("dynamo", "aot", "torchair")


class Clock:
    """CPU seconds of this process, part by part."""

    def __init__(self) -> None:
        self.parts: dict[str, float] = {}
        self._last = time.process_time()

    def mark(self, part: str) -> None:
        now = time.process_time()
        self.parts[part] = round(self.parts.get(part, 0.0) + now - self._last, 3)
        self._last = now


def finding_key(finding: Any) -> list[Any]:
    return [finding.kind, finding.code, os.path.basename(finding.file or "-"), finding.line, finding.count]


def child(mode: str, file: str, entry: str | None, train: bool) -> dict[str, Any]:
    clock = Clock()
    import torch  # noqa: F401

    from graphlint.tracer.first_call import copy_of, pristine_copy
    from graphlint.tracer.one_compile import KEY
    from graphlint.tracer.stages.base import StageContext, TraceOptions
    from graphlint.tracer.target import load_target
    from graphlint.tracer.worker import EventWriter, run_stage

    target = load_target(file, entry)
    ctx = StageContext(target, TraceOptions(train=train))
    ctx.pristine = pristine_copy(target)
    ctx.shares_compile = mode == "one"
    clock.mark("import, load")
    events = EventWriter(io.StringIO())
    stages: dict[str, Any] = {}
    alone: set[str] = set()
    for name in ("eager", *COMPILING, "capture"):
        if name != "eager" and ctx.pristine is not None:
            ctx.target = copy_of(ctx.pristine)
        one = ctx.shared.get(KEY)
        result = run_stage(name, ctx, events)
        one = one or ctx.shared.get(KEY)
        if one is not None and name in COMPILING and not one.usable[name]:
            alone.add(name)
        stages[name] = {
            "status": result.status, "graphs": result.graphs, "findings": sorted(map(finding_key, result.findings)),
        }
        clock.mark(name)
    return {"cpu": clock.parts, "stages": stages, "alone": sorted(alone)}


def run_child(mode: str, file: str, entry: str | None, train: bool) -> dict[str, Any]:
    command = [sys.executable, __file__, "--child", mode, file, entry or "-"] + (["--train"] if train else [])
    done = subprocess.run(command, capture_output=True, text=True)
    if done.returncode != 0:
        raise SystemExit(f"{mode} of {file} {entry or ''} failed:\n{done.stderr[-3000:]}")
    return json.loads(done.stdout.splitlines()[-1])


def compare(file: str, entry: str | None, train: bool, repeat: int) -> dict[str, Any]:
    runs = {mode: [run_child(mode, file, entry, train) for _ in range(repeat)] for mode in ("separate", "one")}
    separate, one = runs["separate"][0], runs["one"][0]
    same = {name: separate["stages"][name] == one["stages"][name] for name in separate["stages"]}

    def median(mode: str, parts: tuple[str, ...]) -> float:
        return statistics.median(sum(r["cpu"].get(p, 0.0) for p in parts) for r in runs[mode])

    return {
        "target": f"{os.path.relpath(file)}{':' + entry if entry else ''}{' --train' if train else ''}",
        "same": same,
        "alone": one["alone"],
        "cpu": {
            "import, load": median("separate", ("import, load",)),
            "separate: dynamo+aot+torchair": median("separate", COMPILING),
            "one: dynamo+aot+torchair": median("one", COMPILING),
            "capture after separate": median("separate", ("capture",)),
            "capture after one": median("one", ("capture",)),
            "total separate": median("separate", tuple(separate["cpu"])),
            "total one": median("one", tuple(one["cpu"])),
        },
        "separate": separate,
        "one": one,
        "load": os.getloadavg()[0],
    }


def render(result: dict[str, Any]) -> str:
    cpu = result["cpu"]
    lines = [
        f"{result['target']}: dynamo+aot+torchair {cpu['separate: dynamo+aot+torchair']:.2f} cpu-s separate, "
        f"{cpu['one: dynamo+aot+torchair']:.2f} through one compile; "
        f"capture {cpu['capture after separate']:.2f} / {cpu['capture after one']:.2f}; "
        f"total {cpu['total separate']:.2f} / {cpu['total one']:.2f}  (load {result['load']:.1f})",
        "  same status, graphs and findings: " + ", ".join(f"{k} {'yes' if v else 'NO'}" for k, v in result["same"].items())
        + (f"; compiled alone: {', '.join(result['alone'])}" if result["alone"] else ""),
    ]
    for name, same in result["same"].items():
        if not same:
            lines.append(f"    {name} separate: {result['separate']['stages'][name]}")
            lines.append(f"    {name} one: {result['one']['stages'][name]}")
    return "\n".join(lines)


def main(argv: list[str]) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--models", default=",".join(MODELS), help=f"comma-separated entries of {MODELS_FILE.name}")
    parser.add_argument("--targets", nargs="+", type=Path, help="trace target files instead of the models")
    parser.add_argument("--train", action="store_true")
    parser.add_argument("--repeat", type=int, default=1, help="runs of each side (medians of the CPU figures)")
    parser.add_argument("--json", type=Path, help="write the raw figures here")
    parser.add_argument("--child", nargs=3, metavar=("MODE", "FILE", "ENTRY"), help=argparse.SUPPRESS)
    args = parser.parse_args(argv)
    if args.child:
        mode, file, entry = args.child
        print(json.dumps(child(mode, file, None if entry == "-" else entry, args.train)))
        return 0
    jobs = [(str(t), None) for t in args.targets] if args.targets else [(str(MODELS_FILE), m) for m in args.models.split(",")]
    results = []
    for file, entry in jobs:
        results.append(compare(file, entry, args.train, args.repeat))
        print(render(results[-1]), flush=True)
    if args.json:
        args.json.write_text(json.dumps(results, indent=2, default=str), encoding="utf-8")
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
