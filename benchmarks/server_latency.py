"""Per-edit latency of ``graphlint server`` on a real large tree. Run on purpose, never in CI.

    python benchmarks/server_latency.py                    # the whole transformers models/ tree
    python benchmarks/server_latency.py --glob 'b*'        # models/b* only
    python benchmarks/server_latency.py --debounce 0       # the check alone, no debounce wait
    python benchmarks/server_latency.py --edit value       # edits that change what flows where

Copies the chosen ``transformers/models/`` directories into a scratch project (with a
``pyproject.toml`` at its top, so the whole copy is one project, as in a repository), fills the
facts cache with ``graphlint check`` (the cold row), then starts ``graphlint server`` under a real
LSP client (pygls's, as in ``tests/server``), opens ``--files`` modeling files spread over the
tree and edits each ``--edits`` times (a full-text change that adds a line inside the file, so
that every edit is walked again and the whole project linked again). ``--edit constant`` (the
default) adds ``EDIT_n = n``: no assignment fact changes, so the solved call graph is used again
(``graph_cache.py``); ``--edit value`` adds ``EDIT_n = int(n)``, a call (each edit in place of
the last one's: a change, solved again in full); ``--edit append`` adds the same calls at the
file's end (each edit one more line), ``--edit insert`` in its middle (every call after them is
numbered anew), both of which the server may extend the kept solve by (``incremental_solve.py``,
``renumber.py``); ``--edit change`` changes what flows on a line the file had when opened, one
more line each edit (``x = y`` to ``x = x``, ``x = f(y)`` to ``x = f(x)``), which the server may
re-derive in the kept solve (``rederive.py``). The latency of an edit is
the time from sending ``didChange`` to receiving the diagnostics published for that version;
it includes ``--debounce``. Also printed: the time to the first diagnostics after ``didOpen``
(the first one loads the whole project from the cache) and the server's resident memory.
The server solves the value flow ahead once the first diagnostics are out (``graph_cache.py``);
``--wait-solve-ahead`` waits for it (timing hovers meanwhile) before the first edit.
"""

from __future__ import annotations

import argparse
import asyncio
import keyword
import os
import platform
import re
import statistics
import sys
import tempfile
import time
from collections.abc import Sequence
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(REPO))

from benchmarks.check_throughput import copy_models, count_lines, python_files, timed_command  # noqa: E402
from tests.server.client import GRAPHLINT, Editor  # noqa: E402


def spread(files: Sequence[Path], count: int, offset: int = 0) -> list[Path]:
    """``count`` files evenly spaced through ``files`` (sorted by path): small and large ones;
    ``offset``: from that file on (another sample)."""
    ordered = sorted(files)
    step = max(len(ordered) // max(count, 1), 1)
    return ordered[offset::step][:count]


EDITS = {"constant": "EDIT_{0} = {0}\n", "value": "EDIT_{0} = int({0})\n", "append": "EDIT_{0} = int({0})\n",
         "insert": "EDIT_{0} = int({0})\n", "change": ""}
# ``change``: lines in a function that assign a name (``x = y``) or a call of one (``x = f(y, ...)``)
NAME_VALUE = re.compile(r"^(\s+)(\w+) = (\w+)$")
CALL_ARGUMENT = re.compile(r"^(\s+)(\w+) = ([\w.]+)\(([A-Za-z_]\w*)([,)].*)$")


def changed_line(line: str) -> str | None:
    """``line`` (an assignment in a function) with what flows changed: the value, or the call's
    first argument, replaced by the assigned name (``x = y`` → ``x = x``); None: not such a line."""
    found = NAME_VALUE.match(line)
    if found and found[2] != found[3] and not keyword.iskeyword(found[3]):
        return f"{found[1]}{found[2]} = {found[2]}"
    found = CALL_ARGUMENT.match(line)
    if found and found[2] != found[4]:
        return f"{found[1]}{found[2]} = {found[3]}({found[2]}{found[5]}"
    return None


def in_function(lines: list[str], index: int) -> bool:
    """Whether line ``index`` is in a function's body (not a class body's or the module's)."""
    indent = len(lines[index]) - len(lines[index].lstrip())
    for line in reversed(lines[:index]):
        stripped = line.lstrip()
        if stripped and not stripped.startswith("#") and len(line) - len(stripped) < indent:
            if stripped.startswith(("def ", "async def ", "class ")):
                return not stripped.startswith("class ")
            indent = len(line) - len(stripped)
    return False


def changed(text: str, edit: int, edits: int) -> str:
    """The text with ``edit`` of ``edits`` lines it had changed (``changed_line``), spread over
    the file: each edit changes one more line that was in the file when it was opened."""
    lines = text.split("\n")
    candidates = [i for i, line in enumerate(lines) if changed_line(line) is not None and in_function(lines, i)]
    step = max(len(candidates) // max(edits, 1), 1)
    for index in candidates[::step][:edit]:
        lines[index] = changed_line(lines[index]) or lines[index]
    return "\n".join(lines)


def edited(text: str, edit: int, kind: str = "constant") -> str:
    """The text with one more line in its middle, at a line break outside any bracket (a
    blank line between two top-level statements), so that the file still parses; ``append``:
    edits 1 to ``edit`` at the file's end, one more line each, as typing at the end does."""
    if kind == "append":
        return text.rstrip("\n") + "\n\n\n" + "".join(EDITS[kind].format(n) for n in range(1, edit + 1))
    lines = text.splitlines(keepends=True)
    middle = len(lines) // 2
    # ``insert``: edits 1 to ``edit`` there, one more line each, as typing in the middle does
    line = "".join(EDITS[kind].format(n) for n in range(1, edit + 1)) if kind == "insert" else EDITS[kind].format(edit)
    for index in range(middle, len(lines)):
        if lines[index].strip() == "" and index + 1 < len(lines) and not lines[index + 1][:1].isspace():
            return "".join([*lines[: index + 1], line, *lines[index + 1 :]])
    return text + "\n" + line


def cpu_seconds(pid: int | None) -> float:
    """User + system CPU seconds the process has used (0 where /proc is not there)."""
    try:
        fields = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()
        return (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")
    except (OSError, ValueError, IndexError):
        return 0.0


def rss_mib(pid: int) -> float | None:
    try:
        for line in Path(f"/proc/{pid}/status").read_text().splitlines():
            if line.startswith("VmRSS:"):
                return int(line.split()[1]) / 1024
    except OSError:
        pass
    return None


async def solved_ahead(editor: Editor, path: Path, timeout: float) -> None:
    """Wait until the server logs that the value flow it solved ahead is kept, hovering over
    ``path`` meanwhile: how long the server's thread answers while the solve runs beside it."""
    started, hovers = time.perf_counter(), []
    while not any(line.startswith(("value flow solved ahead", "value flow solved in full")) for line in editor.logs):
        if time.perf_counter() - started > timeout:
            print(f"no solve ahead within {timeout:.0f} s")
            return
        asked = time.perf_counter()
        await editor.hover(path, 0, 0)
        hovers.append(time.perf_counter() - asked)
        await asyncio.sleep(0.5)
    print(f"solved ahead {time.perf_counter() - started:.1f} s after the last open; hovers meanwhile: {len(hovers)}, "
          f"median {statistics.median(hovers) * 1000:.0f} ms, max {max(hovers) * 1000:.0f} ms" if hovers else "")


async def measure(
    root: Path, cache: Path, files: list[Path], edits: int, debounce: float, jobs: int, kind: str, timeout: float = 120,
    server_args: Sequence[str] = (), wait_ahead: bool = False,
) -> None:
    async with Editor(root, "--cache-dir", str(cache), "--debounce", str(debounce), "-j", str(jobs), *server_args) as editor:
        opened: list[float] = []
        for path in files:
            started = time.perf_counter()
            editor.open(path)
            await editor.diagnostics(path, version=1, timeout=600)
            opened.append(time.perf_counter() - started)
        print(f"open: first {opened[0] * 1000:.0f} ms (loads the project), then median "
              f"{statistics.median(opened[1:]) * 1000:.0f} ms over {len(opened) - 1} files" if len(opened) > 1 else "")
        pid = editor.client._server.pid if editor.client._server else None  # type: ignore[attr-defined]
        if pid:
            print(f"server resident memory after the opens: {rss_mib(pid):.0f} MiB")
        if wait_ahead:
            await solved_ahead(editor, files[0], timeout)
            if pid:
                print(f"server resident memory with the solve ahead kept: {rss_mib(pid):.0f} MiB")
        latencies: list[float] = []
        spent: list[float] = []  # the server's CPU seconds per edit
        for path in files:
            text = path.read_text(encoding="utf-8")
            if kind == "change" and changed(text, edits, edits) == changed(text, edits - 1, edits):
                print(f"  {path.name}: fewer than {edits} lines to change: its last edits change nothing new")
            for edit in range(1, edits + 1):
                started, cpu_before = time.perf_counter(), cpu_seconds(pid)
                version = editor.change(path, changed(text, edit, edits) if kind == "change" else edited(text, edit, kind))
                await editor.diagnostics(path, version=version, timeout=timeout)
                latencies.append(time.perf_counter() - started)
                spent.append(cpu_seconds(pid) - cpu_before)
                solved = [line for line in editor.logs if line.startswith("value flow")]
                print(f"  {path.name} edit {edit}: {latencies[-1] * 1000:.0f} ms, server {spent[-1] * 1000:.0f} CPU-ms; "
                      f"{'; '.join(solved)}", flush=True)
                editor.logs.clear()
        cpu = sum(spent) / len(spent)
        latencies.sort()
        memory = rss_mib(pid) if pid else None
        print(f"{kind} edits: {len(latencies)}, median {statistics.median(latencies) * 1000:.0f} ms, "
              f"p90 {latencies[int(len(latencies) * 0.9)] * 1000:.0f} ms, max {latencies[-1] * 1000:.0f} ms, "
              f"min {latencies[0] * 1000:.0f} ms (debounce {debounce * 1000:.0f} ms included); "
              f"server CPU {cpu * 1000:.0f} ms per edit (median {statistics.median(spent) * 1000:.0f}); "
              f"load average {os.getloadavg()[0]:.1f}")
        if memory is not None:
            print(f"server resident memory: {memory:.0f} MiB")


def main(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--glob", default="*", help="models/ subdirectories (default '*': the whole models/ tree)")
    parser.add_argument("--files", type=int, default=20, help="modeling files opened and edited (default 20)")
    parser.add_argument("--edits", type=int, default=5, help="edits per file (default 5)")
    parser.add_argument("--offset", type=int, default=0,
                        help="the files edited are spread through the tree from this modeling file on (default 0)")
    parser.add_argument("--debounce", type=float, action="append",
                        help="the server's debounce in seconds, one run each (default: 0.05, its own default, and 0)")
    parser.add_argument("--edit", choices=sorted(EDITS), default="constant",
                        help="what each edit adds: a constant (no assignment fact changes), a call in the middle, "
                             "calls appended at the end or inserted in the middle; or changes: one more existing "
                             "assignment's value or call argument per edit (default constant)")
    parser.add_argument("--timeout", type=float, default=120,
                        help="seconds an edit's diagnostics may take (default 120; a full solve at a high load takes longer)")
    parser.add_argument("--warm-runs", type=int, default=0, help="warm `graphlint check` runs after the fill (default 0)")
    parser.add_argument("-j", "--jobs", type=int, default=2, help="processes for the cold fill of the cache (default 2)")
    parser.add_argument("--cache-dir", type=Path, help="reuse this facts cache (filled if needed) instead of a fresh one")
    parser.add_argument("--wait-solve-ahead", action="store_true",
                        help="before the first edit, wait until the server logs that it solved the value flow ahead "
                             "(hovering meanwhile, timed); default: edit at once")
    parser.add_argument("--server-arg", action="append", default=[], metavar="ARG",
                        help="an argument for `graphlint server` (repeat), e.g. --server-arg=--no-solve-ahead")
    args = parser.parse_args(argv)
    with tempfile.TemporaryDirectory() as scratch:
        tree = Path(scratch) / "models"
        copy_models(args.glob, tree)
        (tree / "pyproject.toml").write_text("[tool.graphlint]\n", encoding="utf-8")
        files = python_files([tree])
        print(f"models/{args.glob}: {len(files)} files, {count_lines(files):,} lines; "
              f"{platform.machine()}, {os.cpu_count()} cores, Python {platform.python_version()}")
        cache = args.cache_dir or Path(scratch) / "cache"
        wall, cpu, result = timed_command([GRAPHLINT, "check", "--format", "json", "-j", str(args.jobs),
                                           "--cache-dir", cache, tree])
        print(f"graphlint check (fills the cache): {wall:.1f} s, {cpu:.1f} cpu-s, exit {result.returncode}; "
              f"load average {os.getloadavg()[0]:.1f}")
        for _ in range(args.warm_runs):
            wall, cpu, result = timed_command([GRAPHLINT, "check", "--format", "json", "--cache-dir", cache, tree])
            print(f"graphlint check (warm): {wall:.2f} s, {cpu:.2f} cpu-s, exit {result.returncode}; "
                  f"load average {os.getloadavg()[0]:.1f}")
        modeling = [f for f in files if f.name.startswith("modeling_")] or files
        chosen = spread(modeling, args.files, args.offset)
        sizes = sorted(count_lines([f]) for f in chosen)
        print(f"edited files: {len(chosen)}, {sizes[0]}–{sizes[-1]} lines (median {statistics.median(sizes):.0f})")
        for debounce in args.debounce or [0.05, 0.0]:
            asyncio.run(measure(tree, cache, chosen, args.edits, debounce, args.jobs, args.edit, args.timeout,
                                args.server_arg, args.wait_solve_ahead))
    return 0


if __name__ == "__main__":
    sys.exit(main())
