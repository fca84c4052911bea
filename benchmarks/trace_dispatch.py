"""What one dynamo compile feeding the dynamo, aot and torchair stages would save, and whether it
gives their findings. A measurement of a design (issue 19), not graphlint's trace. Run on purpose.

    python benchmarks/trace_dispatch.py                                  # gpt2, llama, qwen3_moe, whisper
    python benchmarks/trace_dispatch.py --models llama --repeat 3
    python benchmarks/trace_dispatch.py --targets samples/trace/*.py [--train]

Each target runs twice, each time in a fresh interpreter, after its eager stage:

- ``separate``: the dynamo, aot and torchair stages as ``graphlint trace`` runs them (each
  compiles the target itself, on its own copy, from a clean dynamo state);
- ``dispatch``: torchair imported offline, then ONE ``torch.compile`` whose backend, called by
  dynamo inside its compile context with each graph, keeps the graph (the dynamo stage), runs
  ``aot_eager`` on it (the aot stage; after a failure, no more) and torchair's backend under
  graphlint's translation watcher (the torchair stage), and returns a switch. Each stage then
  calls the compiled target on its own fresh copy of the model: dynamo's cache is hit (a new
  compile here is counted as ``late``: that stage would have to compile alone) and the switch runs
  that stage's own compiled graph, so its outputs, its accuracy check and (``--train``) its
  backward graphs are its own.

Then the capture stage, as the trace runs it. Printed: CPU seconds of each part (user + system
of the process), and per stage whether the findings (kind, code, file, line, count) and graph
counts of the two runs are the same. The dispatch run leaves out the stages' bookkeeping
(dumps, artifacts), which costs little without ``--dump``.
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
    from graphlint.tracer.stages.base import StageContext, TraceOptions
    from graphlint.tracer.target import load_target
    from graphlint.tracer.worker import EventWriter, run_stage

    target = load_target(file, entry)
    ctx = StageContext(target, TraceOptions(train=train))
    ctx.pristine = pristine_copy(target)
    clock.mark("import, load")
    events = EventWriter(io.StringIO())
    run_stage("eager", ctx, events)
    clock.mark("eager")
    stages: dict[str, Any] = {}
    late: list[str] = []
    if mode == "separate":
        for name in COMPILING:
            if ctx.pristine is not None:
                ctx.target = copy_of(ctx.pristine)
            result = run_stage(name, ctx, events)
            stages[name] = {"graphs": result.graphs, "findings": sorted(map(finding_key, result.findings))}
            clock.mark(name)
    else:
        stages, late = _dispatched(ctx, clock)
    if ctx.pristine is not None:
        ctx.target = copy_of(ctx.pristine)
    capture = run_stage("capture", ctx, events)
    clock.mark("capture")
    return {"cpu": clock.parts, "stages": stages, "late": late, "capture": capture.status}


def _dispatched(ctx: Any, clock: Clock) -> tuple[dict[str, Any], list[str]]:
    import torch
    from torch._dynamo.backends.debugging import aot_eager, boxed_nop

    from graphlint.tracer.calls import call_each_input, eager_outputs
    from graphlint.tracer.classify.exception import finding_of_exception
    from graphlint.tracer.dynamo_reports import collect_dynamo_reports
    from graphlint.tracer.first_call import copy_of
    from graphlint.tracer.recording import GraphRecorder, RecordedGraph
    from graphlint.tracer.stages.dynamo import DynamoStage
    from graphlint.tracer.torchair import runner
    from graphlint.tracer.torchair.locate import locate_torch_npu
    from graphlint.tracer.torchair.offline import offline_torchair
    from graphlint.tracer.torchair.verdicts import findings_of_failures

    dynamo = DynamoStage()
    recorder = GraphRecorder()
    user_files = ctx.target.user_files
    reference = eager_outputs(ctx)
    aot_errors: list[BaseException] = []
    current = ["dynamo"]
    late: list[str] = []
    with offline_torchair(locate_torch_npu(None)) as torchair:
        clock.mark("torchair import")
        translation = runner.TranslationResult()
        watcher = runner._TranslationWatcher(user_files, translation)
        torchair_backend = torchair.get_npu_backend(
            compiler_config=runner.offline_compiler_config(torchair),
            custom_decompositions=runner._cpu_only_decompositions(translation.cpu_decomposed),
        )

        def dispatcher(gm: torch.fx.GraphModule, example_inputs: list[Any]) -> Any:
            if current[0] != "dynamo":
                late.append(current[0])
            index = recorder._record_dynamo(gm, example_inputs)

            def recording(kind: Any) -> Any:
                def record(fx_g: torch.fx.GraphModule, inputs: list[Any]) -> Any:
                    recorder.graphs.append(RecordedGraph(index, kind, fx_g, list(inputs)))
                    return boxed_nop(fx_g, inputs)

                return record

            compiled: dict[str, Any] = {"dynamo": gm.forward}
            if not aot_errors:
                try:
                    compiled["aot"] = aot_eager(
                        gm, example_inputs, fw_compiler=recording("forward"), bw_compiler=recording("backward")
                    )
                except Exception as exc:  # noqa: BLE001 - the aot stage's failure
                    aot_errors.append(exc)
            watcher.start_graph()
            try:
                compiled["torchair"] = torchair_backend(gm, example_inputs)
            except Exception as exc:  # noqa: BLE001 - as runner.translate's backend does
                translation.failures.append(watcher.failure(exc))
                compiled["torchair"] = gm.forward

            def switch(*args: Any) -> Any:
                run = compiled.get(current[0])
                if run is None:
                    raise aot_errors[0]
                return run(*args)

            return switch

        torch._dynamo.reset()
        runs: dict[str, tuple[Any, BaseException | None]] = {}
        for name in COMPILING:
            current[0] = name
            target = ctx.target if ctx.pristine is None else copy_of(ctx.pristine)
            with collect_dynamo_reports() as reports, watcher.installed():
                try:
                    runs[name] = (call_each_input(torch.compile(target.fn, backend=dispatcher), target, ctx.options.train), None)
                except Exception as exc:  # noqa: BLE001 - the stage's finding
                    runs[name] = (None, exc)
            if name == "dynamo":
                breaks = dynamo._graph_breaks(reports, user_files) + dynamo._recompiles(reports, user_files)[0]
            clock.mark("one compile, three runs")
    clock.mark("torchair exit")

    def of_exception(error: BaseException | None, stage: str) -> list[Any]:
        if error is None:
            return []
        return [finding_of_exception(error, stage=stage, layer=stage, user_files=user_files, default_kind="compile-error")]

    findings = {
        "dynamo": breaks + of_exception(runs["dynamo"][1], "dynamo"),
        "aot": of_exception(aot_errors[0] if aot_errors else runs["aot"][1], "aot"),
        "torchair": findings_of_failures(translation.failures) + of_exception(runs["torchair"][1], "torchair"),
    }
    for name in COMPILING:
        findings[name] += dynamo.accuracy(ctx, reference, runs[name][0])
    graphs = {
        "dynamo": len(recorder.of_kind("dynamo")),
        "aot": len([g for g in recorder.graphs if g.kind != "dynamo"]),
        "torchair": len(translation.graphs),
    }
    clock.mark("findings")
    stages = {name: {"graphs": graphs[name], "findings": sorted(map(finding_key, findings[name]))} for name in COMPILING}
    return stages, late


def run_child(mode: str, file: str, entry: str | None, train: bool) -> dict[str, Any]:
    command = [sys.executable, __file__, "--child", mode, file, entry or "-"] + (["--train"] if train else [])
    done = subprocess.run(command, capture_output=True, text=True)
    if done.returncode != 0:
        raise SystemExit(f"{mode} of {file} {entry or ''} failed:\n{done.stderr[-3000:]}")
    return json.loads(done.stdout.splitlines()[-1])


def compare(file: str, entry: str | None, train: bool, repeat: int) -> dict[str, Any]:
    runs = {mode: [run_child(mode, file, entry, train) for _ in range(repeat)] for mode in ("separate", "dispatch")}
    separate, dispatch = runs["separate"][0], runs["dispatch"][0]
    same = {name: separate["stages"][name] == dispatch["stages"][name] for name in COMPILING}

    def median(mode: str, parts: tuple[str, ...]) -> float:
        return statistics.median(sum(r["cpu"].get(p, 0.0) for p in parts) for r in runs[mode])

    compiling_separate = median("separate", COMPILING)
    compiling_dispatch = median("dispatch", ("torchair import", "one compile, three runs", "torchair exit", "findings"))
    return {
        "target": f"{os.path.relpath(file)}{':' + entry if entry else ''}{' --train' if train else ''}",
        "same": same,
        "late": sorted(set(dispatch["late"])),
        "cpu": {
            "import, load": median("separate", ("import, load",)),
            "separate: dynamo+aot+torchair": compiling_separate,
            "dispatch: the same": compiling_dispatch,
            "dispatch: of which torchair import": median("dispatch", ("torchair import",)),
            "capture after separate": median("separate", ("capture",)),
            "capture after dispatch": median("dispatch", ("capture",)),
            "total separate": median("separate", tuple(separate["cpu"])),
            "total dispatch": median("dispatch", tuple(dispatch["cpu"])),
        },
        "separate": separate,
        "dispatch": dispatch,
        "load": os.getloadavg()[0],
    }


def render(result: dict[str, Any]) -> str:
    cpu = result["cpu"]
    lines = [
        f"{result['target']}: dynamo+aot+torchair {cpu['separate: dynamo+aot+torchair']:.2f} cpu-s separate, "
        f"{cpu['dispatch: the same']:.2f} dispatched (torchair import {cpu['dispatch: of which torchair import']:.2f}); "
        f"capture {cpu['capture after separate']:.2f} / {cpu['capture after dispatch']:.2f}; "
        f"total {cpu['total separate']:.2f} / {cpu['total dispatch']:.2f}  (load {result['load']:.1f})",
        "  same findings and graphs: " + ", ".join(f"{k} {'yes' if v else 'NO'}" for k, v in result["same"].items())
        + (f"; compiled again in the run of: {', '.join(result['late'])}" if result["late"] else ""),
    ]
    for name, same in result["same"].items():
        if not same:
            lines.append(f"    {name} separate: {result['separate']['stages'][name]}")
            lines.append(f"    {name} dispatch: {result['dispatch']['stages'][name]}")
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
