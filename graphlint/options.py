"""The options every command spells the same way, and what they mean for output.

One vocabulary: ``TARGET`` (a Python file or module:factory), ``--format`` (``text`` is the
terminal's form everywhere), ``-o/--output FILE``, ``--dump DIR``, ``--torchair PATH``,
``--color``, ``--lang``. Standard library only at top level (rich is imported when a console is
made): ``graphlint --help`` and ``check`` start fast.
"""

from __future__ import annotations

import argparse
import os
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import IO, Any

COLORS = ("auto", "always", "never")
ENVIRONMENT_HELP = (
    "environment: GRAPHLINT_HOME (graphlint's cache: the torch_npu wheel of `graphlint torchair fetch`, "
    "unpacked torchair sources; default ~/.cache/graphlint), GRAPHLINT_TORCHAIR (a torch_npu wheel or folder, "
    "as --torchair), GRAPHLINT_CACHE_DIR (check's facts cache; default .graphlint_cache/ at the project root), "
    "NO_COLOR (no colour unless --color always)"
)


class HelpFormatter(argparse.HelpFormatter):
    """Every option's help ends with its default, unless it says it already or has none."""

    def _get_help_string(self, action: argparse.Action) -> str:
        text = action.help or ""
        if "default" in text or action.default in (None, False, [], argparse.SUPPRESS) or not action.option_strings:
            return text
        return f"{text} (default: %(default)s)"


class Parser(argparse.ArgumentParser):
    """graphlint's parsers: defaults in --help, and the environment named at the end of it."""

    def __init__(self, *args: Any, **kwargs: Any) -> None:
        kwargs.setdefault("formatter_class", HelpFormatter)
        kwargs.setdefault("epilog", ENVIRONMENT_HELP)
        super().__init__(*args, **kwargs)


def add_target(parser: argparse.ArgumentParser, optional: bool = False) -> None:
    parser.add_argument(
        "target", metavar="TARGET", nargs="?" if optional else None,
        help="a Python file (graphlint_target(), model + example_inputs, or a script) or module:factory",
    )


def add_output(parser: argparse.ArgumentParser, what: str = "the report") -> None:
    parser.add_argument("-o", "--output", type=Path, metavar="FILE", help=f"write {what} to FILE instead of stdout")


def add_torchair(parser: argparse.ArgumentParser) -> None:
    parser.add_argument(
        "--torchair", metavar="PATH",
        help="a torch_npu wheel, unpacked wheel, site-packages or torch_npu folder to take torchair from "
        "(default: $GRAPHLINT_TORCHAIR, else an installed torch_npu, else the wheel that `graphlint torchair "
        "fetch` put in $GRAPHLINT_HOME/wheels, ~/.cache/graphlint/wheels by default)",
    )


def add_color(parser: argparse.ArgumentParser) -> None:
    parser.add_argument(
        "--color", choices=COLORS, default="auto",
        help="colour the text output: auto (default: on a terminal, unless NO_COLOR is set), always, never",
    )


def add_lang(parser: argparse.ArgumentParser, what: str) -> None:
    parser.add_argument("--lang", choices=("en", "zh"), default="en", help=f"language of {what}")


def wants_color(color: str, stream: IO[str]) -> bool:
    """``--color``: always and never are what they say; auto is a terminal without NO_COLOR."""
    if color != "auto":
        return color == "always"
    return not os.environ.get("NO_COLOR") and bool(getattr(stream, "isatty", lambda: False)())


def console(color: str = "auto", file: IO[str] | None = None, stderr: bool = False, **options: Any) -> Any:
    """A rich Console for ``--color``; on a stream that is not a terminal it never wraps at 80
    columns when told a width (CI logs are read in browsers)."""
    import sys

    from rich.console import Console

    stream = file or (sys.stderr if stderr else sys.stdout)
    colored = wants_color(color, stream)
    return Console(
        file=stream, force_terminal=True if color == "always" else None, no_color=not colored,
        color_system="auto" if colored else None, highlight=False, **options,
    )


@contextmanager
def step(progress: Any, message: str) -> Iterator[None]:
    """One step of a long command, on ``progress`` (a stderr console): live on a terminal, a
    line in a log."""
    if progress.is_terminal:
        with progress.status(message):
            yield
    else:
        progress.print(message, soft_wrap=True)
        yield
