"""Score ``graphlint callgraph --format pycg`` on PyCG's micro-benchmark. Run on purpose.

    python benchmarks/pycg_micro.py                 # download PyCG 0.0.8's sdist once, score every snippet
    python benchmarks/pycg_micro.py --show-misses   # and print each snippet's missing / extra edges

PyCG (Salis et al., ICSE 2021) ships ``micro-benchmark/snippets/<category>/<name>/`` in its
sdist: a small program (``main.py`` and the modules it imports) and the ground-truth
``callgraph.json``. The sdist is fetched with ``pip download --no-deps --no-binary :all:
pycg==0.0.8`` into ``$GRAPHLINT_HOME/pycg/`` (never into the repository) and read from the
archive. Each snippet is copied to a scratch directory and linted whole with ``--no-cache``, its
directory the import root (``src = ["."]``), as PyCG is given it.
Edges are (caller, callee) pairs; edges to builtins (``<builtin>.…``, ``<**PyStr**>.…``) are
left out of both sides, as ``--format pycg`` leaves them out. A snippet is exact when its edge set
equals the ground truth's. Precision and recall are over all edges of all snippets.
"""

from __future__ import annotations

import argparse
import io
import json
import os
import subprocess
import sys
import tarfile
import tempfile
from dataclasses import dataclass, field
from pathlib import Path

PYCG_VERSION = "0.0.8"
SNIPPETS = "micro-benchmark/snippets/"


def graphlint_home() -> Path:
    return Path(os.environ.get("GRAPHLINT_HOME") or Path.home() / ".cache" / "graphlint")


def pycg_sdist(cache: Path | None = None) -> Path:
    """PyCG's sdist in the cache, downloaded by pip when absent."""
    cache = cache or graphlint_home() / "pycg"
    found = sorted(cache.glob(f"pycg-{PYCG_VERSION}.tar.gz"))
    if found:
        return found[0]
    cache.mkdir(parents=True, exist_ok=True)
    subprocess.run(
        [sys.executable, "-m", "pip", "download", "--no-deps", "--no-binary", ":all:", f"pycg=={PYCG_VERSION}", "-d", str(cache)],
        check=True, capture_output=True,
    )
    return sorted(cache.glob(f"pycg-{PYCG_VERSION}.tar.gz"))[0]


@dataclass
class Snippet:
    name: str  # "classes/nested_class_calls"
    files: dict[str, bytes] = field(default_factory=dict)  # path inside the snippet → content
    expected: dict[str, list[str]] = field(default_factory=dict)


def snippets(sdist: Path) -> list[Snippet]:
    found: dict[str, Snippet] = {}
    with tarfile.open(sdist) as archive:
        for member in archive.getmembers():
            _, _, path = member.name.partition("/")
            if not member.isfile() or not path.startswith(SNIPPETS):
                continue
            parts = path[len(SNIPPETS) :].split("/")
            if len(parts) < 3:
                continue
            name, inner = "/".join(parts[:2]), "/".join(parts[2:])
            snippet = found.setdefault(name, Snippet(name))
            data = archive.extractfile(member).read()  # type: ignore[union-attr]
            if inner == "callgraph.json":
                snippet.expected = json.loads(data)
            elif inner.endswith(".py"):
                snippet.files[inner] = data
    return [s for _, s in sorted(found.items()) if s.expected and "main.py" in s.files]


def edges(graph: dict[str, list[str]]) -> set[tuple[str, str]]:
    return {
        (caller, callee)
        for caller, callees in graph.items()
        for callee in callees
        if not callee.startswith("<") and not caller.startswith("<")
    }


def graphlint_callgraph(snippet: Snippet, scratch: Path) -> dict[str, list[str]]:
    root = scratch / snippet.name.replace("/", "__")
    for inner, data in snippet.files.items():
        path = root / inner
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_bytes(data)
    (root / "pyproject.toml").write_text('[tool.graphlint]\nsrc = ["."]\n')  # PyCG's package root
    out = io.StringIO()
    from contextlib import chdir, redirect_stdout

    from graphlint.cli import main

    with chdir(root), redirect_stdout(out):
        status = main(["callgraph", "--no-cache", "-j", "1", "--format", "pycg", "."])
    if status != 0:
        raise RuntimeError(f"{snippet.name}: graphlint callgraph exited {status}")
    return json.loads(out.getvalue())


@dataclass
class Score:
    true_positives: int = 0
    found: int = 0
    expected: int = 0
    exact: int = 0
    snippets: int = 0
    misses: dict[str, tuple[set[tuple[str, str]], set[tuple[str, str]]]] = field(default_factory=dict)

    @property
    def precision(self) -> float:
        return self.true_positives / self.found if self.found else 1.0

    @property
    def recall(self) -> float:
        return self.true_positives / self.expected if self.expected else 1.0


def score(sdist: Path) -> Score:
    result = Score()
    with tempfile.TemporaryDirectory(prefix="graphlint-pycg-") as scratch:
        for snippet in snippets(sdist):
            got, want = edges(graphlint_callgraph(snippet, Path(scratch))), edges(snippet.expected)
            result.snippets += 1
            result.found += len(got)
            result.expected += len(want)
            result.true_positives += len(got & want)
            if got == want:
                result.exact += 1
            else:
                result.misses[snippet.name] = (want - got, got - want)
    return result


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--show-misses", action="store_true", help="print the missing and extra edges of each inexact snippet")
    args = parser.parse_args(argv)
    result = score(pycg_sdist())
    if args.show_misses:
        for name, (missing, extra) in result.misses.items():
            print(f"{name}:")
            for edge in sorted(missing):
                print(f"    missing {edge[0]} -> {edge[1]}")
            for edge in sorted(extra):
                print(f"    extra   {edge[0]} -> {edge[1]}")
    print(
        f"precision {result.precision:.3f}, recall {result.recall:.3f}, "
        f"{result.exact} of {result.snippets} snippets exact "
        f"({result.true_positives} of {result.expected} edges found, {result.found - result.true_positives} wrong)"
    )
    return 0


if __name__ == "__main__":
    sys.exit(main())
