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
from collections.abc import Iterable
from dataclasses import asdict, dataclass
from pathlib import Path
from typing import Any, Literal

from graphlint.tracer.torchair.locate import TorchNpuSource

Status = Literal["implemented", "partly", "not implemented", "unknown", "missing"]
STATUSES: tuple[Status, ...] = ("implemented", "partly", "not implemented", "unknown", "missing")
_DECORATOR = "register_fx_node_ge_converter"
_CACHE_FORMAT = 1


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
        cache.write_text(json.dumps(payload), encoding="utf-8")
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
    from libcst.metadata import MetadataWrapper, PositionProvider

    try:
        module = cst.parse_module(text)
    except cst.ParserSyntaxError:
        return []
    wrapper = MetadataWrapper(module, unsafe_skip_copy=True)
    positions = wrapper.resolve(PositionProvider)
    found: list[Converter] = []

    class Visitor(cst.CSTVisitor):
        def visit_FunctionDef(self, node: cst.FunctionDef) -> None:
            ops = [op for d in node.decorators if (op := _registered_op(d.decorator)) is not None]
            if not ops:
                return
            status = _status(module.code_for_node(node))
            line = positions[node].start.line
            found.extend(Converter(op, status, relpath, line) for op in ops)

    wrapper.module.visit(Visitor())
    return found


def _registered_op(decorator: Any) -> str | None:
    import libcst as cst

    if not isinstance(decorator, cst.Call) or len(decorator.args) != 1:
        return None
    if _dotted(decorator.func).rsplit(".", 1)[-1] != _DECORATOR:
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
