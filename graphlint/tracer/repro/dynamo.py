"""dynamo and model layers: the user's code as source, cut from their files (``source.cut``),
called with inputs made from the recorded metadata; for dynamo compiled with
``backend="eager", fullgraph=True``, so the first graph break raises. Shrunk by removing
statements while the same failure still happens: the same GBxxxx code (dynamo), the same
exception type in the same function (model)."""

from __future__ import annotations

import re
import sys
import tempfile
from collections.abc import Callable
from pathlib import Path
from typing import Any

import libcst as cst

from graphlint.tracer.repro.budget import ShrinkBudget
from graphlint.tracer.repro.dump import DumpError, TraceDump
from graphlint.tracer.repro.signature import Signature
from graphlint.tracer.repro.source import cut, shrink
from graphlint.tracer.repro.writer import ReproParts

Calls = Callable[[], list[tuple[tuple[Any, ...], dict[str, Any]]]]
RECOMPILE_LIMIT_GB_TYPE = "Dynamo recompile limit exceeded"  # the registry's name for it


def failure_signature(layer: str, exc: BaseException, code_file: str) -> Signature:
    """What a repro compares for ``exc``: the GB code of a graph break, the function of the
    repro that raised for a model error."""
    import traceback

    import torch._dynamo.exc as dynamo_exc

    from graphlint.tracer.classify.graph_break import graph_break_code
    from graphlint.tracer.classify.unwrap import real_cause

    if layer == "model":
        frames = [f.name for f in traceback.extract_tb(exc.__traceback__) if f.filename == code_file]
        return Signature("model", type(exc).__name__, frames[-1] if frames else None)
    limit_hit = getattr(dynamo_exc, "FailOnRecompileLimitHit", None)
    if limit_hit is not None and isinstance(exc, limit_hit):
        return Signature("dynamo", type(exc).__name__, graph_break_code("", RECOMPILE_LIMIT_GB_TYPE))
    if isinstance(exc, dynamo_exc.Unsupported):
        return Signature("dynamo", type(exc).__name__, graph_break_code(str(exc), getattr(exc, "gb_type", None)))
    return Signature("dynamo", type(real_cause(exc)).__name__)


def reproduce(build: Callable[[], Any], calls: Calls, layer: str) -> Signature | None:
    """The repro's check: ``build()`` called (dynamo: compiled, fullgraph) with each call's inputs."""
    import torch

    torch._dynamo.reset()
    try:
        fn = build()
        run = fn if layer == "model" else torch.compile(fn, backend="eager", fullgraph=True)
        with torch.no_grad():
            for args, kwargs in calls():
                torch.manual_seed(0)
                run(*args, **kwargs)
    except Exception as exc:  # noqa: BLE001 - what the repro looks for
        return failure_signature(layer, exc, build.__code__.co_filename)
    finally:
        torch._dynamo.reset()
    return None


def _value_code(meta: dict[str, Any]) -> str:
    if "tensor" in meta:
        t = meta["tensor"]
        return f"rand_strided({tuple(t['shape'])}, {tuple(t['stride'])}, {t['dtype']})"
    if "value" in meta:
        return repr(meta["value"])
    raise DumpError(f"an input of type {meta.get('unsupported')} cannot be made from metadata")


def calls_code(target: dict[str, Any], count: int | None = None) -> str:
    """``calls()``: the inputs of the first ``count`` calls (all by default)."""
    lines = ["def calls():  # each call's inputs: random values of the recorded shape, strides, dtype", "    return ["]
    for call in target["calls"][:count]:
        args = "".join(f"{_value_code(a)}, " for a in call["args"])
        kwargs = ", ".join(f"{k!r}: {_value_code(v)}" for k, v in call["kwargs"].items())
        lines.append(f"        (({args}), {{{kwargs}}}),")
    return "\n".join([*lines, "    ]"])


def build_code(target: dict[str, Any], definitions: str) -> str:
    callable_ = target["callable"]
    qualname = callable_["qualname"]
    if callable_["kind"] == "function":
        return f"def build():\n    return {qualname}"
    _require_plain_constructor(definitions, qualname)
    mode = ".eval()" if callable_.get("training") is False else ""
    return f"def build():\n    return {qualname}(){mode}"


def _require_plain_constructor(definitions: str, qualname: str) -> None:
    """A repro builds the target's class with no arguments (the values it was built with are not recorded)."""
    for statement in cst.parse_module(definitions).body:
        if isinstance(statement, cst.ClassDef) and statement.name.value == qualname.split(".")[0]:
            for item in statement.body.body:
                if isinstance(item, cst.FunctionDef) and item.name.value == "__init__":
                    required = [p.name.value for p in item.params.params[1:] if p.default is None]
                    required += [p.name.value for p in item.params.kwonly_params if p.default is None]
                    if required:
                        raise DumpError(
                            f"{qualname}.__init__ needs {', '.join(required)}: a repro builds the target with "
                            "no arguments; give them defaults, or trace a function that builds it"
                        )


def _program(definitions: str, build: str, calls: str) -> str:
    return "\n".join(["from torch._dynamo.testing import rand_strided", definitions, "", build, "", calls, ""])


def _check_code(code: str, layer: str) -> Signature | None:
    """Run one candidate program in this process, from a file (dynamo reads its source lines)."""
    with tempfile.NamedTemporaryFile("w", suffix=".py", prefix="graphlint_repro_", delete=False) as handle:
        handle.write(code)
    path = Path(handle.name)
    try:
        namespace: dict[str, Any] = {"__name__": "graphlint_repro_candidate", "__file__": str(path)}
        try:
            exec(compile(code, str(path), "exec"), namespace)  # noqa: S102 - the user's own code, as the trace ran it
        except Exception as exc:  # noqa: BLE001 - a candidate that no longer defines what it needs
            return Signature(layer, type(exc).__name__, "<module>")
        return reproduce(namespace["build"], namespace["calls"], layer)
    finally:
        path.unlink(missing_ok=True)
        sys.modules.pop("graphlint_repro_candidate", None)


def _fewest_calls(target: dict[str, Any], fails: Callable[[str], bool]) -> int:
    """The shortest prefix of the calls that still fails (more calls fail at least as often:
    a recompile needs the calls before it), by bisection."""
    low, high = 1, len(target["calls"])
    while low < high:
        middle = (low + high) // 2
        if fails(calls_code(target, middle)):
            high = middle
        else:
            low = middle + 1
    return high


def _matches(observed: Signature | None, layer: str, failure: dict[str, Any]) -> bool:
    if observed is None or observed.layer != layer:
        return False
    code = failure.get("code") or ""
    if code.startswith("GB"):
        return observed.where == code
    return observed.kind == failure.get("details", {}).get("exception")


def make(dump: TraceDump, failure: dict[str, Any] | None, budget: ShrinkBudget) -> ReproParts:
    target = dump.json("target.json")
    layer = (failure or {}).get("layer") or ("model" if dump.stage_status("eager") == "failed" else "dynamo")
    file = target["callable"]["file"]
    if not file or not Path(file).is_file():
        raise DumpError(f"the source of {target['callable']['qualname']} is not at hand ({file})")
    source = cut(Path(file), [target["callable"]["qualname"].split(".")[0]], set(target["user_files"]))
    definitions = source.code()
    build, calls = build_code(target, definitions), calls_code(target)
    expected = None
    if failure is not None:
        observed = _check_code(_program(definitions, build, calls), layer)
        if not _matches(observed, layer, failure):
            raise DumpError(f"the cut source gives {observed or 'no failure'}, not the trace's {failure.get('code')}")
        expected = observed
        fewest = _fewest_calls(target, budget.bound(lambda c: _check_code(_program(definitions, build, c), layer) == expected))
        calls = calls_code(target, fewest)
        definitions = shrink(definitions, budget.bound(lambda code: _check_code(_program(code, build, calls), layer) == expected))
    compiled = "compiled with backend='eager', fullgraph=True" if layer == "dynamo" else "run eagerly"
    return ReproParts(
        layer=layer,
        what=f"{target['callable']['qualname']} from {target['name']}, {compiled}",
        expected=expected,
        imports=["from torch._dynamo.testing import rand_strided"],
        body="\n".join([re.sub(r"\n{3,}", "\n\n\n", definitions.strip("\n")), "", "", build, "", "", calls]),
        check=f"from graphlint.tracer.repro.dynamo import reproduce\nobserved = reproduce(build, calls, {layer!r})",
    )
