"""``graphlint copies TARGET``: where graph mode adds copies, per graph and per source line.

Runs the trace ladder up to torchair (eager, dynamo, aot, torchair) and renders the report's
``copies`` field as a table, JSON or a self-contained HTML page; ``--baseline`` compares with an
earlier JSON report and ``--fail-on-increase`` makes growth an exit status of 1, for CI.
Standard library only at top level (the CLI imports every command module).
"""

from __future__ import annotations

import argparse
import contextlib
import importlib.util
import json
import sys
from pathlib import Path
from typing import Any

from graphlint.options import add_color, add_lang, add_output, add_target, add_torchair, console

COPIES_STAGES: tuple[str, ...] = ("eager", "dynamo", "aot", "torchair")
FORMATS: tuple[str, ...] = ("text", "json", "html")


def register(subparsers: argparse._SubParsersAction) -> None:
    parser = subparsers.add_parser(
        "copies",
        help="count the copies graph mode adds (aten and GE), per graph and per source line",
        description=(
            "Count the memory-moving ops graph mode adds: at aten level in the functionalized "
            "AOT graphs (clone, copy_, _to_copy, *_scatter, …) and, where torchair ran, at GE "
            "level (TensorMove, Identity, ViewCopy, Assign, Cast, …), with each one's source line, "
            "share of all ops, and suggestions from known issues."
        ),
    )
    add_target(parser)
    parser.add_argument("script_args", nargs="*", metavar="-- ARGS", help="arguments for a script target")
    parser.add_argument("--entry", metavar="NAME", help="function in TARGET returning (fn, args)")
    parser.add_argument("--train", action="store_true", help="count the backward graphs too")
    parser.add_argument("--format", choices=FORMATS, default="text", help="text (default), json, or html (one self-contained page)")
    add_output(parser)
    parser.add_argument("--baseline", type=Path, metavar="OLD.json",
                        help="an earlier `--format json` report (or trace report) to compare with")
    parser.add_argument("--fail-on-increase", action="store_true",
                        help="exit 1 when there are more copies (aten or GE) than in --baseline")
    add_torchair(parser)
    parser.add_argument("--timeout", type=float, default=300.0, metavar="SECONDS", help="seconds per stage before it counts as a hang")
    add_lang(parser, "the suggestions")
    add_color(parser)
    parser.set_defaults(handler=run_copies)


def run_copies(args: argparse.Namespace) -> int:
    if args.fail_on_increase and args.baseline is None:
        print("graphlint copies: --fail-on-increase needs --baseline OLD.json", file=sys.stderr)
        return 2
    if importlib.util.find_spec("torch") is None:
        from graphlint.tracer.command import MISSING_TORCH

        print(MISSING_TORCH.format(command="copies"), file=sys.stderr)
        return 2
    from graphlint.tracer.command import bad_torchair_option
    from graphlint.tracer.copies.baseline import BaselineError, compare, load_baseline

    if bad_torchair_option("copies", args.torchair):
        return 2
    try:
        baseline = load_baseline(args.baseline) if args.baseline is not None else None
    except BaselineError as exc:
        print(f"graphlint copies: {exc}", file=sys.stderr)
        return 2
    report = trace(args)
    if report is None:
        return 2
    if report.get("copies") is None:
        summary = (report.get("verdict") or {}).get("summary") or "no stage produced graphs"
        print(f"graphlint copies: nothing counted: {summary}", file=sys.stderr)
        return 1
    copies = {"target": report.get("target", args.target), "stages": report.get("stages", []), **report["copies"]}
    if baseline is not None:
        copies["baseline"] = compare(baseline, copies)
    write(copies, args.format, args.output, args.color)
    return 1 if args.fail_on_increase and copies["baseline"]["grew"] else 0


def trace(args: argparse.Namespace) -> dict[str, Any] | None:
    """The trace report of TARGET over the stages that count copies; None (after saying why)
    when the target cannot be loaded."""
    from graphlint.tracer.ladder import run_ladder
    from graphlint.tracer.report.build import encodable
    from graphlint.tracer.report.text import LiveProgress
    from graphlint.tracer.stages.base import TraceOptions
    from graphlint.tracer.target import TargetError

    options = TraceOptions(
        stages=COPIES_STAGES, train=args.train, timeout=args.timeout, torchair=args.torchair, lang=args.lang
    )
    progress = LiveProgress(console(args.color, stderr=True))  # the stages take 10-25 s: say what runs
    try:
        return encodable(run_ladder(args.target, options, entry=args.entry, script_args=args.script_args, progress=progress))
    except TargetError as exc:
        # The loader words its messages for `graphlint trace`; the user ran `graphlint copies`.
        print(str(exc).replace("graphlint trace", "graphlint copies", 1), file=sys.stderr)
        return None
    finally:
        progress.close()


def write(copies: dict[str, Any], fmt: str, output: Path | None, color: str = "auto") -> None:
    """Render ``copies`` to ``output`` (a file, never coloured) or to stdout."""
    target = output.open("w", encoding="utf-8") if output is not None else contextlib.nullcontext(sys.stdout)
    with target as stream:
        if fmt == "json":
            stream.write(json.dumps(copies, indent=2, ensure_ascii=False) + "\n")
        elif fmt == "html":
            from graphlint.tracer.copies.html import render_html

            stream.write(render_html(copies))
        else:
            from graphlint.tracer.copies.text import write_text

            write_text(copies, stream, color if output is None else "never")
