"""torchair's converter registry, read from its sources without importing them (libcst).

Every ``@register_fx_node_ge_converter(torch.ops.aten.add.Tensor)`` (under any spelling of the
decorator: ``torchair.register_fx_node_ge_converter``, an alias…) registers a converter for one
op. Its status is judged the way torchair's own ``fx_summary`` judges a converter, from the
function's source: ``raise NotImplementedError`` and ``return `` both present → partly
supported, only the raise → not implemented, only returns → implemented. An op of a graph with
no entry is missing.

The scan of a torchair tree is cached in ``$GRAPHLINT_HOME/registry/`` (keyed like the unpacked
sources), since parsing a few hundred converter files takes seconds.
"""

from __future__ import annotations

import json
import os
from collections.abc import Iterable
from dataclasses import asdict, dataclass
from pathlib import Path
from typing import Any, Literal

from graphlint.tracer.torchair.locate import TorchNpuSource

Status = Literal["implemented", "partly", "not implemented", "unknown", "missing"]
STATUSES: tuple[Status, ...] = ("implemented", "partly", "not implemented", "unknown", "missing")
_DECORATOR = "register_fx_node_ge_converter"
_CACHE_FORMAT = 3


@dataclass(frozen=True)
class Converter:
    op: str  # "aten.add.Tensor" for torch.ops.aten.add.Tensor; "operator.add" for builtins
    status: Status
    file: str  # relative to the torchair folder
    line: int


class Registry(dict[str, Converter]):
    """op name → its converter (the last registration wins, as in torchair)."""

    def status_of(self, op: str) -> Status:
        converter = self.get(op)
        return converter.status if converter else "missing"


def scan_registry(source: TorchNpuSource) -> Registry:
    """The registry of ``source``'s torchair, from the cache when it was scanned before."""
    torchair_dir = source.torchair_dir()
    cache = torchair_dir.parent.parent / "registry" / f"{torchair_dir.parent.name}.json"
    if source.kind == "wheel" and cache.is_file():
        data = json.loads(cache.read_text(encoding="utf-8"))
        if data.get("format") == _CACHE_FORMAT:
            return Registry((c["op"], Converter(**c)) for c in data["converters"])
    registry = scan_directory(torchair_dir)
    if source.kind == "wheel":
        cache.parent.mkdir(parents=True, exist_ok=True)
        payload = {"format": _CACHE_FORMAT, "converters": [asdict(c) for c in registry.values()]}
        partial = cache.with_name(f"{cache.name}.{os.getpid()}")
        partial.write_text(json.dumps(payload), encoding="utf-8")
        os.replace(partial, cache)  # atomic: a concurrent reader sees the old file or the new
    return registry


def scan_directory(torchair_dir: Path) -> Registry:
    registry = Registry()
    for path in sorted(torchair_dir.rglob("*.py")):
        text = path.read_text(encoding="utf-8", errors="replace")
        if f"{_DECORATOR}(" not in text:
            continue
        for converter in converters_in(text, path.relative_to(torchair_dir).as_posix()):
            registry[converter.op] = converter
    return registry


def converters_in(text: str, relpath: str) -> list[Converter]:
    """The converters registered in one source file; a file libcst cannot parse has none."""
    import libcst as cst

    try:
        module = cst.parse_module(text)
    except cst.ParserSyntaxError:
        return []
    found: list[Converter] = []
    names = {_DECORATOR}  # and its aliases: ``from torchair import register_fx_node_ge_converter as reg``

    class Visitor(cst.CSTVisitor):
        def visit_ImportAlias(self, node: cst.ImportAlias) -> None:
            if _dotted(node.name).rsplit(".", 1)[-1] == _DECORATOR and node.asname is not None:
                names.add(_dotted(node.asname.name))

        def visit_FunctionDef(self, node: cst.FunctionDef) -> None:
            registered = [(d, op) for d in node.decorators if (op := _registered_op(d.decorator, names))]
            if not registered:
                return
            status = _status(module.code_for_node(node))
            for decorator, op in registered:
                found.append(Converter(op, status, relpath, _line_of(text, module.code_for_node(decorator))))

    module.visit(Visitor())
    return found


def _line_of(text: str, snippet: str) -> int:
    """The line where ``snippet`` (a decorator's code) first appears: the converter's line.
    (libcst's position metadata would cost more than the parse itself on these files.)"""
    offset = text.find(snippet.strip())
    return text.count("\n", 0, offset) + 1 if offset >= 0 else 0


def _registered_op(decorator: Any, names: set[str]) -> str | None:
    """``torch.ops.aten.add.Tensor`` → ``aten.add.Tensor`` when ``decorator`` registers a converter."""
    import libcst as cst

    if not isinstance(decorator, cst.Call) or len(decorator.args) != 1:
        return None
    called = _dotted(decorator.func)
    if called not in names and called.rsplit(".", 1)[-1] != _DECORATOR:
        return None
    target = _dotted(decorator.args[0].value)
    if not target:
        return None
    return target[len("torch.ops.") :] if target.startswith("torch.ops.") else target


def _dotted(node: Any) -> str:
    import libcst as cst

    if isinstance(node, cst.Name):
        return node.value
    if isinstance(node, cst.Attribute):
        base = _dotted(node.value)
        return f"{base}.{node.attr.value}" if base else ""
    return ""


def _status(function_source: str) -> Status:
    """fx_summary's judgement: does the source raise NotImplementedError, does it return?"""
    raises = "raise NotImplementedError" in function_source
    returns = "return " in function_source
    if raises and returns:
        return "partly"
    if raises:
        return "not implemented"
    return "implemented" if returns else "unknown"


def op_name(target: Any) -> str:
    """The registry's name for an FX node target: ``aten.add.Tensor``, ``operator.add``."""
    if type(target).__name__ == "OpOverload":
        return str(target)
    module = getattr(target, "__module__", None) or ""
    name = getattr(target, "__name__", str(target))
    module = {"_operator": "operator"}.get(module, module)
    return f"{module}.{name}" if module else name


def registry_rows(registry: Registry, ops: Iterable[str] | None = None) -> list[dict[str, Any]]:
    """One row per op, for ``graphlint ops``: op, status, where the converter is."""
    names = sorted(registry) if ops is None else list(ops)
    rows = []
    for name in names:
        converter = registry.get(name)
        rows.append(
            {
                "op": name,
                "status": converter.status if converter else "missing",
                "converter": f"{converter.file}:{converter.line}" if converter else None,
            }
        )
    return rows
