"""Could the copies count read the capture audit's functionalized graphs (issue 19)? Run on
purpose, never in CI.

    python benchmarks/audit_graphs.py                                  # the samples and the 4 tiny models
    python benchmarks/audit_graphs.py samples/copies/*.py              # files with a target
    python benchmarks/audit_graphs.py tests/tracer/targets/transformers_models.py:llama

For each target, in a fresh interpreter: the aot stage's graphs (``aot_eager`` on the CPU, as the
aot stage records them) and the capture audit's (``run_on_audit_device``: the stand-in device,
``.item()`` kept in the graph), the copies counted on each (``count_aten_copies``), whether the
counts and their lines are the same, and the CPU seconds of each compile and of the count.
"""

from __future__ import annotations

import json
import subprocess
import sys
import time
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]
MODELS = REPO / "tests" / "tracer" / "targets" / "transformers_models.py"
DEFAULT = [
    *sorted(str(p) for p in (REPO / "samples" / "copies").glob("*.py")),
    *sorted(str(p) for p in (REPO / "samples" / "capture").glob("*.py")),
    *(str(REPO / "samples" / "trace" / f"{name}.py") for name in (
        "capture_unsafe_copy", "clean", "converter_gap", "data_dependent_branch", "recompile_storm",
        "str_on_symint", "undeclared_mutation",
    )),
    *(f"{MODELS}:{model}" for model in ("gpt2", "llama", "qwen3_moe", "whisper")),
]


def compare(spec: str) -> dict[str, object]:
    """Both graphs of one target (``FILE`` or ``FILE:ENTRY``), in this process."""
    import copy

    import torch

    from graphlint.tracer.capture.fake_device import run_on_audit_device
    from graphlint.tracer.collector import collect_less_often
    from graphlint.tracer.copies.aten import count_aten_copies
    from graphlint.tracer.recording import GraphRecorder, run_compiled
    from graphlint.tracer.target import load_target

    collect_less_often()  # as in the worker
    file, _, entry = spec.partition(".py:")
    target = load_target(file if not entry else f"{file}.py", entry or None)
    recorder, cpu = GraphRecorder(), time.process_time()
    aot_copy = copy.deepcopy(target)
    try:
        with torch.no_grad():
            run_compiled(aot_copy.fn, aot_copy.inputs, aot_copy.kwargs, recorder.aot_eager)
    except Exception:  # noqa: BLE001 - the graphs recorded up to the failure are compared
        pass
    aot_cpu, cpu = time.process_time() - cpu, time.process_time()
    aot = count_aten_copies([g for g in recorder.graphs if g.kind != "dynamo"], target.user_files)
    count_cpu = time.process_time() - cpu
    torch._dynamo.reset()
    cpu = time.process_time()
    with torch.no_grad():
        run = run_on_audit_device(copy.deepcopy(target))
    audit_cpu = time.process_time() - cpu
    audit = count_aten_copies(run.graphs, target.user_files)

    def lines(counted: dict) -> list:
        return sorted((l["file"] or "", l["line"] or 0, l["op"], l["count"]) for g in counted["graphs"] for l in g["lines"])

    return {
        "target": spec.replace(str(REPO) + "/", ""),
        "same_counts": (aot["ops"], aot["total_ops"]) == (audit["ops"], audit["total_ops"]),
        "same_lines": lines(aot) == lines(audit),
        "aot": {"graphs": len(aot["graphs"]), "ops": aot["total_ops"], "copies": aot["ops"]},
        "audit": {"graphs": len(audit["graphs"]), "ops": audit["total_ops"], "copies": audit["ops"]},
        "cpu_s": {"aot_compile": round(aot_cpu, 2), "count": round(count_cpu, 3), "audit_compile": round(audit_cpu, 2)},
    }


def main(argv: list[str]) -> int:
    if argv[:1] == ["--one"]:
        print(json.dumps(compare(argv[1])))
        return 0
    for spec in argv or DEFAULT:
        done = subprocess.run([sys.executable, __file__, "--one", spec], capture_output=True, text=True)
        if done.returncode != 0:
            print(f"{spec}: failed\n{done.stderr[-2000:]}")
            continue
        row = json.loads(done.stdout.splitlines()[-1])
        same = "same" if row["same_counts"] and row["same_lines"] else "DIFFERENT"
        print(f"{row['target']}: {same}; aot {row['aot']}; audit {row['audit']}; cpu-s {row['cpu_s']}", flush=True)
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
