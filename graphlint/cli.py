"""The `graphlint` command line.

Each sub-command lives beside the code it drives and registers itself here through a
module-level ``register(subparsers)`` function. Those modules import only the standard library
at top level, so `graphlint check` starts fast and never imports torch; the heavy imports happen
inside the handlers.
"""

from __future__ import annotations

import importlib
import sys
from collections.abc import Sequence

from graphlint import __version__
from graphlint.options import ENVIRONMENT_HELP, Parser

# Order is the order of `graphlint --help`.
COMMAND_MODULES: tuple[str, ...] = (
    "graphlint.checks.command",  # check, rules
    "graphlint.codes.command",  # explain
    "graphlint.checks.graph_command",  # callgraph, regions
    "graphlint.tracer.command",  # trace, env
    "graphlint.tracer.copies.command",  # copies
    "graphlint.tracer.torchair.command",  # torchair fetch, ops
    "graphlint.server.command",  # server
    "graphlint.tracer.repro.command",  # repro
)


def build_parser() -> Parser:
    parser = Parser(
        prog="graphlint",
        description=(
            "Find where PyTorch graph mode breaks on Ascend NPUs: dynamo capture, torchair "
            "translation, or graph capture (aclgraph / npugraph_ex / CUDA graphs)."
        ),
        epilog=f"Run `graphlint COMMAND --help` for the options of one command. {ENVIRONMENT_HELP}",
    )
    parser.add_argument("--version", action="version", version=f"graphlint {__version__}")
    subparsers = parser.add_subparsers(dest="command", metavar="COMMAND", parser_class=Parser)
    for module_name in COMMAND_MODULES:
        importlib.import_module(module_name).register(subparsers)
    return parser


def main(argv: Sequence[str] | None = None) -> int:
    parser = build_parser()
    args = parser.parse_args(argv)
    handler = getattr(args, "handler", None)
    if handler is None:
        parser.print_help(sys.stderr)
        return 2
    try:
        return int(handler(args))
    except KeyboardInterrupt:
        print("graphlint: interrupted", file=sys.stderr)
        return 130
    except BrokenPipeError:
        return 0
