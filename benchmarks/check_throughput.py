"""Throughput of ``graphlint check`` on a real large tree. Run on purpose, never in CI.

    python benchmarks/check_throughput.py                         # transformers models/b*
    python benchmarks/check_throughput.py --glob '*'               # the whole models/ tree
    python benchmarks/check_throughput.py --warm-runs 3 --no-floor # cold, then three warm runs
    python benchmarks/check_throughput.py --tools-venv /tmp/benchvenv   # + TorchFix and Fixit rows
    python benchmarks/check_throughput.py --corpora                # stdlib, torch, transformers: every file

Rows, each on the same files: ``graphlint check`` with a cold facts cache (``-j N``, a fresh
``--cache-dir``) and warm (the same cache again); a bare one-process ``libcst.parse_module``
loop, the floor any libcst linter stands on; and, where their executables are found (on PATH or
in ``--tools-venv``: install them in a separate venv, never in graphlint's), ``torchfix`` and
``fixit lint``. Each row gives wall seconds and the CPU seconds it used: on a shared machine
the wall time of one row depends on who else is running, its CPU time much less; each row ends
with the machine's load average.

``--corpora`` lints the three corpora of the ``corpus`` test whole, in place (the test lints a
copy of each), and reports files, lines, seconds, ``GL000`` findings and internal errors;
record the figures in ``benchmarks/README.md``.
"""

from __future__ import annotations

import argparse
import importlib.util
import json
import os
import platform
import resource
import shutil
import subprocess
import sys
import sysconfig
import tempfile
import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from pathlib import Path

GRAPHLINT = Path(sys.executable).with_name("graphlint")


@dataclass
class Row:
    name: str
    wall: float
    cpu: float
    files: int
    lines: int
    note: str = ""
    load: float = field(default_factory=lambda: os.getloadavg()[0])  # the machine's, when the row ends

    def render(self) -> str:
        return (
            f"{self.name:<34} {self.wall:8.2f} s {self.cpu:8.2f} cpu-s "
            f"{self.files / self.wall:8.1f} files/s {self.lines / self.wall:10,.0f} lines/s  load {self.load:4.1f}  {self.note}"
        )


def package_dir(name: str) -> Path:
    spec = importlib.util.find_spec(name)  # found, not imported
    if spec is None or not spec.submodule_search_locations:
        sys.exit(f"{name} is not installed in {sys.prefix}")
    return Path(spec.submodule_search_locations[0])


def python_files(paths: Sequence[Path]) -> list[Path]:
    """The files ``graphlint check PATHS`` lints (its own discovery)."""
    from graphlint.checks.discover import discover
    from graphlint.config import find_project_root, load_config

    root = find_project_root(paths[0])
    return discover(paths, root, load_config(root).exclude)


def count_lines(files: Sequence[Path]) -> int:
    return sum(f.read_bytes().count(b"\n") for f in files)


def timed_command(command: Sequence[str | Path]) -> tuple[float, float, subprocess.CompletedProcess[str]]:
    """Wall and CPU seconds (the command and its children) of one run."""
    before = resource.getrusage(resource.RUSAGE_CHILDREN)
    started = time.perf_counter()
    result = subprocess.run([str(c) for c in command], capture_output=True, text=True)
    wall = time.perf_counter() - started
    after = resource.getrusage(resource.RUSAGE_CHILDREN)
    return wall, (after.ru_utime - before.ru_utime) + (after.ru_stime - before.ru_stime), result


def graphlint_row(name: str, paths: Sequence[Path], files: int, lines: int, options: Sequence[str]) -> Row:
    wall, cpu, result = timed_command([GRAPHLINT, "check", "--format", "json", *options, *paths])
    if result.returncode not in (0, 1):
        return Row(name, wall, cpu, files, lines, f"exit {result.returncode}: {result.stderr.strip()[-300:]}")
    report = json.loads(result.stdout)
    parse_errors = [f for f in report["findings"] if f["code"] == "GL000"]
    internal = [f for f in parse_errors if f["message"].startswith("internal error")]
    note = f"{report['summary']['files']} files, {len(report['findings'])} findings, {len(parse_errors)} GL000, {len(internal)} internal"
    return Row(name, wall, cpu, files, lines, note)


def libcst_floor(files: Sequence[Path], lines: int) -> Row:
    import libcst

    started, cpu_started = time.perf_counter(), time.process_time()
    failed = 0
    for file in files:
        try:
            libcst.parse_module(file.read_bytes())
        except Exception:  # a file libcst cannot read still costs its attempt
            failed += 1
    return Row("libcst.parse_module, 1 process", time.perf_counter() - started,
               time.process_time() - cpu_started, len(files), lines, f"{failed} failed")


def tool_row(name: str, executable: Path | None, arguments: Sequence[str | Path], files: int, lines: int) -> Row | None:
    if executable is None:
        print(f"  ({name}: not found; install it in a separate venv and pass --tools-venv)")
        return None
    wall, cpu, result = timed_command([executable, *arguments])
    output = len(result.stdout.splitlines()) + len(result.stderr.splitlines())
    return Row(name, wall, cpu, files, lines, f"exit {result.returncode}, {output} output lines")


def find_tool(name: str, venv: Path | None) -> Path | None:
    if venv is not None and (venv / "bin" / name).exists():
        return venv / "bin" / name
    found = shutil.which(name)
    return Path(found) if found else None


def copy_models(pattern: str, tree: Path) -> None:
    """The installed transformers' ``models/<pattern>`` directories, copied into ``tree``.
    A plain copy: the installed tree sits in a git-ignored venv, which Fixit skips."""
    models = package_dir("transformers") / "models"
    chosen = [models] if pattern == "*" else sorted(p for p in models.glob(pattern) if p.is_dir())
    for directory in chosen:
        shutil.copytree(directory, tree if directory == models else tree / directory.name,
                        ignore=shutil.ignore_patterns("__pycache__"))


def models_tree(pattern: str, jobs: int, tools_venv: Path | None, warm_runs: int = 1, floor: bool = True) -> None:
    import transformers  # only its version; the sources are what is linted

    with tempfile.TemporaryDirectory() as scratch:
        tree = Path(scratch) / "models"
        copy_models(pattern, tree)
        paths = [tree]
        files = python_files(paths)
        lines = count_lines(files)
        print(f"transformers {transformers.__version__} models/{pattern}: {len(files)} files, {lines:,} lines")
        print(f"machine: {platform.machine()}, {os.cpu_count()} cores, Python {platform.python_version()}")
        cache = Path(scratch) / "cache"
        options = ["-j", str(jobs), "--cache-dir", str(cache)]
        measures: list[Callable[[], Row | None]] = [
            lambda: graphlint_row(f"graphlint check cold, -j {jobs}", paths, len(files), lines, options),
            *[lambda: graphlint_row(f"graphlint check warm, -j {jobs}", paths, len(files), lines, options)] * warm_runs,
            *([lambda: libcst_floor(files, lines)] if floor else []),
            lambda: tool_row("torchfix", find_tool("torchfix", tools_venv), paths, len(files), lines),
            lambda: tool_row("fixit lint", find_tool("fixit", tools_venv), ["lint", *paths], len(files), lines),
        ]
        for measure in measures:
            row = measure()
            if row is not None:
                print(row.render(), flush=True)


def corpora(jobs: int) -> None:
    stdlib = Path(sysconfig.get_paths()["stdlib"])
    trees: dict[str, list[Path]] = {
        "stdlib": sorted(p for p in stdlib.iterdir() if p.name not in {"site-packages", "dist-packages"}
                         and (p.is_dir() or p.suffix == ".py")),
        "torch": [package_dir("torch")],
        "transformers": [package_dir("transformers")],
    }
    for name, paths in trees.items():
        files = python_files(paths)
        row = graphlint_row(f"{name}, -j {jobs}, --no-cache", paths, len(files), count_lines(files),
                            ["-j", str(jobs), "--no-cache"])
        print(row.render(), flush=True)


def main(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--glob", default="b*", help="models/ subdirectories to lint (default b*; '*' = all of models/)")
    parser.add_argument("-j", "--jobs", type=int, default=2, help="graphlint processes (default 2)")
    parser.add_argument("--tools-venv", type=Path, help="a venv with torchfix and fixit installed")
    parser.add_argument("--corpora", action="store_true", help="lint stdlib, torch and transformers whole instead")
    parser.add_argument("--warm-runs", type=int, default=1, help="warm rows, each a run of its own (default 1)")
    parser.add_argument("--no-floor", action="store_true", help="leave out the libcst parse row (minutes on models/)")
    args = parser.parse_args(argv)
    if args.corpora:
        corpora(args.jobs)
    else:
        models_tree(args.glob, args.jobs, args.tools_venv, args.warm_runs, not args.no_floor)
    return 0


if __name__ == "__main__":
    sys.exit(main())
