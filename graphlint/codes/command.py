"""``graphlint explain CODE [--lang en|zh]``. Standard library only at top level."""

from __future__ import annotations

import argparse
import sys
from typing import Any


def register(subparsers: Any) -> None:
    explain = subparsers.add_parser(
        "explain",
        help="print what a code means and what to do about it (rules, GL000/GL001, GL204, GT, GD, TA, GB codes)",
        description=(
            "Print the documentation of any code graphlint prints: a static rule (GL101, or its "
            "slug), GL000/GL001, the trace's GL204, GT…, GD… and TA… codes, and torch's GBxxxx "
            "graph-break codes (from the installed torch's registry, with the graph-break site's link)."
        ),
    )
    explain.add_argument("code", metavar="CODE", help="e.g. GL201, host-device-copy-in-capture, GT005, TA001, GB0170")
    explain.add_argument("--lang", choices=("en", "zh"), default="en", help="language (default: en)")
    explain.set_defaults(handler=run_explain)


def run_explain(args: argparse.Namespace) -> int:
    from graphlint.codes.explain import ExplainError, explain

    try:
        text = explain(args.code, args.lang)
    except ExplainError as exc:
        print(f"graphlint explain: {exc}", file=sys.stderr)
        return 2
    sys.stdout.write(text)
    return 0
