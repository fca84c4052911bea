"""`graphlint repro TARGET [-o FILE] [--layer LAYER] [--from DUMP]`.

Only the standard library at top level; the handler imports the tracer (and torch) when it runs.
"""

from __future__ import annotations

import argparse
import dataclasses
import importlib
import importlib.util
import sys
import tempfile
from pathlib import Path
from typing import Any

from graphlint.options import add_target, add_torchair
from graphlint.tracer.repro.budget import DEFAULT_SHRINK_SECONDS

# Layer → the module that makes its repro (``make(dump, failure) -> ReproParts``).
LAYER_MODULES: dict[str, str] = {
    "model": "graphlint.tracer.repro.dynamo",
    "dynamo": "graphlint.tracer.repro.dynamo",
    "aot": "graphlint.tracer.repro.aot",
    "accuracy": "graphlint.tracer.repro.aot",
    "torchair": "graphlint.tracer.repro.torchair",
    "capture": "graphlint.tracer.repro.capture",
}


def register(subparsers: argparse._SubParsersAction) -> None:
    repro = subparsers.add_parser(
        "repro",
        help="write one standalone script that reproduces the first failure of a layer (exit 1 while it fails)",
        description=(
            "Write one Python file that reproduces the first failure of LAYER (default: the trace's "
            "verdict) with no file of the project: the FX graph (torchair, aot, accuracy, capture) or the "
            "user's function (dynamo, model), inputs made from their metadata, shrunk to what still fails "
            "the same way. It exits 1 while the failure is there and 0 once it is gone (a bisect script)."
        ),
    )
    add_target(repro)
    repro.add_argument(
        "-o", "--output", type=Path, metavar="FILE", default=Path("repro.py"), help="the file to write (default: repro.py)"
    )
    repro.add_argument("--layer", choices=tuple(LAYER_MODULES), help="the layer to reproduce (default: the verdict's)")
    repro.add_argument(
        "--from", dest="from_dump", type=Path, metavar="DUMP",
        help="the --dump folder of an earlier `graphlint trace TARGET`: its stages are not run again",
    )
    repro.add_argument(
        "--shrink-seconds", type=_seconds, metavar="S", default=DEFAULT_SHRINK_SECONDS,
        help=(
            f"how long shrinking may take (default: {DEFAULT_SHRINK_SECONDS:g}); past it the repro is "
            "the smallest found so far and says so; 0: not shrunk"
        ),
    )
    add_torchair(repro)
    repro.set_defaults(handler=run_repro)


def _seconds(text: str) -> float:
    try:
        value = float(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"not a number of seconds: {text!r}") from None
    if not value >= 0:  # also refuses nan
        raise argparse.ArgumentTypeError(f"not a number of seconds: {text!r}")
    return value


def run_repro(args: argparse.Namespace) -> int:
    if importlib.util.find_spec("torch") is None:
        from graphlint.tracer.command import MISSING_TORCH

        print(MISSING_TORCH.format(command="repro"), file=sys.stderr)
        return 2
    from graphlint.tracer.repro.dump import DumpError, TraceDump, trace_into
    from graphlint.tracer.target import TargetError

    try:
        if args.from_dump is not None:
            dump = TraceDump.read(args.from_dump)
            return _write(dump, args)
        with tempfile.TemporaryDirectory(prefix="graphlint-repro-") as folder:
            dump = trace_into(args.target, Path(folder), args.layer, args.torchair)
            return _write(dump, args)
    except (DumpError, TargetError) as exc:
        print(f"graphlint repro: {exc}", file=sys.stderr)
        return 2


def _write(dump: Any, args: argparse.Namespace) -> int:
    from graphlint.tracer.repro.budget import ShrinkBudget
    from graphlint.tracer.repro.writer import render

    layer = args.layer or (dump.report.get("verdict") or {}).get("layer")
    if layer is None:
        print("graphlint repro: every stage passed; name the layer to write a repro of (--layer)", file=sys.stderr)
        return 2
    if layer not in LAYER_MODULES:
        print(f"graphlint repro: no repro for the {layer} layer (layers: {', '.join(LAYER_MODULES)})", file=sys.stderr)
        return 2
    failure = dump.layer_failure(layer)
    budget = ShrinkBudget(args.shrink_seconds)
    parts = importlib.import_module(LAYER_MODULES[layer]).make(dump, failure, budget)
    if budget.note():
        parts = dataclasses.replace(parts, note="\n".join(filter(None, (parts.note, budget.note()))))
        print(f"graphlint repro: {budget.note()}", file=sys.stderr)
    text = render(parts, dump.report, failure)
    args.output.write_text(text, encoding="utf-8")
    lines = text.count("\n")
    print(f"wrote {args.output} ({lines} lines): {parts.expected or f'{layer} passed; the repro exits 0 while it does'}")
    return 0
