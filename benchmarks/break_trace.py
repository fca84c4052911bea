"""``break_corpus.py --trace``: do ``graphlint trace``'s dynamo breaks match ``explain`` on a fresh model?

For each model with cached truth, a target file builds the model exactly as the truth did
(``model_builder.build(name, mode)``, same seed) and ``graphlint trace TARGET --stages
eager,dynamo --format json`` runs it (``--train`` for a model whose truth ran in train mode: grad
enabled, as the truth's forward was). The eager stage runs first, so this measures whether the
dynamo stage sees the model as a user's first compiled call would.

A break line is (file, line) of the innermost transformers frame; it *matches* when the trace
has a graph break at that line with one of the truth's GB codes (or neither side names a code).
Lines only the truth has are *missed*, lines only the trace has are *extra*, and a line on both
with different codes is a *code mismatch*.
"""

from __future__ import annotations

import json
import subprocess
import sys
import tempfile
from pathlib import Path
from typing import Any

HERE = Path(__file__).resolve().parent
TRACE_TIMEOUT = 600

TARGET = '''\
import sys
sys.path.insert(0, {here!r})
from model_builder import build


def graphlint_target():
    model, inputs = build({name!r}, {mode!r})
    return {{"fn": model, "inputs": [()], "kwargs": inputs}}
'''


def trace_breaks(name: str, mode: str, package_parent: Path, workdir: Path) -> dict[str, Any]:
    """``{"breaks": {(file, line): [codes]}, "stage": status, "seconds": s}`` of ``graphlint trace``,
    or ``{"error": why}``."""
    target = workdir / f"trace_{name}_{mode}.py"
    target.write_text(TARGET.format(here=str(HERE), name=name, mode=mode))
    report = workdir / f"trace_{name}_{mode}.json"
    command = [
        sys.executable, "-m", "graphlint", "trace", str(target), "--stages", "eager,dynamo",
        "--format", "json", "-o", str(report), "--timeout", str(TRACE_TIMEOUT // 2),
        *(["--train"] if mode == "train" else []),
    ]
    try:
        subprocess.run(command, capture_output=True, text=True, timeout=TRACE_TIMEOUT)
    except subprocess.TimeoutExpired:
        return {"error": f"timed out after {TRACE_TIMEOUT}s"}
    try:
        data = json.loads(report.read_text())
    except (OSError, ValueError) as exc:
        return {"error": f"no report: {exc}"}
    stages = {s["name"]: s for s in data.get("stages", [])}
    breaks: dict[tuple[str, int], list[str]] = {}
    for finding in data.get("findings", []):
        if finding.get("stage") != "dynamo" or finding.get("kind") != "graph-break" or not finding.get("file"):
            continue
        key = (_relative(finding["file"], package_parent), finding["line"])
        codes = breaks.setdefault(key, [])
        if finding.get("code") and finding["code"] not in codes:
            codes.append(finding["code"])
    notes = [f["message"].splitlines()[0] for f in data.get("findings", []) if f.get("kind") == "first-call-state"]
    return {"breaks": breaks, "stage": stages.get("dynamo", {}).get("status"), "notes": notes}


def _relative(path: str, package_parent: Path) -> str:
    try:
        return str(Path(path).resolve().relative_to(package_parent))
    except ValueError:
        return path


def compare(truth_breaks: list[dict[str, Any]], traced: dict[tuple[str, int], list[str]]) -> dict[str, list[str]]:
    """Matched, missed, extra and code-mismatched break lines of one model."""
    truth = {(b["file"], b["line"]): b["codes"] for b in truth_breaks}
    out: dict[str, list[str]] = {"matched": [], "missed": [], "extra": [], "code_mismatch": []}
    for key, codes in truth.items():
        where = f"{key[0]}:{key[1]} {'/'.join(codes) or '-'}"
        if key not in traced:
            out["missed"].append(where)
        elif set(codes) & set(traced[key]) or not (codes or traced[key]):
            out["matched"].append(where)
        else:
            out["code_mismatch"].append(f"{where} (trace: {'/'.join(traced[key]) or '-'})")
    out["extra"] = [f"{f}:{n} {'/'.join(c) or '-'}" for (f, n), c in traced.items() if (f, n) not in truth]
    return out


def run(rows: list[tuple[str, dict[str, Any]]]) -> None:
    """Trace every model with truth and print the table (and each difference)."""
    import transformers

    package_parent = Path(transformers.__file__).resolve().parent.parent
    workdir = Path(tempfile.mkdtemp(prefix="graphlint-break-trace-"))
    print("\n| model | mode | explain break lines | trace matched | missed | extra | code differs |\n|---|---|---|---|---|---|---|")
    totals = [0, 0, 0, 0, 0]
    differences = []
    for name, truth in rows:
        if "error" in truth or not truth["breaks"]:
            continue
        mode = truth.get("mode", "eval")
        traced = trace_breaks(name, mode, package_parent, workdir)
        if "error" in traced:
            print(f"| {name} | {mode} | {len(truth['breaks'])} | {traced['error']} | | | |", flush=True)
            continue
        result = compare(truth["breaks"], traced["breaks"])
        row = [len(truth["breaks"]), *(len(result[k]) for k in ("matched", "missed", "extra", "code_mismatch"))]
        totals = [a + b for a, b in zip(totals, row)]
        print(f"| {name} | {mode} | " + " | ".join(map(str, row)) + " |", flush=True)
        differences += [f"{name} {kind}: {line}" for kind in ("missed", "extra", "code_mismatch") for line in result[kind]]
        differences += [f"{name} note: {note}" for note in traced["notes"]]
    print("| **all** | | " + " | ".join(f"**{t}**" for t in totals) + " |")
    for line in differences:
        print("  ", line)
