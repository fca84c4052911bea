"""Reach and findings of ``graphlint`` on a serving tree (vLLM, vllm-ascend, sglang). Run on purpose.

    python benchmarks/serving_reach.py vllm /path/to/vllm-checkout          # the tree holding vllm/
    python benchmarks/serving_reach.py vllm_ascend /path/to/copy [--extra-path /path/to/vllm-checkout]
    python benchmarks/serving_reach.py sglang /path/to/sglang/python        # the tree holding sglang/

Runs ``graphlint regions --format json`` and then ``graphlint check --format json`` on the
package, with one facts cache (``--cache-dir``, default a fresh temporary one: a cold run), and
prints the figure #13 asks for:

- ``vllm``: the ``*DecoderLayer`` classes that define ``forward``, and how many of those
  ``forward``s a compiled entry reaches;
- ``vllm_ascend``: the ``forward_oot`` methods, and how many a capture entry reaches;
- ``sglang``: the ``forward`` of every class a module exports as ``EntryClass``, and how many a
  capture entry reaches.

Then every region finding (one per line: ``path:line code severity``), the wall and CPU seconds
of each run, and whether the value flow stopped at its budget (``summary.notice``). ``--misses``
lists the targets not reached; ``--json FILE`` writes everything.
"""

from __future__ import annotations

import argparse
import ast
import json
import sys
import tempfile
from pathlib import Path

from trace_overhead import timed  # benchmarks/ is on sys.path when a script here runs

PACKAGES = {"vllm": "vllm", "vllm_ascend": "vllm_ascend", "sglang": "sglang/srt"}


def dotted(package_root: Path, path: Path) -> str:
    relative = path.relative_to(package_root).with_suffix("")
    parts = list(relative.parts)
    if parts[-1] == "__init__":
        parts.pop()
    return ".".join(parts)


def classes_defining(tree: ast.Module, method: str) -> list[str]:
    return [
        node.name
        for node in tree.body
        if isinstance(node, ast.ClassDef)
        and any(isinstance(item, (ast.FunctionDef, ast.AsyncFunctionDef)) and item.name == method for item in node.body)
    ]


def entry_class_names(tree: ast.Module) -> list[str]:
    """What ``EntryClass = X`` or ``EntryClass = [X, Y]`` names at module level."""
    names: list[str] = []
    for node in tree.body:
        if isinstance(node, ast.Assign) and any(isinstance(t, ast.Name) and t.id == "EntryClass" for t in node.targets):
            values = node.value.elts if isinstance(node.value, (ast.List, ast.Tuple)) else [node.value]
            names += [v.id for v in values if isinstance(v, ast.Name)]
    return names


def targets(framework: str, import_root: Path) -> tuple[str, list[str]]:
    """The reach goal's kind and the dotted methods it counts."""
    package = import_root / PACKAGES[framework]
    found: list[str] = []
    for path in sorted(package.rglob("*.py")):
        try:
            tree = ast.parse(path.read_text(encoding="utf-8"))
        except (SyntaxError, UnicodeDecodeError):
            continue
        module = dotted(import_root, path)
        if framework == "vllm":
            found += [f"{module}.{c}.forward" for c in classes_defining(tree, "forward") if c.endswith("DecoderLayer")]
        elif framework == "vllm_ascend":
            found += [f"{module}.{c}.forward_oot" for c in classes_defining(tree, "forward_oot")]
        else:
            local = set(classes_defining(tree, "forward"))
            found += [f"{module}.{c}.forward" for c in entry_class_names(tree) if c in local]
    return ("compiled" if framework == "vllm" else "capture"), found


def run(command: list[str], cwd: Path) -> tuple[dict, float, float]:
    """The JSON ``command`` prints, with its wall and CPU seconds."""
    wall, cpu, done = timed(command, cwd=cwd)
    if done.returncode not in (0, 1):
        sys.exit(f"{' '.join(command)} exited {done.returncode}:\n{done.stderr[-4000:]}")
    return json.loads(done.stdout), wall, cpu


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("framework", choices=sorted(PACKAGES))
    parser.add_argument("import_root", type=Path, help="the directory that holds the package")
    parser.add_argument("--extra-path", action="append", default=[], metavar="DIR")
    parser.add_argument("--cache-dir", type=Path, help="facts cache (default: a fresh one, a cold run)")
    parser.add_argument("-j", "--jobs", type=int, default=2)
    parser.add_argument("--misses", action="store_true", help="list the targets not reached")
    parser.add_argument("--json", type=Path, metavar="FILE", help="write reach, findings and times here")
    args = parser.parse_args()

    import_root = args.import_root.resolve()
    package = PACKAGES[args.framework]
    kind, wanted = targets(args.framework, import_root)
    cache = args.cache_dir or Path(tempfile.mkdtemp(prefix="graphlint-reach-"))
    common = ["-j", str(args.jobs), "--cache-dir", str(cache), "--format", "json"]
    common += [f"--extra-path={p}" for p in args.extra_path]
    graphlint = [sys.executable, "-m", "graphlint"]

    regions, regions_wall, regions_cpu = run(graphlint + ["regions", package, *common], import_root)
    reached = {f for entry in regions["entries"] if entry["kind"] == kind for f in entry["functions"]}
    hits = [t for t in wanted if t in reached]
    check, check_wall, check_cpu = run(graphlint + ["check", package, *common], import_root)
    findings = [f for f in check["findings"] if f.get("region") or f["code"] == "GL001"]

    print(f"{args.framework}: {len(hits)}/{len(wanted)} = {len(hits) / max(len(wanted), 1):.0%} in a {kind} region")
    print(f"regions: {regions_wall:.1f} s wall, {regions_cpu:.1f} CPU-s; check: {check_wall:.1f} s wall, {check_cpu:.1f} CPU-s")
    print(f"notice: {check['summary'].get('notice', '-')}")
    print(f"region findings and GL001: {len(findings)} (all findings: {len(check['findings'])})")
    for f in findings:
        chain = " -> ".join(f["region"]["chain"]) if f.get("region") else ""
        print(f"  {f['path']}:{f['line']} {f['code']} {f['severity']}  {chain}")
    if args.misses:
        print("not reached:")
        for t in wanted:
            if t not in reached:
                print(f"  {t}")
    if args.json:
        args.json.write_text(json.dumps({
            "framework": args.framework, "kind": kind, "targets": wanted, "reached": hits,
            "findings": check["findings"], "notice": check["summary"].get("notice"),
            "seconds": {"regions_wall": regions_wall, "regions_cpu": regions_cpu,
                        "check_wall": check_wall, "check_cpu": check_cpu},
        }, indent=1))


if __name__ == "__main__":
    main()
