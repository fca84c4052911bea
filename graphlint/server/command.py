"""``graphlint server``: registered with the standard library only; pygls is imported when it runs."""

from __future__ import annotations

import argparse
import sys
from pathlib import Path

EXIT_ERROR = 2


def register(subparsers: argparse._SubParsersAction) -> None:
    server = subparsers.add_parser(
        "server",
        help="the static check as a Language Server over stdio (editors; needs graphlint[lsp])",
        description=(
            "Serve `graphlint check` to an editor over the Language Server Protocol on stdin/stdout: "
            "diagnostics (with the region chain) on open, change and save, quick fixes, and the "
            "rule's documentation on hover. Reads [tool.graphlint] like `graphlint check`. "
            "Editor setup: docs/editors.md. The client's initializationOptions may set debounce, "
            "unsafeFixes, solveAhead, select and ignore too."
        ),
    )
    server.add_argument("--debounce", type=float, default=0.05, metavar="SECONDS",
                        help="seconds after the last change before unsaved text is checked (default 0.05)")
    server.add_argument("--unsafe-fixes", action="store_true", help="offer unsafe fixes as code actions too")
    server.add_argument("--select", action="append", default=[], metavar="CODES",
                        help="report only these codes or prefixes, comma-separated; replaces [tool.graphlint] select")
    server.add_argument("--ignore", action="append", default=[], metavar="CODES",
                        help="do not report these codes or prefixes, comma-separated; adds to [tool.graphlint] ignore")
    server.add_argument("--no-solve-ahead", action="store_true",
                        help="do not solve the value flow ahead on another thread once diagnostics are out: "
                             "saves the kept solve's memory (about 2 GB on transformers' models/) until an edit "
                             "changes what flows, which then solves the project in full")
    server.add_argument("--no-cache", action="store_true", help="neither read nor write the facts cache")
    server.add_argument("--cache-dir", type=Path, default=None, metavar="DIR",
                        help="facts cache directory (default: $GRAPHLINT_CACHE_DIR, else .graphlint_cache/ at the project root)")
    server.add_argument("-j", "--jobs", type=int, default=0, metavar="N",
                        help="processes that parse files not in the cache when a project is first opened (default: all cores)")
    server.set_defaults(handler=run_server_command)


def run_server_command(args: argparse.Namespace) -> int:
    try:
        import pygls  # noqa: F401
    except ImportError:
        print("graphlint server needs pygls: pip install 'graphlint[lsp]'", file=sys.stderr)
        return EXIT_ERROR
    if args.debounce < 0 or args.jobs < 0:
        print("graphlint server: --debounce and -j must be 0 or more", file=sys.stderr)
        return EXIT_ERROR
    from graphlint.checks.command import codes
    from graphlint.server.protocol import ServerOptions, build_server

    options = ServerOptions(
        debounce=args.debounce,
        unsafe_fixes=args.unsafe_fixes,
        select=codes(args.select),
        ignore=codes(args.ignore),
        use_cache=not args.no_cache,
        cache_dir=args.cache_dir,
        jobs=args.jobs,
        solve_ahead=not args.no_solve_ahead,
    )
    build_server(options).start_io()
    return 0
