"""`graphlint trace` (the stage ladder) and `graphlint env` (the environment facts).

Only the standard library at top level: the handlers import the tracer (and, in its worker,
torch) when they run.
"""

from __future__ import annotations

import argparse
import importlib.util
import json
import sys
from pathlib import Path
from typing import Any

from graphlint.options import add_color, add_lang, add_output, add_target, add_torchair, console
from graphlint.tracer.stages import STAGE_ORDER as STAGE_NAMES

MISSING_TORCH = (
    "graphlint {command}: torch is not installed. The tracer needs the `trace` extra: "
    "pip install 'graphlint[trace]' (or install the torch that pairs with your torch_npu)."
)


def register(subparsers: argparse._SubParsersAction) -> None:
    trace = subparsers.add_parser(
        "trace",
        help="run a model through eager, dynamo, aot_eager, torchair and capture; name the failing layer",
        description=(
            "Run TARGET (a Python file or module:factory) through the stage ladder eager → dynamo → "
            "aot → torchair → capture and report the first failing layer, the user's line and what "
            "people do about it. A script runs as __main__ with torch.compile intercepted: "
            "graphlint trace train.py -- ARGS."
        ),
    )
    add_target(trace)
    # REMAINDER, so that a script's own options reach it; trace options given after TARGET are
    # taken back out of it in run_trace (everything before "--").
    trace.add_argument("script_args", nargs=argparse.REMAINDER, metavar="-- ARGS", help="arguments of a script target")
    trace.add_argument("--entry", help="the function in TARGET that returns (fn, args) (default: graphlint_target)")
    trace.add_argument(
        "--stages", default=",".join(STAGE_NAMES), type=_stage_list,
        help=f"comma-separated stages to run (default: {','.join(STAGE_NAMES)})",
    )
    trace.add_argument("--train", action="store_true", help="run backward too (default: under torch.no_grad())")
    trace.add_argument("--timeout", type=float, default=300.0, help="seconds per stage before it counts as a hang")
    trace.add_argument(
        "--memory-limit", type=float, metavar="GB",
        help="let the target map at most GB of address space (RLIMIT_AS) beyond what torch's import maps: "
        "a target that allocates past it gets an oom finding",
    )
    trace.add_argument(
        "--nproc", type=int, metavar="N",
        help="run every stage on N ranks of a torch.distributed job (torchrun; gloo on CPU) and merge their "
        "reports: divergent graphs, collectives and versions, and the first rank that hung or died",
    )
    trace.add_argument(
        "--format", choices=("text", "json", "html"), default="text",
        help="text (default; the stage table, the verdict and each finding with its code frame), json "
        "(the report object), html (one self-contained page)",
    )
    add_output(trace)
    trace.add_argument(
        "--dump", type=Path, metavar="DIR",
        help="write the FX / aot / GE graphs, depyf's decompiled code, report.json, report.html and a small "
        "site (index.html, a page per graph) into DIR",
    )
    add_lang(trace, "the hints")
    add_color(trace)
    add_torchair(trace)
    trace.add_argument("--baseline", type=Path, metavar="OLD.json", help="compare with an earlier report")
    trace.add_argument(
        "--fail-on-increase", action="store_true",
        help="with --baseline: exit 1 when graphs, graph breaks, recompiles or findings grew, else 0",
    )
    trace.add_argument(
        "--capture-limit", type=_positive_int, default=64, metavar="N",
        help="graph captures a guarded engine makes before it runs eagerly (torchair's npugraph_ex "
        "capture_limit); more than N in the capture stage's replay check is a recapture-limit finding "
        "(default: 64)",
    )
    trace.add_argument(
        "--strict", action="store_true",
        help="exit 1 when a stage is inconclusive (it ran but could not do its check), as for a failure; "
        "for CI. Default: inconclusive stages are reported and do not change the exit status",
    )
    trace.set_defaults(handler=run_trace, trace_parser=trace)

    env = subparsers.add_parser("env", help="print Python, torch, torch_npu, torchair, CANN and device facts")
    env.add_argument("--format", choices=("text", "json"), default="text", help="text (default) or json")
    add_output(env, "the facts")
    add_torchair(env)
    env.set_defaults(handler=run_env)


def _stage_list(text: str) -> tuple[str, ...]:
    names = tuple(n.strip() for n in text.split(",") if n.strip())
    unknown = [n for n in names if n not in STAGE_NAMES]
    if unknown or not names:
        raise argparse.ArgumentTypeError(f"unknown stage(s) {', '.join(unknown)}; stages are {', '.join(STAGE_NAMES)}")
    return names


def _positive_int(text: str) -> int:
    try:
        value = int(text)
    except ValueError:
        value = 0
    if value < 1:
        raise argparse.ArgumentTypeError(f"{text!r} is not a whole number of at least 1")
    return value


def _options_after_target(args: argparse.Namespace) -> argparse.Namespace:
    """``trace TARGET --format json -- --steps 3``: options between TARGET and ``--`` are the
    trace's, the rest the script's."""
    rest = list(args.script_args)
    own, script = (rest[: rest.index("--")], rest[rest.index("--") + 1 :]) if "--" in rest else (rest, [])
    if own:
        args = args.trace_parser.parse_args([*own, args.target], namespace=args)
    args.script_args = script
    return args


def run_trace(args: argparse.Namespace) -> int:
    args = _options_after_target(args)
    if importlib.util.find_spec("torch") is None:
        print(MISSING_TORCH.format(command="trace"), file=sys.stderr)
        return 2
    if args.nproc is not None and args.nproc < 1:
        print("graphlint trace: --nproc needs at least 1 process", file=sys.stderr)
        return 2
    if args.fail_on_increase and args.baseline is None:
        print("graphlint trace: --fail-on-increase needs --baseline OLD.json", file=sys.stderr)
        return 2
    if bad_torchair_option("trace", args.torchair):
        return 2
    if args.dump is not None:
        try:  # now, not after the ladder: a folder that cannot be written must not cost the trace
            args.dump.mkdir(parents=True, exist_ok=True)
        except OSError as exc:
            print(f"graphlint trace: cannot write --dump {args.dump}: {exc.strerror}", file=sys.stderr)
            return 2
    from graphlint.tracer.distributed.job import rank_of_job
    from graphlint.tracer.distributed.launch import launch_job
    from graphlint.tracer.distributed.rank_run import run_rank
    from graphlint.tracer.ladder import run_ladder
    from graphlint.tracer.report.baseline import compare_with_baseline, load_baseline
    from graphlint.tracer.report.build import encodable, exit_status, unloaded_report
    from graphlint.tracer.report.text import LiveProgress, print_report
    from graphlint.tracer.stages.base import TraceOptions
    from graphlint.tracer.target import TargetError

    baseline = None
    if args.baseline is not None:
        try:
            baseline = load_baseline(args.baseline)
        except ValueError as exc:
            print(f"graphlint trace: {exc}", file=sys.stderr)
            return 2
    options = TraceOptions(
        stages=args.stages, train=args.train, timeout=args.timeout,
        dump_dir=args.dump.resolve() if args.dump else None, torchair=args.torchair, lang=args.lang,
        memory_limit_gb=args.memory_limit, capture_limit=args.capture_limit,
    )
    # A rank of a distributed job (under torchrun) runs its ladder and rank 0 merges the ranks'.
    rank = rank_of_job()
    progress = LiveProgress(console(args.color, stderr=True)) if rank is None and args.nproc is None else None
    try:
        if args.nproc is not None:
            report = launch_job(args, args.nproc)
        elif rank is not None:
            report = run_rank(rank, args.target, options, args.entry, args.script_args)
            if report is None:  # not rank 0: this rank's report is part of rank 0's
                return 0
        else:
            report = run_ladder(args.target, options, args.entry, args.script_args, progress)
    except TargetError as exc:
        print(str(exc), file=sys.stderr)
        if exc.finding is None:  # nothing of the user's ran: a usage error, no report
            return 2
        report = unloaded_report(args.target, exc.finding, options)
    finally:
        if progress is not None:
            progress.close()
    report = encodable(report)
    # A target that did not load is still exit status 2, with its report written.
    unloaded = any(f["kind"] == "load-error" for f in report["findings"])
    status = 2 if unloaded else exit_status(report, strict=args.strict)
    if baseline is not None and not unloaded:
        report["baseline"] = compare_with_baseline(baseline, report)
        if args.fail_on_increase:  # a budget: what the baseline already had is tolerated
            status = 1 if report["baseline"]["increases"] else 0
    if args.dump is not None:
        _write_dump(args.dump, report)
    if args.format == "text" and args.output is None:
        print_report(report, console(args.color))
    elif args.format == "text":
        with args.output.open("w", encoding="utf-8") as stream:
            print_report(report, console("never", file=stream))
    else:
        _write_text(_rendered(report, args.format), args.output)
    return status


def _rendered(report: dict[str, Any], fmt: str) -> str:
    if fmt == "html":
        from graphlint.tracer.report.html import render_html

        return render_html(report)
    return json.dumps(report, indent=2, ensure_ascii=False) + "\n"


def _write_text(text: str, output: Path | None) -> None:
    if output is None:
        sys.stdout.write(text)
    else:
        output.write_text(text, encoding="utf-8")


def _write_dump(folder: Path, report: dict[str, Any]) -> None:
    from graphlint.tracer.report.html import write_site

    folder.mkdir(parents=True, exist_ok=True)
    (folder / "report.json").write_text(json.dumps(report, indent=2, ensure_ascii=False), encoding="utf-8")
    write_site(report, folder)


def bad_torchair_option(command: str, path: str | None) -> bool:
    """Say so (one line) when --torchair / GRAPHLINT_TORCHAIR names no torchair."""
    from graphlint.tracer.torchair.locate import torchair_option_error

    problem = torchair_option_error(path)
    if problem is not None:
        print(f"graphlint {command}: {problem}", file=sys.stderr)
    return problem is not None


def run_env(args: argparse.Namespace) -> int:
    from graphlint.tracer.env import environment_facts, format_environment

    if bad_torchair_option("env", args.torchair):
        return 2

    facts = environment_facts(args.torchair)
    text = json.dumps(facts, indent=2) if args.format == "json" else format_environment(facts)
    _write_text(text + "\n", args.output)
    return 0
