"""``graphlint check``, ``graphlint rules`` and ``graphlint explain``.

Only the standard library at import time: ``graphlint --help`` and the pre-commit hook start
fast, and ``check`` never imports torch.
"""

from __future__ import annotations

import argparse
import sys
from pathlib import Path

EXIT_CLEAN, EXIT_FINDINGS, EXIT_ERROR = 0, 1, 2


def register(subparsers: argparse._SubParsersAction) -> None:
    check = subparsers.add_parser(
        "check",
        help="lint Python files for graph-mode breakage (static; never imports torch)",
        description=(
            "Statically find code that breaks PyTorch graph mode on Ascend: where torch.compile "
            "(torchair, GE graph) and graph capture (aclgraph / npugraph_ex / CUDA graphs) "
            "reach, and what in there will fail. Exit status: 0 no findings (info notices such as "
            "GL001 do not count), 1 findings, 2 usage or internal error."
        ),
    )
    check.add_argument("paths", nargs="*", type=Path, metavar="PATH", help="files or directories (default: .)")
    check.add_argument(
        "--format", choices=("text", "json", "sarif", "github"), default="text",
        help="output: text (default; code frame and region chain), json, sarif (2.1.0), github (workflow annotations)",
    )
    check.add_argument("--select", action="append", default=[], metavar="CODES",
                       help="report only these codes or prefixes, comma-separated (e.g. GL2,GL101); replaces [tool.graphlint] select")
    check.add_argument("--ignore", action="append", default=[], metavar="CODES",
                       help="do not report these codes or prefixes, comma-separated; adds to [tool.graphlint] ignore")
    check.add_argument("-j", "--jobs", type=int, default=0, metavar="N",
                       help="processes that parse files (default: all cores; small inputs run in one)")
    check.add_argument("--extra-path", action="append", default=[], type=Path, metavar="DIR",
                       help="code outside the project that runs it (a host framework): read for regions, never reported; repeatable")
    check.add_argument("--no-cache", action="store_true",
                       help="neither read nor write the facts cache")
    check.add_argument("--cache-dir", type=Path, default=None, metavar="DIR",
                       help="facts cache directory (default: $GRAPHLINT_CACHE_DIR, else .graphlint_cache/ at the project root)")
    check.add_argument("--fix", action="store_true", help="apply safe fixes to the files, then report what is left")
    check.add_argument("--diff", action="store_true", help="print the fixes as a unified diff; change nothing")
    check.add_argument("--unsafe-fixes", action="store_true",
                       help="with --fix/--diff, also apply unsafe fixes (e.g. removing a nested @torch.compile)")
    check.set_defaults(handler=run_check_command)

    rules = subparsers.add_parser("rules", help="list the static rules", description="List every rule: code, slug, severity, summary.")
    rules.add_argument("--format", choices=("text", "json", "markdown"), default="text",
                       help="text table (default), json, or markdown (the source of docs/rules.md)")
    rules.set_defaults(handler=run_rules_command)

    explain = subparsers.add_parser("explain", help="print the documentation of one rule",
                                    description="Print what a rule checks, why, and how to fix it.")
    explain.add_argument("code", metavar="CODE", help="rule code or slug, e.g. GL201 or host-device-copy-in-capture")
    explain.set_defaults(handler=run_explain_command)


def _codes(values: list[str]) -> tuple[str, ...]:
    return tuple(code.strip().upper() for value in values for code in value.split(",") if code.strip())


def run_check_command(args: argparse.Namespace) -> int:
    from graphlint.checks.engine import CheckOptions, run_check
    from graphlint.checks.report import writer
    from graphlint.config import ConfigError

    # A path that does not exist is named, and the others are still checked (exit status 2).
    missing = [path for path in args.paths if not path.exists()]
    for path in missing:
        print(f"graphlint check: {path}: no such file or directory", file=sys.stderr)
    paths = [path for path in args.paths if path.exists()]
    if missing and not paths:
        return EXIT_ERROR
    if args.jobs < 0:
        print("graphlint check: -j must be 0 (all cores) or more", file=sys.stderr)
        return EXIT_ERROR
    options = CheckOptions(
        paths=paths,
        select=_codes(args.select),
        ignore=_codes(args.ignore),
        jobs=args.jobs,
        use_cache=not args.no_cache,
        cache_dir=args.cache_dir,
        extra_paths=tuple(args.extra_path),
    )
    try:
        result = run_check(options)
        if args.fix or args.diff:
            from graphlint.checks.fix import plan_fixes, write_fixes

            fixes = plan_fixes(result.findings, unsafe=args.unsafe_fixes)
            if args.diff:
                for fix in fixes:
                    sys.stdout.write(fix.diff())
                return EXIT_FINDINGS if fixes else EXIT_CLEAN
            write_fixes(fixes)
            if fixes:
                print(f"graphlint: fixed {sum(f.fixed for f in fixes)} finding(s) in {len(fixes)} file(s)", file=sys.stderr)
                result = run_check(options)
    except ConfigError as exc:
        print(f"graphlint check: {exc}", file=sys.stderr)
        return EXIT_ERROR
    writer(args.format)(result, sys.stdout)
    if result.internal_errors:
        print(f"graphlint check: internal error on {result.internal_errors} file(s) (GL000); please report it", file=sys.stderr)
        return EXIT_ERROR
    if missing:
        return EXIT_ERROR
    return EXIT_FINDINGS if any(f.severity != "info" for f in result.findings) else EXIT_CLEAN


def run_rules_command(args: argparse.Namespace) -> int:
    from graphlint.checks.docs import rules_json, rules_markdown, rules_table

    render = {"text": rules_table, "json": rules_json, "markdown": rules_markdown}[args.format]
    sys.stdout.write(render())
    return EXIT_CLEAN


def run_explain_command(args: argparse.Namespace) -> int:
    from graphlint.checks.docs import explain

    text = explain(args.code)
    if text is None:
        print(f"graphlint explain: no rule {args.code!r}; see `graphlint rules`", file=sys.stderr)
        return EXIT_ERROR
    sys.stdout.write(text)
    return EXIT_CLEAN
