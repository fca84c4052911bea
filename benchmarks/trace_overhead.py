"""What ``graphlint trace`` costs beside what a user's own check costs. Run on purpose, never in CI.

    python benchmarks/trace_overhead.py                          # gpt2, llama, qwen3_moe, whisper
    python benchmarks/trace_overhead.py --models llama --repeat 3
    python benchmarks/trace_overhead.py --json out.json          # the raw figures too

A user's alternative to the trace is to run the model once eagerly and once under
``torch.compile(backend="aot_eager")``. For each model (tiny transformers models built from
their configs with random weights: ``tests/tracer/targets/transformers_models.py``) this runs,
each in a fresh interpreter:

- the baseline: import torch, build the model (importing transformers), one eager call, the
  first ``aot_eager`` call, each phase timed inside the process;
- ``graphlint trace FILE --entry MODEL --format json``, every stage, as a user runs it.

Each gives its wall seconds and the CPU seconds it used (user + system, the process and every
child it waited for: the trace's worker and its static check). The ratio is the trace's over
the baseline's. Per stage, the report's own ``seconds`` and ``cpu_seconds``, and the stage's CPU
in units of the baseline's first ``aot_eager`` call; "rest" is what no stage accounts for (the
CLI, the worker's start-up and torch import, loading the target, the copies of it, the static
check). With ``--repeat N`` each figure is the median of N runs. On a shared machine CPU time is
the steadier figure; every row ends with the load average.
"""

from __future__ import annotations

import argparse
import importlib.util
import json
import os
import resource
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

REPO = Path(__file__).resolve().parents[1]
TARGETS = REPO / "tests" / "tracer" / "targets" / "transformers_models.py"
MODELS = ("gpt2", "llama", "qwen3_moe", "whisper")
GRAPHLINT = Path(sys.executable).with_name("graphlint")
BASELINE_PHASES = ("import torch", "build", "eager", "aot_eager")


def timed(
    command: list[str], env: dict[str, str] | None = None, cwd: Path | None = None
) -> tuple[float, float, subprocess.CompletedProcess[str]]:
    """Run ``command``; its wall seconds, the CPU seconds it and its children used, and the result."""
    before = resource.getrusage(resource.RUSAGE_CHILDREN)
    start = time.perf_counter()
    completed = subprocess.run(command, capture_output=True, text=True, env=env, cwd=cwd)
    wall = time.perf_counter() - start
    after = resource.getrusage(resource.RUSAGE_CHILDREN)
    cpu = (after.ru_utime - before.ru_utime) + (after.ru_stime - before.ru_stime)
    return wall, cpu, completed


def baseline_in_this_process(file: Path, entry: str) -> dict[str, list[float]]:
    """The user's own check, phase by phase: ``{phase: [wall s, cpu s]}``."""
    phases: dict[str, list[float]] = {}
    wall, cpu = time.perf_counter(), time.process_time()

    def mark(phase: str) -> None:
        nonlocal wall, cpu
        now_wall, now_cpu = time.perf_counter(), time.process_time()
        phases[phase] = [now_wall - wall, now_cpu - cpu]
        wall, cpu = now_wall, now_cpu

    import torch

    mark("import torch")
    spec = importlib.util.spec_from_file_location("benchmark_target", file)
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    target = getattr(module, entry)()
    fn, args, kwargs = target["fn"], target["inputs"][0], target.get("kwargs", {})
    mark("build")
    with torch.no_grad():
        fn(*args, **kwargs)
    mark("eager")
    compiled = torch.compile(fn, backend="aot_eager")
    with torch.no_grad():
        compiled(*args, **kwargs)
    mark("aot_eager")
    return phases


def run_baseline(file: Path, entry: str) -> dict[str, Any]:
    wall, cpu, done = timed([sys.executable, __file__, "--baseline-of", str(file), entry])
    if done.returncode != 0:
        raise SystemExit(f"baseline of {entry} failed:\n{done.stderr[-3000:]}")
    return {"wall": wall, "cpu": cpu, "phases": json.loads(done.stdout.splitlines()[-1])}


def run_trace(file: Path, entry: str) -> dict[str, Any]:
    with tempfile.TemporaryDirectory(prefix="trace-overhead-") as tmp:
        out = Path(tmp) / "report.json"
        command = [str(GRAPHLINT), "trace", str(file), "--entry", entry, "--format", "json", "-o", str(out)]
        wall, cpu, done = timed(command)
        if not out.exists():
            raise SystemExit(f"graphlint trace of {entry} wrote no report (exit {done.returncode}):\n{done.stderr[-3000:]}")
        report = json.loads(out.read_text(encoding="utf-8"))
    stages = {
        row["name"]: {"status": row["status"], "seconds": row.get("seconds", 0.0), "cpu_seconds": row.get("cpu_seconds")}
        for row in report["stages"]
    }
    return {"wall": wall, "cpu": cpu, "exit": done.returncode, "stages": stages, "verdict": report["verdict"]["summary"]}


def median_run(runs: list[dict[str, Any]]) -> dict[str, Any]:
    """The run whose CPU time is the median one (so its stage figures belong together)."""
    ordered = sorted(runs, key=lambda run: run["cpu"])
    return ordered[(len(ordered) - 1) // 2]


def measure(entry: str, repeat: int) -> dict[str, Any]:
    baselines = [run_baseline(TARGETS, entry) for _ in range(repeat)]
    traces = [run_trace(TARGETS, entry) for _ in range(repeat)]
    baseline, trace = median_run(baselines), median_run(traces)
    return {
        "model": entry,
        "baseline": baseline,
        "trace": trace,
        "ratio_wall": statistics.median(t["wall"] for t in traces) / statistics.median(b["wall"] for b in baselines),
        "ratio_cpu": statistics.median(t["cpu"] for t in traces) / statistics.median(b["cpu"] for b in baselines),
        "load": os.getloadavg()[0],
    }


def render(result: dict[str, Any]) -> str:
    baseline, trace = result["baseline"], result["trace"]
    aot_cpu = baseline["phases"]["aot_eager"][1]
    lines = [
        f"{result['model']}: baseline {baseline['wall']:.1f} s / {baseline['cpu']:.1f} cpu-s, "
        f"trace {trace['wall']:.1f} s / {trace['cpu']:.1f} cpu-s; ratio wall {result['ratio_wall']:.2f}, "
        f"cpu {result['ratio_cpu']:.2f}  (load {result['load']:.1f}; {trace['verdict']})",
        "  baseline: " + ", ".join(f"{p} {baseline['phases'][p][0]:.1f} s / {baseline['phases'][p][1]:.1f} cpu-s" for p in BASELINE_PHASES),
    ]
    accounted = 0.0
    for name, stage in trace["stages"].items():
        cpu = stage["cpu_seconds"]
        accounted += cpu or 0.0
        share = f"{cpu / aot_cpu:.2f}× aot_eager" if cpu is not None and aot_cpu > 0 else "-"
        cpu_text = f"{cpu:.1f}" if cpu is not None else "?"
        lines.append(f"  {name:<9} {stage['status']:<12} {stage['seconds']:6.1f} s {cpu_text:>6} cpu-s  {share}")
    rest = trace["cpu"] - accounted
    lines.append(f"  {'rest':<9} {'':<12} {'':>8} {rest:6.1f} cpu-s  {rest / aot_cpu:.2f}× aot_eager")
    return "\n".join(lines)


def main(argv: list[str]) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--models", default=",".join(MODELS), help=f"comma-separated entries of {TARGETS.name}")
    parser.add_argument("--repeat", type=int, default=1, help="runs of each side per model (medians)")
    parser.add_argument("--json", type=Path, help="write the raw figures here")
    parser.add_argument("--baseline-of", nargs=2, metavar=("FILE", "ENTRY"), help=argparse.SUPPRESS)
    args = parser.parse_args(argv)
    if args.baseline_of:
        print(json.dumps(baseline_in_this_process(Path(args.baseline_of[0]), args.baseline_of[1])))
        return 0
    results = []
    for entry in args.models.split(","):
        result = measure(entry.strip(), args.repeat)
        print(render(result), flush=True)
        results.append(result)
    print(
        f"median ratio over {len(results)} models: wall {statistics.median(r['ratio_wall'] for r in results):.2f}, "
        f"cpu {statistics.median(r['ratio_cpu'] for r in results):.2f}"
    )
    if args.json:
        args.json.write_text(json.dumps(results, indent=2), encoding="utf-8")
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
