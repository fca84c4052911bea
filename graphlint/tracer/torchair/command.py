"""``graphlint torchair fetch`` and ``graphlint ops``. Standard library only at top level."""

from __future__ import annotations

import argparse
import sys
from typing import Any

from graphlint.options import add_color, add_output, add_target, add_torchair, console, step

# `table` is the old spelling of `text`, kept working.
OPS_FORMATS = ("text", "csv", "json", "table")


def register(subparsers: Any) -> None:
    torchair = subparsers.add_parser("torchair", help="manage the torchair sources graphlint runs offline")
    actions = torchair.add_subparsers(dest="torchair_command", metavar="ACTION")
    fetch = actions.add_parser(
        "fetch",
        help="download (pip, no install) the torch_npu wheel that pairs with this torch into graphlint's cache",
    )
    fetch.add_argument(
        "--version",
        help="exactly this torch_npu release (default: the newest that pairs with the torch, see --torch)",
    )
    fetch.add_argument(
        "--torch",
        metavar="VERSION",
        dest="torch_version",
        help="pair with this torch version (default: the installed torch's): the newest torch_npu "
        "of the same X.Y.Z (.postN included), else of the same X.Y",
    )
    fetch.set_defaults(handler=run_fetch)
    torchair.set_defaults(handler=lambda args: (torchair.print_help(sys.stderr), 2)[1])

    ops = subparsers.add_parser(
        "ops",
        help="torchair's op support table: for a target's graphs, or the whole converter registry",
        description="Like torchair's fx_summary, without an NPU, and with the user line of each op.",
    )
    add_target(ops, optional=True)
    ops.add_argument("--entry", help="the callable in TARGET that returns (fn, args)")
    ops.add_argument("--format", choices=OPS_FORMATS, default="text", help="text (default; `table` is the same), csv or json")
    add_torchair(ops)
    add_output(ops, "the table")
    add_color(ops)
    ops.set_defaults(handler=run_ops)


def run_fetch(args: argparse.Namespace) -> int:
    from importlib.metadata import PackageNotFoundError, version

    from graphlint.tracer.torchair.fetch import FetchError, fetch_for_torch, fetch_wheel

    torch_version = args.torch_version
    if args.version is None and torch_version is None:
        try:
            torch_version = version("torch")
        except PackageNotFoundError:
            print("graphlint: torch is not installed; pass --torch VERSION or --version", file=sys.stderr)
            return 2
    try:
        source = fetch_wheel(args.version) if args.version else fetch_for_torch(torch_version)
    except FetchError as exc:
        print(f"graphlint: {exc}", file=sys.stderr)
        return 1
    print(source.path)
    return 0


def run_ops(args: argparse.Namespace) -> int:
    from graphlint.tracer.command import bad_torchair_option
    from graphlint.tracer.torchair.locate import locate_torch_npu
    from graphlint.tracer.torchair.ops_table import REGISTRY_COLUMNS, TARGET_COLUMNS, render, target_rows
    from graphlint.tracer.torchair.registry import registry_rows, scan_registry

    if bad_torchair_option("ops", args.torchair):
        return 2
    source = locate_torch_npu(args.torchair)
    if source is None:
        from graphlint.tracer.stages.torchair import NOT_FOUND

        print(f"graphlint: {NOT_FOUND}", file=sys.stderr)
        return 2
    fmt = "text" if args.format == "table" else args.format
    progress = console(args.color, stderr=True)
    with step(progress, f"reading torchair's converters from {source.describe()}…"):
        registry = scan_registry(source)
    if args.target is None:
        text = render(registry_rows(registry), REGISTRY_COLUMNS, fmt)
    else:
        try:
            with step(progress, f"tracing {args.target} (dynamo and AOTAutograd)…"):
                graphs, user_files = _forward_graphs(args.target, args.entry)
        except Exception as exc:  # noqa: BLE001 - a target that cannot load or compile is a usage error here
            print(f"graphlint ops: cannot trace {args.target}: {type(exc).__name__}: {exc}", file=sys.stderr)
            return 2
        text = render(target_rows(registry, graphs, user_files), TARGET_COLUMNS, fmt)
    if args.output:
        with open(args.output, "w", encoding="utf-8") as out:
            out.write(text)
    else:
        sys.stdout.write(text)
    return 0


def _forward_graphs(spec: str, entry: str | None) -> tuple[list[Any], set[str]]:
    """The target's functionalized forward graphs (AOTAutograd, as torchair receives them)."""
    import torch

    from graphlint.tracer.calls import call_each_input
    from graphlint.tracer.recording import GraphRecorder
    from graphlint.tracer.target import load_target

    target = load_target(spec, entry)
    recorder = GraphRecorder()
    torch._dynamo.reset()
    call_each_input(torch.compile(target.fn, backend=recorder.aot_eager), target, train=False)
    return [g for g in recorder.graphs if g.kind != "dynamo"], target.user_files
