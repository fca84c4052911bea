"""``graphlint check`` and ``graphlint rules`` (``explain`` is in ``graphlint.codes``).

Only the standard library at import time: ``graphlint --help`` and the pre-commit hook start
fast, and ``check`` never imports torch.
"""

from __future__ import annotations

import argparse
import sys
from pathlib import Path

from graphlint.options import add_color, add_lang, add_output

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
        help="output: text (default; code frame and region chain), json (docs/check-json.md), sarif (2.1.0), "
        "github (workflow annotations)",
    )
    add_output(check, "the findings")
    add_color(check)
    add_lang(check, "the text output's summaries (zh adds each rule's Chinese summary)")
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


def codes(values: list[str]) -> tuple[str, ...]:
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
        select=codes(args.select),
        ignore=codes(args.ignore),
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
                before = len(result.findings)
                result = run_check(options)
                # One fix can settle several findings (a host-made tensor moved to the device is
                # both GL201 and GL203): what counts is how many went away.
                gone = before - len(result.findings)
                print(f"graphlint: fixed {gone} finding(s) in {len(fixes)} file(s)", file=sys.stderr)
    except ConfigError as exc:
        print(f"graphlint check: {exc}", file=sys.stderr)
        return EXIT_ERROR
    render = writer(args.format, color=args.color, lang=args.lang)
    if args.output is None:
        render(result, sys.stdout)
    else:
        with args.output.open("w", encoding="utf-8") as out:
            render(result, out)
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
