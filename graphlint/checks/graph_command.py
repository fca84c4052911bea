"""``graphlint callgraph`` and ``graphlint regions``: what the static checker links, shown.

``callgraph`` prints the call graph the link step builds (``--format pycg``: PyCG's JSON,
``{"pkg.mod.func": ["pkg.mod.callee", ...]}``, builtins left out; ``json``: the edges with the
file and line of each call; ``dot``: Graphviz). ``regions`` prints every entry point with the
functions it reaches and the calls in them that could not be resolved (``coverage.py``).
Both take the paths and configuration ``check`` takes. Standard library only at import time.
"""

from __future__ import annotations

import argparse
import json
import sys
from pathlib import Path
from typing import Any

EXIT_OK, EXIT_ERROR = 0, 2


def register(subparsers: argparse._SubParsersAction) -> None:
    callgraph = subparsers.add_parser(
        "callgraph", help="print the call graph the static checker links with",
        description="Print the call graph of the given files, as the static checker links it.",
    )
    _common(callgraph)
    callgraph.add_argument("--format", choices=("pycg", "json", "dot"), default="pycg",
                           help="pycg (default; PyCG's JSON shape), json (edges with file and line), dot (Graphviz)")
    callgraph.set_defaults(handler=run_callgraph_command)
    regions = subparsers.add_parser(
        "regions", help="list the compiled and capture regions and what they reach",
        description=(
            "List every compile and capture entry point: how it was recognised, the functions it "
            "reaches (dotted names), and the calls inside them graphlint could not resolve."
        ),
    )
    _common(regions)
    regions.add_argument("--format", choices=("text", "json"), default="text", help="text (default) or json")
    regions.set_defaults(handler=run_regions_command)


def _common(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("paths", nargs="*", type=Path, metavar="PATH", help="files or directories (default: .)")
    parser.add_argument("--extra-path", action="append", default=[], type=Path, metavar="DIR",
                        help="code outside the project that runs it (a host framework): read, never reported; repeatable")
    parser.add_argument("-j", "--jobs", type=int, default=0, metavar="N", help="processes that parse files (default: all cores)")
    parser.add_argument("--no-cache", action="store_true", help="neither read nor write the facts cache")
    parser.add_argument("--cache-dir", type=Path, default=None, metavar="DIR", help="facts cache directory")


def _link(args: argparse.Namespace, command: str) -> Any:
    from graphlint.checks.engine import CheckOptions, link_paths
    from graphlint.config import ConfigError

    missing = [path for path in [*args.paths, *args.extra_path] if not path.exists()]
    for path in missing:
        print(f"graphlint {command}: {path}: no such file or directory", file=sys.stderr)
    if missing or args.jobs < 0:
        if args.jobs < 0:
            print(f"graphlint {command}: -j must be 0 (all cores) or more", file=sys.stderr)
        return None
    options = CheckOptions(
        paths=args.paths, jobs=args.jobs, use_cache=not args.no_cache, cache_dir=args.cache_dir,
        extra_paths=tuple(args.extra_path),
    )
    try:
        linked = link_paths(options)
    except ConfigError as exc:
        print(f"graphlint {command}: {exc}", file=sys.stderr)
        return None
    notice = linked.project.graph.notice()
    if notice is not None:
        print(f"graphlint {command}: {notice}", file=sys.stderr)
    return linked


def run_callgraph_command(args: argparse.Namespace) -> int:
    from graphlint.checks.callgraph import callgraph_dot, callgraph_edges, callgraph_pycg

    linked = _link(args, "callgraph")
    if linked is None:
        return EXIT_ERROR
    if args.format == "pycg":
        sys.stdout.write(json.dumps(callgraph_pycg(linked.project, linked.targets), indent=2) + "\n")
    elif args.format == "json":
        edges = callgraph_edges(linked.project, linked.targets)
        sys.stdout.write(json.dumps({"version": 1, "edges": edges}, indent=2) + "\n")
    else:
        sys.stdout.write(callgraph_dot(linked.project, linked.targets))
    return EXIT_OK


def run_regions_command(args: argparse.Namespace) -> int:
    from graphlint.checks.coverage import entry_reports, unrun_exports

    linked = _link(args, "regions")
    if linked is None:
        return EXIT_ERROR
    reports = entry_reports(linked.project, linked.regions)
    # the modules no region enters because the platform checked cannot import them → why
    unimportable = {
        linked.project.files[index].display: failing
        for index, failing in sorted(linked.regions.unimportable.items())
        if not linked.project.files[index].library
    }
    if args.format == "json":
        document = {
            "version": 1, "entries": [r.to_json() for r in reports], "unimportable": unimportable,
            "unrun_exports": unrun_exports(linked.project),
            "notice": linked.project.graph.notice(),
        }
        sys.stdout.write(json.dumps(document, indent=2) + "\n")
        return EXIT_OK
    for report in reports:
        if report.replaced:
            print(f"{report.path}:{report.line}: {report.kind} ({report.via}): replaced with a plain call by the "
                  "framework (replaced-entrypoints): no region")
            continue
        if report.held is not None:
            print(f"{report.path}:{report.line}: {report.kind} ({report.via}): not analysed, a capture of {report.held}'s "
                  f"own code: its preset is opt-in (presets = [\"{report.held}\"])")
            continue
        print(f"{report.path}:{report.line}: {report.kind} ({report.via}): {len(report.functions)} function(s), "
              f"{len(report.unresolved)} unresolved call(s)")
        for name in report.functions:
            print(f"    {name}")
        for call in report.unresolved:
            print(f"    unresolved: {call['path']}:{call['line']}: {call['call']}")
    if not reports:
        print("no compile or capture entry points found")
    for path, failing in unimportable.items():
        print(f"{path}: cannot be imported on the platform checked: imports {failing} (unavailable-modules): no region")
    for export in unrun_exports(linked.project):
        print(f"{export['path']}:{export['line']}: {export['class']} is exported, but its forward takes none of the "
              "arguments the framework's runner hands over (export-forward-parameters): no region")
    return EXIT_OK
