"""FX graphs in a repro: loaded from a dump's runnable code, shrunk with torch's FX minifier,
and written back as code (``graphlint.tracer.dump.runnable_graph_code``)."""

from __future__ import annotations

import contextlib
import io
import itertools
import linecache
import logging
import re
import warnings
from collections.abc import Callable, Sequence
from typing import Any

import torch

from graphlint.tracer.dump import GRAPH_CODE_IMPORTS, runnable_graph_code
from graphlint.tracer.repro.budget import ShrinkBudget
from graphlint.tracer.repro.signature import Signature
from graphlint.tracer.repro.writer import ReproParts

__all__ = ["GRAPH_CODE_IMPORTS", "graph_inputs", "graph_repro", "load_graph", "runnable_graph_code", "shrink_graph"]


def graph_inputs(load_args: Callable[[Any], None], seed: int = 0) -> list[Any]:
    """Inputs of the recorded metadata with random values (torch's ``InputReader``)."""
    from torch._dynamo.debug_utils import InputReader

    torch.manual_seed(seed)
    logging.getLogger("torch._dynamo.debug_utils").setLevel(logging.ERROR)  # "no save_dir": intended
    with warnings.catch_warnings():
        warnings.filterwarnings("ignore", message="could not load None")
        reader = InputReader()
        load_args(reader)
    return reader.args


def load_graph(code: str) -> tuple[torch.nn.Module, list[Any]]:
    """The ``Repro`` module and inputs of a runnable graph's code. The code stays readable under
    its own name in ``linecache``, so that the custom ops it defines can be cut from it again
    when the shrunk graph is written."""
    name = f"<graphlint graph {next(_LOADED)}>"
    linecache.cache[name] = (len(code), None, code.splitlines(keepends=True), name)
    namespace: dict[str, Any] = {"__name__": name}
    exec(compile(code, name, "exec"), namespace)  # noqa: S102 - code graphlint wrote from a traced graph
    return namespace["Repro"](), graph_inputs(namespace["load_args"])


_LOADED = itertools.count(1)


def as_graph_module(module: torch.nn.Module) -> torch.fx.GraphModule:
    return module if isinstance(module, torch.fx.GraphModule) else torch.fx.symbolic_trace(module)


def shrink_graph(
    module: torch.nn.Module,
    inputs: Sequence[Any],
    fails: Callable[[torch.fx.GraphModule, Sequence[Any]], bool],
    budget: ShrinkBudget,
) -> tuple[torch.fx.GraphModule, list[Any]]:
    """The fewest nodes for which ``fails`` still holds (torch's ``fx_minifier``: truncating the
    suffix, delta debugging, consolidating inputs), within ``budget``. ``fails`` must hold for
    ``module`` itself."""
    from torch._functorch.fx_minifier import minifier

    if not budget.left():  # the minifier's first check would refuse the graph
        return as_graph_module(module), list(inputs)
    with contextlib.redirect_stderr(io.StringIO()):  # the minifier narrates every step
        gm, inps = minifier(as_graph_module(module), list(inputs), budget.bound(fails), dump_state=lambda *_: None)
    return gm, list(inps)


def graph_lines(gm: torch.fx.GraphModule, inputs: Sequence[Any]) -> str:
    """The graph and its input metadata as code, for the repro file."""
    code = runnable_graph_code(gm, list(inputs)).replace("\n".join(GRAPH_CODE_IMPORTS) + "\n", "")
    return re.sub(r"\n{3,}", "\n\n", code)


def graph_repro(
    layer: str,
    what: str,
    expected: Signature | None,
    module: torch.nn.Module,
    inputs: Sequence[Any],
    checker: str,
    *,
    check_args: str = "",
    body_suffix: str = "",
    note: str = "",
) -> ReproParts:
    """The parts of a repro whose body is one FX graph and its inputs, checked by
    ``checker.reproduce(Repro(), inputs, *check_args)`` (``checker``: a module's dotted name)."""
    return ReproParts(
        layer=layer,
        what=what,
        expected=expected,
        imports=list(GRAPH_CODE_IMPORTS),
        body=graph_lines(as_graph_module(module), inputs) + body_suffix,
        check=(
            f"from {checker} import reproduce\n"
            "from graphlint.tracer.repro.graphs import graph_inputs\n"
            f"observed = reproduce(Repro(), graph_inputs(load_args){check_args})"
        ),
        note=note,
    )
